// SCIM 2.0 (RFC 7644) at /scim/v2/{orgId}: discovery without a token, Users
// and Bulk with the service's own bearer tokens. Translates the wire format
// onto the same domain functions as the v2 API (src/domain/scim-users.ts).
//
// Served on Node's request and response directly, HTTP/1.1 and HTTP/2 alike:
// SCIM is the hottest HTTP surface (provisioners sync whole directories) and
// Express's per-request routing cost about as much CPU as a GET's database
// work. Routing keeps Express's rules: endpoint names case-insensitive, one
// trailing slash ignored, HEAD answered like GET.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import type { Clock, Ctx } from "../../domain/context.js";
import { createScimUser, deleteScimUser, getScimUser, listScimUsers, replaceScimUser } from "../../domain/identity/scim-users.js";
import { authenticate } from "../../domain/oauth/authn.js";
import type { PrismaClient } from "../../store/db.js";
import type { Store } from "../../store/index.js";
import { runBulk } from "./bulk.js";
import { SCIM_CONTENT_TYPE, ScimError, toScimError } from "./errors.js";
import { parseFilter } from "./filter.js";
import { PATCH_URN } from "./patch.js";
import { compileFilter, compileSort } from "./query.js";
import { patchUser, readJson, requireSchema } from "./request.js";
import { canonicalDoc, location, type ScimDoc, toInput, toResource, USER_URN } from "./resource.js";
import { BULK_MAX_PAYLOAD, listResponse, MAX_RESULTS, serviceProviderConfig, userResourceType, userSchema } from "./schemas.js";

export const SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

/** The scheme and authority the request was sent to, when no public URL is configured. */
function requestOrigin(req: Req): string {
  const host = header(req, "host") ?? header(req, ":authority") ?? "localhost";
  const proto = (req.socket as { encrypted?: boolean } | undefined)?.encrypted ? "https" : "http";
  return `${proto}://${host}`;
}

export interface ScimDeps {
  store: Store;
  db: PrismaClient;
  instanceId: string;
  clock: Clock;
  log: Logger;
  /** The public base URL (SVC_EXTERNAL_URL) when configured: meta.location and Location are built on it rather than on the request's Host. */
  externalUrl?: string;
}

const invalidValue = (detail: string, id: string) => new ScimError(400, "invalidValue", id, detail);

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** One request on its way through: the path's organization and resource id, the query, the absolute base URL. */
interface Exchange {
  req: Req;
  res: Res;
  orgId: string;
  id: string;
  query: Record<string, unknown>;
  /** The absolute `/scim/v2/{orgId}` URL of this request (for meta.location and Location). */
  base: string;
  head: boolean;
}

function send(x: Exchange, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  if (body === undefined) {
    x.res.writeHead(status, headers);
    x.res.end();
    return;
  }
  const json = JSON.stringify(body);
  x.res.writeHead(status, { ...headers, "content-type": SCIM_CONTENT_TYPE, "content-length": String(Buffer.byteLength(json)) });
  // HEAD: the headers of the GET, no body.
  if (x.head) x.res.end();
  else (x.res as ServerResponse).end(json);
}

function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** RFC 7644 §3.1/§8.1: SCIM speaks application/scim+json and accepts application/json. */
function acceptable(req: Req): boolean {
  const accept = req.headers.accept;
  if (!accept) return true;
  return accept.split(",").some((part) => {
    const type = (part.split(";")[0] ?? "").trim().toLowerCase();
    return type === "application/scim+json" || type === "application/json" || type === "application/*" || type === "*/*";
  });
}

function intParam(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw invalidValue(`${name} must be an integer`, `Errors.Scim.${name}.Invalid`);
  return n;
}

function strParam(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalidValue(`${name} must be a string`, `Errors.Scim.${name}.Invalid`);
  return v;
}

