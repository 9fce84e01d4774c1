// SCIM 2.0 (RFC 7644) at /scim/v2/{orgId}: the endpoints are in routes.ts,
// this routes a request to them and maps every error once (errors.ts).
//
// Served on Node's request and response directly, HTTP/1.1 and HTTP/2 alike:
// SCIM is the hottest HTTP surface (provisioners sync whole directories) and
// the same routes behind an Express 5 router answered fewer requests per
// second (GET and create, measured for issue 10); Express 5 also does not take
// HTTP/2's compatibility request objects. Routing keeps Express's rules:
// endpoint names case-insensitive, one trailing slash ignored, HEAD answered
// like GET.
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import type { Clock, Ctx } from "../../domain/context.js";
import type { FailureLimits } from "../../domain/limits.js";
import { requestContext } from "../../domain/request-context.js";
import { ScimError, toScimError } from "./errors.js";
import { acceptable, type Exchange, header, type Req, type Res, requestOrigin, send } from "./exchange.js";
import { type Handler, type Routes, scimRoutes } from "./routes.js";

export interface ScimDeps {
  store: Ctx["store"];
  /** The bearer token's principal (bound to the token runtime by the composition root). */
  authenticate: (authorization: string | null, now: Date, peer?: string) => Promise<Ctx["principal"]>;
  limits?: FailureLimits;
  instanceId: string;
  clock: Clock;
  log: Logger;
  /** The public base URL (SVC_EXTERNAL_URL) when configured: meta.location and Location are built on it rather than on the request's Host. */
  externalUrl?: string;
}

const SCIM_PREFIX = "/scim/v2/";

const invalidRequest = () => new ScimError(400, undefined, "Errors.Scim.Request", "the request is malformed");
const noEndpoint = () => new ScimError(404, undefined, "Errors.Scim.Endpoint.NotFound", "no such SCIM endpoint");

/** The call context of a request, built once: the bearer token's principal and the service's dependencies. */
function contextOf(deps: ScimDeps) {
  return async (x: Exchange): Promise<Ctx> => {
    const peer = x.req.socket?.remoteAddress;
    const principal = await deps.authenticate(header(x.req, "authorization") ?? null, deps.clock(), peer);
    const services = { limits: deps.limits, store: deps.store, instanceId: deps.instanceId, clock: deps.clock, log: deps.log };
    return requestContext(services, principal, { requestId: header(x.req, "x-request-id") ?? "", peer });
  };
}

/** The handler of `x`'s path and method (its organization and resource id filled in), or the error to answer. */
function route(routes: Routes, x: Exchange, path: string, externalUrl: string | undefined): Handler {
  if (path.endsWith("/")) path = path.slice(0, -1);
  let decoded: string[];
  try {
    decoded = path.split("/").map((s) => decodeURIComponent(s));
  } catch {
    throw invalidRequest();
  }
  const [orgId, name, id, ...extra] = decoded;
  if (!orgId || !name || extra.length || id === "") throw noEndpoint();
  const lower = name.toLowerCase();
  const key = `${lower}${id === undefined ? "" : id.toLowerCase() === ".search" && lower === "users" ? "/.search" : "/:id"}`;
  const handler = routes[key]?.[x.head ? "GET" : (x.req.method ?? "")];
  if (!handler) throw noEndpoint();
  x.orgId = orgId;
  x.id = id ?? "";
  x.base = `${externalUrl ?? requestOrigin(x.req)}${SCIM_PREFIX}${encodeURIComponent(orgId)}`;
  if (!acceptable(x.req)) throw new ScimError(406, undefined, "Errors.Scim.Accept", "responses are application/scim+json");
  return handler;
}

/** Any error as a SCIM Error answer; a response already under way is cut off instead. */
function fail(x: Exchange, err: unknown, log: Logger): void {
  const e = toScimError(err, log, String(x.res.getHeader("x-request-id") ?? ""));
  // A body left unread (an early error) must not be taken for the next request on this connection.
  if (!x.req.readableEnded) x.req.resume();
  if (x.res.headersSent) {
    x.res.destroy();
    return;
  }
  send(x, e.status, e.body, e.headers);
}

/**
 * The SCIM handler: `handle(req, res)` answers a request whose path starts
 * with /scim/v2/ (match with isScimPath first).
 */
export function createScimHandler(deps: ScimDeps): (req: Req, res: Res) => Promise<void> {
  const routes = scimRoutes(contextOf(deps));
  return async (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const x: Exchange = {
      req,
      res,
      orgId: "",
      id: "",
      query: q < 0 ? {} : (parseQuery(url.slice(q + 1)) as Record<string, unknown>),
      base: "",
      head: req.method === "HEAD",
    };
    try {
      await route(routes, x, (q < 0 ? url : url.slice(0, q)).slice(SCIM_PREFIX.length), deps.externalUrl)(x);
    } catch (err) {
      fail(x, err, deps.log);
    }
  };
}

/** Whether the request is for SCIM (Express matched the mount point case-insensitively). */
export function isScimPath(url: string | undefined): boolean {
  return url !== undefined && url.length > SCIM_PREFIX.length && url.slice(0, SCIM_PREFIX.length).toLowerCase() === SCIM_PREFIX;
}
