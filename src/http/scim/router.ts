// SCIM 2.0 (RFC 7644) at /scim/v2/{orgId}: discovery without a token, Users
// and Bulk with the service's own bearer tokens. Translates the wire format
// onto the same domain functions as the v2 API (src/domain/scim-users.ts).
import type { IncomingMessage } from "node:http";
import express, { type Request, type Response, type Router } from "express";
import type { Logger } from "pino";
import { authenticate } from "../../domain/authn.js";
import type { Clock, Ctx } from "../../domain/context.js";
import { createScimUser, deleteScimUser, getScimUser, listScimUsers, replaceScimUser } from "../../domain/scim-users.js";
import type { PrismaClient } from "../../store/db.js";
import { runBulk } from "./bulk.js";
import { SCIM_CONTENT_TYPE, ScimError, sendScimError } from "./errors.js";
import { compileFilter, compileSort, parseFilter } from "./filter.js";
import { PATCH_URN } from "./patch.js";
import { patchUser, readJson, requireSchema } from "./request.js";
import { canonicalDoc, location, type ScimDoc, toInput, toResource, USER_URN } from "./resource.js";
import { BULK_MAX_PAYLOAD, listResponse, MAX_RESULTS, serviceProviderConfig, userResourceType, userSchema } from "./schemas.js";

export const SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

export interface ScimDeps {
  db: PrismaClient;
  instanceId: string;
  clock: Clock;
  log: Logger;
}

const invalidValue = (detail: string, id: string) => new ScimError(400, "invalidValue", id, detail);

/** The absolute `/scim/v2/{orgId}` URL of this request (for meta.location and Location). */
function baseUrl(req: Request): string {
  return `${req.protocol}://${req.get("host")}/scim/v2/${encodeURIComponent(req.params.orgId as string)}`;
}

function send(res: Response, status: number, body?: unknown): void {
  res.status(status);
  if (body === undefined) {
    res.end();
    return;
  }
  res.set("content-type", SCIM_CONTENT_TYPE).send(JSON.stringify(body));
}

/** RFC 7644 §3.1/§8.1: SCIM speaks application/scim+json and accepts application/json. */
function acceptable(req: IncomingMessage): boolean {
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
        if (!subs.length) continue;
        const pick = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([sk]) => subs.includes(sk.toLowerCase())));
        out[k] = Array.isArray(v) ? v.map((e) => pick(e as Record<string, unknown>)) : pick(v as Record<string, unknown>);
      }
    }
    return out;
  }
  if (p.excludedAttributes?.length) {
    const dropped = norm(p.excludedAttributes);
    const out: ScimDoc = {};
    for (const [k, v] of Object.entries(resource)) if (ALWAYS.has(k) || !dropped.includes(k.toLowerCase())) out[k] = v;
    return out;
  }
  return resource;
}

function projection(q: Record<string, unknown>): Projection {
  return { attributes: listParam(q.attributes, "attributes"), excludedAttributes: listParam(q.excludedAttributes, "excludedAttributes") };
}