function listParam(v: unknown, name: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const raw = Array.isArray(v) ? v.join(",") : strParam(v, name);
  return raw
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

interface Projection {
  attributes?: string[];
  excludedAttributes?: string[];
}

const CORE_PREFIX = `${USER_URN.toLowerCase()}:`;
const ALWAYS = new Set(["schemas", "id", "meta"]);

/** attributes / excludedAttributes (RFC 7644 §3.9) over top-level attributes and one level of sub-attributes. */
function project(resource: ScimDoc, p: Projection): ScimDoc {
  const norm = (names: string[]) => names.map((n) => (n.toLowerCase().startsWith(CORE_PREFIX) ? n.slice(CORE_PREFIX.length) : n).toLowerCase());
  if (p.attributes?.length) {
    const wanted = norm(p.attributes);
    const out: ScimDoc = {};
    for (const [k, v] of Object.entries(resource)) {
      const key = k.toLowerCase();
      if (ALWAYS.has(k) || wanted.includes(key)) out[k] = v;
      else {
        const subs = wanted.filter((w) => w.startsWith(`${key}.`)).map((w) => w.slice(key.length + 1));
        if (!subs.length || typeof v !== "object" || v === null) continue;
        const pick = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([sk]) => subs.includes(sk.toLowerCase())));
        out[k] = Array.isArray(v) ? v.map((e) => pick(e as Record<string, unknown>)) : pick(v as Record<string, unknown>);
      }
    }
    return out;
  }
  if (p.excludedAttributes?.length) {
    const dropped = norm(p.excludedAttributes);
    const out: ScimDoc = {};
    for (const [k, v] of Object.entries(resource)) {
      const key = k.toLowerCase();
      if (!ALWAYS.has(k) && dropped.includes(key)) continue;
      // A sub-attribute (`name.givenName`, `emails.display`) is dropped from the complex value or from every entry.
      const subs = ALWAYS.has(k) ? [] : dropped.filter((d) => d.startsWith(`${key}.`)).map((d) => d.slice(key.length + 1));
      if (!subs.length || typeof v !== "object" || v === null) {
        out[k] = v;
        continue;
      }
      const omit = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([sk]) => !subs.includes(sk.toLowerCase())));
      out[k] = Array.isArray(v) ? v.map((e) => omit(e as Record<string, unknown>)) : omit(v as Record<string, unknown>);
    }
    return out;
  }
  return resource;
}

function projection(q: Record<string, unknown>): Projection {
  return { attributes: listParam(q.attributes, "attributes"), excludedAttributes: listParam(q.excludedAttributes, "excludedAttributes") };
}

const invalidRequest = () => new ScimError(400, undefined, "Errors.Scim.Request", "the request is malformed");
const noEndpoint = () => new ScimError(404, undefined, "Errors.Scim.Endpoint.NotFound", "no such SCIM endpoint");

/**
 * The SCIM handler: `handle(req, res)` answers a request whose path starts
 * with /scim/v2/ (match with isScimPath first).
 */
