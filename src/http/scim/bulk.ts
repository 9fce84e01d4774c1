// Bulk (RFC 7644 §3.7): POST/PUT/PATCH/DELETE on /Users, each operation
// atomic on its own and checked with its own permission; `bulkId:<id>`
// refers to a user created earlier in the same request; failOnErrors stops
// after that many failures.
import type { Ctx } from "../../domain/context.js";
import { createScimUser, deleteScimUser, replaceScimUser, requireOrgMembership } from "../../domain/identity/scim-users.js";
import { ScimError, toScimError } from "./errors.js";
import { PATCH_URN } from "./patch.js";
import { patchUser, requireSchema } from "./request.js";
import { canonicalDoc, location, toInput } from "./resource.js";
import { BULK_MAX_OPERATIONS } from "./schemas.js";

export const BULK_REQUEST_URN = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
export const BULK_RESPONSE_URN = "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

interface BulkResult {
  method: string;
  bulkId?: string;
  location?: string;
  status: string;
  response?: unknown;
}

const invalid = (detail: string) => new ScimError(400, "invalidValue", "Errors.Scim.Bulk.Operation", detail);

export async function runBulk(ctx: Ctx, orgId: string, body: Record<string, unknown>, base: string): Promise<unknown> {
  requireOrgMembership(ctx, orgId);
  requireSchema(body, BULK_REQUEST_URN);
  const ops = body.Operations;
  if (!Array.isArray(ops)) throw new ScimError(400, "invalidSyntax", "Errors.Scim.Bulk.Operations", "Operations must be an array");
  if (ops.length > BULK_MAX_OPERATIONS) {
    throw new ScimError(413, undefined, "Errors.Scim.Bulk.TooMany", `a bulk request has at most ${BULK_MAX_OPERATIONS} operations`);
  }
  let failOnErrors = Number.POSITIVE_INFINITY;
  if (body.failOnErrors !== undefined) {
    if (!Number.isSafeInteger(body.failOnErrors) || (body.failOnErrors as number) < 1) {
      throw new ScimError(400, "invalidValue", "Errors.Scim.Bulk.FailOnErrors", "failOnErrors must be a positive integer");
    }
    failOnErrors = body.failOnErrors as number;
  }
  const created = new Map<string, string>();
  const seen = new Set<string>();
  const results: BulkResult[] = [];
  let errors = 0;
  for (const raw of ops) {
    const op = (typeof raw === "object" && raw !== null ? raw : {}) as { method?: unknown; path?: unknown; bulkId?: unknown; data?: unknown };
    const method = typeof op.method === "string" ? op.method.toUpperCase() : String(op.method);
    const bulkId = typeof op.bulkId === "string" ? op.bulkId : undefined;
    const result: BulkResult = { method, ...(bulkId !== undefined ? { bulkId } : {}), status: "" };
    try {
      const path = typeof op.path === "string" ? op.path : "";
      const data = op.data;
      const object = () => {
        if (typeof data !== "object" || data === null || Array.isArray(data)) throw invalid("data must be an object");
        return data as Record<string, unknown>;
      };
      if (method === "POST") {
        if (path !== "/Users") throw invalid("POST operations go to /Users");
        if (!bulkId) throw invalid("POST operations need a bulkId");
        // RFC 7644 §3.7: a bulkId is unique within the request; a second one could not be referred to.
        if (seen.has(bulkId)) throw invalid(`bulkId '${bulkId}' is used twice in this request`);
        seen.add(bulkId);
        const d = object();
        requireSchema(d, "urn:ietf:params:scim:schemas:core:2.0:User");
        const user = await createScimUser(ctx, orgId, toInput(canonicalDoc(d)));
        created.set(bulkId, user.id);
        result.location = location(base, user.id);
        result.status = "201";
      } else if (method === "PUT" || method === "PATCH" || method === "DELETE") {
        const m = /^\/Users\/(.+)$/.exec(path);
        if (!m) throw invalid(`${method} operations go to /Users/{id}`);
        let id: string;
        try {
          id = decodeURIComponent(m[1] as string);
        } catch {
          throw invalid(`'${path}' is not a valid path`);
        }
        if (id.startsWith("bulkId:")) {
          const ref = created.get(id.slice("bulkId:".length));
          if (!ref) throw new ScimError(409, "invalidValue", "Errors.Scim.Bulk.UnknownBulkId", `${id} does not name a user created earlier in this request`);
          id = ref;
        }
        result.location = location(base, id);
        if (method === "DELETE") {
          await deleteScimUser(ctx, orgId, id);
          result.status = "204";
        } else if (method === "PUT") {
          const d = object();
          requireSchema(d, "urn:ietf:params:scim:schemas:core:2.0:User");
          await replaceScimUser(ctx, orgId, id, toInput(canonicalDoc(d)));
          result.status = "200";
        } else {
          const d = object();
          requireSchema(d, PATCH_URN);
          await patchUser(ctx, orgId, id, d.Operations);
          result.status = "200";
        }
      } else {
        throw invalid(`unsupported method '${method}'`);
      }
    } catch (err) {
      const e = toScimError(err, ctx.log, ctx.requestId);
      result.status = String(e.status);
      result.response = e.body;
      errors++;
    }
    results.push(result);
    if (errors >= failOnErrors) break;
  }
  return { schemas: [BULK_RESPONSE_URN], Operations: results };
}