export function createScimRouter(deps: ScimDeps): Router {
  const router = express.Router({ mergeParams: true });

  const ctxOf = async (req: Request): Promise<Ctx> => {
    const principal = await authenticate(deps.db, deps.instanceId, req.headers.authorization, deps.clock());
    return { db: deps.db, instanceId: deps.instanceId, principal, clock: deps.clock, log: deps.log, requestId: String(req.headers["x-request-id"] ?? "") };
  };
  const orgOf = (req: Request) => req.params.orgId as string;

  /** Wraps a handler: content negotiation, SCIM errors, never an Express 500 page. */
  const handle =
    (fn: (req: Request, res: Response) => Promise<void> | void) =>
    async (req: Request, res: Response): Promise<void> => {
      try {
        if (!acceptable(req)) throw new ScimError(406, undefined, "Errors.Scim.Accept", "responses are application/scim+json");
        await fn(req, res);
      } catch (err) {
        sendScimError(res, err, deps.log);
      }
    };

  router.get(
    "/ServiceProviderConfig",
    handle((req, res) => send(res, 200, serviceProviderConfig(baseUrl(req)))),
  );
  router.get(
    "/Schemas",
    handle((req, res) => send(res, 200, listResponse([userSchema(baseUrl(req))], 1, 1))),
  );
  router.get(
    "/Schemas/:id",
    handle((req, res) => {
      if (req.params.id !== USER_URN) throw new ScimError(404, "noTarget", "Errors.Scim.Schema.NotFound", "unknown schema");
      send(res, 200, userSchema(baseUrl(req)));
    }),
  );
  router.get(
    "/ResourceTypes",
    handle((req, res) => send(res, 200, listResponse([userResourceType(baseUrl(req))], 1, 1))),
  );
  router.get(
    "/ResourceTypes/:name",
    handle((req, res) => {
      if (req.params.name !== "User") throw new ScimError(404, "noTarget", "Errors.Scim.ResourceType.NotFound", "unknown resource type");
      send(res, 200, userResourceType(baseUrl(req)));
    }),
  );

  const list = async (req: Request, res: Response, q: Record<string, unknown>) => {
    const ctx = await ctxOf(req);
    const filter = strParam(q.filter, "filter");
    const where = filter?.trim() ? compileFilter(parseFilter(filter), { provisionerId: ctx.principal.userId }) : undefined;
    const orderBy = compileSort(strParam(q.sortBy, "sortBy"), strParam(q.sortOrder, "sortOrder"));
    const startIndex = Math.max(1, intParam(q.startIndex, "startIndex") ?? 1);
    if (startIndex > 2 ** 31 - 1) throw invalidValue("startIndex is too large", "Errors.Scim.startIndex.Invalid");
    // RFC 7644 §3.4.2.4: a negative count is 0; a count above filter.maxResults is
    // clamped to it (the service "MAY return fewer results than requested"), and
    // itemsPerPage tells the client how many it got. Rejecting would break
    // clients that ask for large pages and page on until totalResults.
    const count = Math.min(MAX_RESULTS, Math.max(0, intParam(q.count, "count") ?? MAX_RESULTS));
    const { total, users } = await listScimUsers(ctx, orgOf(req), { where, orderBy, skip: startIndex - 1, take: count });
    const base = baseUrl(req);
    const p = projection(q);
    send(
      res,
      200,
      listResponse(
        users.map((u) => project(toResource(u, base), p)),
        total,
        startIndex,
      ),
    );
  };

  router.get(
    "/Users",
    handle((req, res) => list(req, res, req.query as Record<string, unknown>)),
  );
  router.post(
    "/Users/.search",
    handle(async (req, res) => {
      const body = await readJson(req, BULK_MAX_PAYLOAD);
      requireSchema(body, SEARCH_URN);
      await list(req, res, body);
    }),
  );

  router.post(
    "/Users",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      const body = await readJson(req, BULK_MAX_PAYLOAD);
      requireSchema(body, USER_URN);
      const user = await createScimUser(ctx, orgOf(req), toInput(canonicalDoc(body)));
      const base = baseUrl(req);
      res.set("location", location(base, user.id));
      send(res, 201, project(toResource(user, base), projection(req.query as Record<string, unknown>)));
    }),
  );

  router.get(
    "/Users/:id",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      const user = await getScimUser(ctx, orgOf(req), req.params.id as string);
      send(res, 200, project(toResource(user, baseUrl(req)), projection(req.query as Record<string, unknown>)));
    }),
  );

  router.put(
    "/Users/:id",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      const body = await readJson(req, BULK_MAX_PAYLOAD);
      requireSchema(body, USER_URN);
      const user = await replaceScimUser(ctx, orgOf(req), req.params.id as string, toInput(canonicalDoc(body)));
      send(res, 200, project(toResource(user, baseUrl(req)), projection(req.query as Record<string, unknown>)));
    }),
  );

  router.patch(
    "/Users/:id",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      const body = await readJson(req, BULK_MAX_PAYLOAD);
      requireSchema(body, PATCH_URN);
      const user = await patchUser(ctx, orgOf(req), req.params.id as string, body.Operations);
      const q = req.query as Record<string, unknown>;
      // RFC 7644 §3.5.2: 200 with the resource, always when `attributes` is asked for;
      // 204 only when the client prefers a minimal answer (RFC 7240).
      const minimal = /\breturn=minimal\b/i.test(req.get("prefer") ?? "") && q.attributes === undefined;
      if (minimal) send(res, 204);
      else send(res, 200, project(toResource(user, baseUrl(req)), projection(q)));
    }),
  );

  router.delete(
    "/Users/:id",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      await deleteScimUser(ctx, orgOf(req), req.params.id as string);
      send(res, 204);
    }),
  );

  router.post(
    "/Bulk",
    handle(async (req, res) => {
      const ctx = await ctxOf(req);
      const body = await readJson(req, BULK_MAX_PAYLOAD);
      send(res, 200, await runBulk(ctx, orgOf(req), body, baseUrl(req)));
    }),
  );

  router.use(
    handle(() => {
      throw new ScimError(404, undefined, "Errors.Scim.Endpoint.NotFound", "no such SCIM endpoint");
    }),
  );
  // Errors Express raises before a handler runs (e.g. a path segment that is not valid percent-encoding).
  router.use((err: unknown, _req: Request, res: Response, _next: express.NextFunction) => {
    const status = (err as { status?: number })?.status;
    sendScimError(
      res,
      status && status >= 400 && status < 500 ? new ScimError(status, undefined, "Errors.Scim.Request", "the request is malformed") : err,
      deps.log,
    );
  });
  return router;
}
