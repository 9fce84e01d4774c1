// The SCIM endpoints: discovery without a token, Users and Bulk with the
// service's own bearer tokens, each parsing its request, calling the same
// domain functions as the v2 API and writing the SCIM answer.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Ctx } from "../../domain/context.js";
import { type IdempotentAnswer, idempotently, parseIdempotencyKey } from "../../domain/idempotency.js";
import { createScimUser, deleteScimUser, getScimUser, listScimUsers, replaceScimUser } from "../../domain/identity/scim-users.js";
import { noteScimBulk } from "../metrics.js";
import { runBulk } from "./bulk.js";
import { SCIM_CONTENT_TYPE, ScimError } from "./errors.js";
import { type Exchange, header, intParam, send, strParam } from "./exchange.js";
import { parseFilter } from "./filter.js";
import { PATCH_URN } from "./patch.js";
import { project, projection } from "./projection.js";
import { compileFilter, compileSort } from "./query.js";
import { patchUser, readJson, requireSchema } from "./request.js";
import { canonicalDoc, location, toInput, toResource, USER_URN } from "./resource.js";
import { BULK_MAX_PAYLOAD, listResponse, MAX_RESULTS, serviceProviderConfig, userResourceType, userSchema } from "./schemas.js";

export const SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

export type Handler = (x: Exchange) => Promise<void> | void;
/** Endpoint (lower-cased path after the organization, `:id` for a resource id) → method → handler. */
export type Routes = Record<string, Record<string, Handler>>;

/** The authenticated call context of a request. */
export type CtxOf = (x: Exchange) => Promise<Ctx>;

const body = (x: Exchange) => readJson(x.req as IncomingMessage, BULK_MAX_PAYLOAD);

/** A user resource as answered to a request, with the request's attribute projection. */
const resource = (x: Exchange, user: Parameters<typeof toResource>[0]) => project(toResource(user, x.base), projection(x.query));

/** A create's answer as recorded for its Idempotency-Key, marked when it is given again. */
function sendAnswer(x: Exchange, a: IdempotentAnswer, replayed: boolean): void {
  x.res.writeHead(a.status, {
    ...a.headers,
    ...(replayed ? { "idempotent-replayed": "true" } : {}),
    "cache-control": "no-store",
    "content-type": SCIM_CONTENT_TYPE,
    "content-length": String(a.body.length),
  });
  (x.res as ServerResponse).end(Buffer.from(a.body));
}

/** GET /Users and POST /Users/.search: `q` is the query string or the SearchRequest body. */
async function list(ctx: Ctx, x: Exchange, q: Record<string, unknown>): Promise<void> {
  const filter = strParam(q.filter, "filter");
  const query = filter?.trim() ? compileFilter(parseFilter(filter), { provisionerId: ctx.principal.userId }) : undefined;
  const sort = compileSort(strParam(q.sortBy, "sortBy"), strParam(q.sortOrder, "sortOrder"));
  const startIndex = Math.max(1, intParam(q.startIndex, "startIndex") ?? 1);
  if (startIndex > 2 ** 31 - 1) throw new ScimError(400, "invalidValue", "Errors.Scim.startIndex.Invalid", "startIndex is too large");
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
}

/** Discovery (RFC 7644 §4): served without a token. */
function discoveryRoutes(): Routes {
  return {
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
  };
}

/** Users and Bulk: each authenticates before it reads a body, so no token is 401 whatever the request sends. */
function userRoutes(ctxOf: CtxOf): Routes {
  return {
    users: {
      GET: async (x) => list(await ctxOf(x), x, x.query),
      POST: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, USER_URN);
        const key = parseIdempotencyKey(header(x.req, "idempotency-key"));
        if (key === undefined) {
          const user = await createScimUser(ctx, x.orgId, toInput(canonicalDoc(doc)));
          send(x, 201, resource(x, user), { location: location(x.base, user.id) });
          return;
        }
        // The answer depends on the organization and the projection asked for as well as on the body.
        const operation = `scim:POST:${x.orgId}/Users?${JSON.stringify(projection(x.query))}`;
        const { answer, replayed } = await idempotently(ctx, key, operation, Buffer.from(JSON.stringify(doc)), async (c) => {
          const user = await createScimUser(c, x.orgId, toInput(canonicalDoc(doc)));
          return { status: 201, headers: { location: location(x.base, user.id) }, body: Buffer.from(JSON.stringify(resource(x, user))) };
        });
        sendAnswer(x, answer, replayed);
      },
    },
    "users/.search": {
      POST: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, SEARCH_URN);
        await list(ctx, x, doc);
      },
    },
    "users/:id": {
      GET: async (x) => {
        const ctx = await ctxOf(x);
        send(x, 200, resource(x, await getScimUser(ctx, x.orgId, x.id)));
      },
      PUT: async (x) => {
        const ctx = await ctxOf(x);
        const doc = await body(x);
        requireSchema(doc, USER_URN);
        send(x, 200, resource(x, await replaceScimUser(ctx, x.orgId, x.id, toInput(canonicalDoc(doc)))));
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
        else send(x, 200, resource(x, user));
      },
      DELETE: async (x) => {
        await deleteScimUser(await ctxOf(x), x.orgId, x.id);
        send(x, 204);
      },
    },
    bulk: {
      POST: async (x) => {
        const ctx = await ctxOf(x);
        const request = await body(x);
        const answer = await runBulk(ctx, x.orgId, request, x.base);
        const ops = Array.isArray(request.Operations) ? (request.Operations as { path?: unknown }[]) : [];
        noteScimBulk(
          x.req,
          answer.Operations.map((r, i) => ({ method: r.method, path: String(ops[i]?.path ?? ""), status: r.status })),
        );
        send(x, 200, answer);
      },
    },
  };
}

export function scimRoutes(ctxOf: CtxOf): Routes {
  return { ...discoveryRoutes(), ...userRoutes(ctxOf) };
}