export function createScimHandler(deps: ScimDeps): (req: Req, res: Res) => Promise<void> {
  const ctxOf = async (x: Exchange): Promise<Ctx> => {
    const principal = await authenticate(deps.db, deps.instanceId, header(x.req, "authorization"), deps.clock());
    return {
      store: deps.store,
      db: deps.db,
      instanceId: deps.instanceId,
      principal,
      clock: deps.clock,
      log: deps.log,
      requestId: header(x.req, "x-request-id") ?? "",
    };
  };

  const list = async (x: Exchange, q: Record<string, unknown>, known?: Ctx) => {
    const ctx = known ?? (await ctxOf(x));
    const filter = strParam(q.filter, "filter");
    const query = filter?.trim() ? compileFilter(parseFilter(filter), { provisionerId: ctx.principal.userId }) : undefined;
    const sort = compileSort(strParam(q.sortBy, "sortBy"), strParam(q.sortOrder, "sortOrder"));
    const startIndex = Math.max(1, intParam(q.startIndex, "startIndex") ?? 1);
    if (startIndex > 2 ** 31 - 1) throw invalidValue("startIndex is too large", "Errors.Scim.startIndex.Invalid");
    // RFC 7644 §3.4.2.4: a negative count is 0; a count above filter.maxResults is
    // clamped to it (the service "MAY return fewer results than requested"), and
    // itemsPerPage tells the client how many it got. Rejecting would break
    // clients that ask for large pages and page on until totalResults.
    const count = Math.min(MAX_RESULTS, Math.max(0, intParam(q.count, "count") ?? MAX_RESULTS));
    const { total, users } = await listScimUsers(ctx, x.orgId, { query, sort, skip: startIndex - 1, take: count });
    const p = projection(q);
    send(
      x,
      200,
      listResponse(
        users.map((u) => project(toResource(u, x.base), p)),
        total,
        startIndex,
      ),
    );
  };

  const body = (x: Exchange) => readJson(x.req as IncomingMessage, BULK_MAX_PAYLOAD);

  /** Endpoint (lower-cased path after the organization, `:id` for a resource id) → method → handler. */
  const routes: Record<string, Record<string, (x: Exchange) => Promise<void> | void>> = {
    serviceproviderconfig: { GET: (x) => send(x, 200, serviceProviderConfig(x.base)) },
    schemas: { GET: (x) => send(x, 200, listResponse([userSchema(x.base)], 1, 1)) },
    "schemas/:id": {
      GET: (x) => {
        if (x.id !== USER_URN) throw new ScimError(404, "noTarget", "Errors.Scim.Schema.NotFound", "unknown schema");
        send(x, 200, userSchema(x.base));
      },
    },
    resourcetypes: { GET: (x) => send(x, 200, listResponse([userResourceType(x.base)], 1, 1)) },
    "resourcetypes/:id": {
      GET: (x) => {
        if (x.id !== "User") throw new ScimError(404, "noTarget", "Errors.Scim.ResourceType.NotFound", "unknown resource type");
        send(x, 200, userResourceType(x.base));
      },
    },
    users: {
      GET: (x) => list(x, x.query),
      POST: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, USER_URN);
        const user = await createScimUser(ctx, x.orgId, toInput(canonicalDoc(doc)));
        const loc = location(x.base, user.id);
        send(x, 201, project(toResource(user, x.base), projection(x.query)), { location: loc });
      },
    },
    "users/.search": {
      POST: async (x) => {
        // Authenticated before the body is read: no token is 401 whatever it sends.
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, SEARCH_URN);
        await list(x, doc, ctx);
      },
    },
    "users/:id": {
      GET: async (x) => {
        const ctx = await ctxOf(x);
        const user = await getScimUser(ctx, x.orgId, x.id);
        send(x, 200, project(toResource(user, x.base), projection(x.query)));
      },
      PUT: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, USER_URN);
        const user = await replaceScimUser(ctx, x.orgId, x.id, toInput(canonicalDoc(doc)));
        send(x, 200, project(toResource(user, x.base), projection(x.query)));
      },
      PATCH: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, PATCH_URN);
        const user = await patchUser(ctx, x.orgId, x.id, doc.Operations);
        // RFC 7644 §3.5.2: 200 with the resource, always when `attributes` is asked for;
        // 204 only when the client prefers a minimal answer (RFC 7240).
        const minimal = /\breturn=minimal\b/i.test(header(x.req, "prefer") ?? "") && x.query.attributes === undefined;
        if (minimal) send(x, 204);
        else send(x, 200, project(toResource(user, x.base), projection(x.query)));
      },
      DELETE: async (x) => {
        const ctx = await ctxOf(x);
        await deleteScimUser(ctx, x.orgId, x.id);
        send(x, 204);
      },
    },
    bulk: {
      POST: async (x) => {
        const ctx = await ctxOf(x);
        send(x, 200, await runBulk(ctx, x.orgId, await body(x), x.base));
      },
    },
  };

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
      let path = (q < 0 ? url : url.slice(0, q)).slice(SCIM_PREFIX.length);
      if (path.endsWith("/")) path = path.slice(0, -1);
      const segments = path.split("/");
      let decoded: string[];
      try {
        decoded = segments.map((s) => decodeURIComponent(s));
      } catch {
        throw invalidRequest();
      }
      const [orgId, name, id, ...extra] = decoded;
      if (!orgId || !name || extra.length || id === "") throw noEndpoint();
      const key = `${name.toLowerCase()}${id === undefined ? "" : id.toLowerCase() === ".search" && name.toLowerCase() === "users" ? "/.search" : "/:id"}`;
      const handlers = routes[key];
      const handler = handlers?.[x.head ? "GET" : (req.method ?? "")];
      if (!handler) throw noEndpoint();
      x.orgId = orgId;
      x.id = id ?? "";
      x.base = `${deps.externalUrl ?? requestOrigin(req)}${SCIM_PREFIX}${encodeURIComponent(orgId)}`;
      if (!acceptable(req)) throw new ScimError(406, undefined, "Errors.Scim.Accept", "responses are application/scim+json");
      await handler(x);
    } catch (err) {
      const e = toScimError(err, deps.log, String(res.getHeader("x-request-id") ?? ""));
      // A body left unread (an early error) must not be taken for the next request on this connection.
      if (!req.readableEnded) req.resume();
      if (res.headersSent) {
        res.destroy();
        return;
      }
      send(x, e.status, e.body, e.headers);
    }
  };
}

const SCIM_PREFIX = "/scim/v2/";

/** Whether the request is for SCIM (Express matched the mount point case-insensitively). */
export function isScimPath(url: string | undefined): boolean {
  return url !== undefined && url.length > SCIM_PREFIX.length && url.slice(0, SCIM_PREFIX.length).toLowerCase() === SCIM_PREFIX;
}
