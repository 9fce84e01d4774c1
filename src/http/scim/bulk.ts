// Bulk (RFC 7644 §3.7): POST/PUT/PATCH/DELETE on /Users, each operation
// atomic on its own and checked with its own permission; `bulkId:<id>`
// refers to a user created earlier in the same request; failOnErrors stops
// after that many failures.

import type { Ctx } from "../../domain/context.js";
import { createScimUser, deleteScimUser, replaceScimUser, requireOrgMembership } from "../../domain/identity/scim-users.js";
import { afterUserWrites } from "../../domain/identity/write-bursts.js";
import { ScimError, toScimError } from "./errors.js";
import { PATCH_URN } from "./patch.js";
import { patchUser, requireSchema } from "./request.js";
import { canonicalDoc, location, toInput, USER_URN } from "./resource.js";
import { BULK_MAX_OPERATIONS } from "./schemas.js";

export const BULK_REQUEST_URN = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
export const BULK_RESPONSE_URN = "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

export interface BulkResult {
  method: string;
  bulkId?: string;
  location?: string;
  status: string;
  response?: unknown;
}

const invalid = (detail: string) => new ScimError(400, "invalidValue", "Errors.Scim.Bulk.Operation", detail);

/** Operations, limit and failOnErrors of a BulkRequest body. */
function bulkRequest(body: Record<string, unknown>): { ops: unknown[]; failOnErrors: number } {
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
  return { ops, failOnErrors };
}

interface Operation {
  method: string;
  path: string;
  bulkId?: string;
  data: unknown;
}

/** One request's operations: the users its POSTs created, by bulkId. */
interface BulkRun {
  ctx: Ctx;
  orgId: string;
  base: string;
  created: Map<string, string>;
  seen: Set<string>;
}

function object(op: Operation, urn: string): Record<string, unknown> {
  const data = op.data;
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw invalid("data must be an object");
  requireSchema(data as Record<string, unknown>, urn);
  return data as Record<string, unknown>;
}

async function create(run: BulkRun, op: Operation, result: BulkResult): Promise<void> {
  if (op.path !== "/Users") throw invalid("POST operations go to /Users");
  const bulkId = op.bulkId;
  if (!bulkId) throw invalid("POST operations need a bulkId");
  // RFC 7644 §3.7: a bulkId is unique within the request; a second one could not be referred to.
  if (run.seen.has(bulkId)) throw invalid(`bulkId '${bulkId}' is used twice in this request`);
  run.seen.add(bulkId);
  const user = await createScimUser(run.ctx, run.orgId, toInput(canonicalDoc(object(op, USER_URN))));
  run.created.set(bulkId, user.id);
  result.location = location(run.base, user.id);
  result.status = "201";
}

/** The user a PUT, PATCH or DELETE path names: an id, or `bulkId:<id>` of a user created earlier in the request. */
function target(run: BulkRun, op: Operation): string {
  const m = /^\/Users\/(.+)$/.exec(op.path);
  if (!m) throw invalid(`${op.method} operations go to /Users/{id}`);
  let id: string;
  try {
    id = decodeURIComponent(m[1] as string);
  } catch {
    throw invalid(`'${op.path}' is not a valid path`);
  }
  if (!id.startsWith("bulkId:")) return id;
  const ref = run.created.get(id.slice("bulkId:".length));
  if (!ref) throw new ScimError(409, "invalidValue", "Errors.Scim.Bulk.UnknownBulkId", `${id} does not name a user created earlier in this request`);
  return ref;
}

async function change(run: BulkRun, op: Operation, result: BulkResult): Promise<void> {
  const id = target(run, op);
  result.location = location(run.base, id);
  if (op.method === "DELETE") {
    await deleteScimUser(run.ctx, run.orgId, id);
    result.status = "204";
  } else if (op.method === "PUT") {
    await replaceScimUser(run.ctx, run.orgId, id, toInput(canonicalDoc(object(op, USER_URN))));
    result.status = "200";
  } else {
    await patchUser(run.ctx, run.orgId, id, object(op, PATCH_URN).Operations);
    result.status = "200";
  }
}

/** One operation, atomic on its own: its result, an error included. */
async function runOne(run: BulkRun, raw: unknown): Promise<{ result: BulkResult; failed: boolean }> {
  const o = (typeof raw === "object" && raw !== null ? raw : {}) as { method?: unknown; path?: unknown; bulkId?: unknown; data?: unknown };
  const op: Operation = {
    method: typeof o.method === "string" ? o.method.toUpperCase() : String(o.method),
    path: typeof o.path === "string" ? o.path : "",
    ...(typeof o.bulkId === "string" ? { bulkId: o.bulkId } : {}),
    data: o.data,
  };
  const result: BulkResult = { method: op.method, ...(op.bulkId !== undefined ? { bulkId: op.bulkId } : {}), status: "" };
  try {
    if (op.method === "POST") await create(run, op, result);
    else if (op.method === "PUT" || op.method === "PATCH" || op.method === "DELETE") await change(run, op, result);
    else throw invalid(`unsupported method '${op.method}'`);
    return { result, failed: false };
  } catch (err) {
    const e = toScimError(err, run.ctx.log, run.ctx.requestId);
    result.status = String(e.status);
    result.response = e.body;
    return { result, failed: true };
  }
}

export async function runBulk(ctx: Ctx, orgId: string, body: Record<string, unknown>, base: string): Promise<{ schemas: string[]; Operations: BulkResult[] }> {
  requireOrgMembership(ctx, orgId);
  const { ops, failOnErrors } = bulkRequest(body);
  const run: BulkRun = { ctx, orgId, base, created: new Map(), seen: new Set() };
  const results: BulkResult[] = [];
  let errors = 0;
  for (const raw of ops) {
    const { result, failed } = await runOne(run, raw);
    results.push(result);
    if (failed) errors++;
    if (errors >= failOnErrors) break;
  }
  afterUserWrites(ctx, results.length - errors);
  return { schemas: [BULK_RESPONSE_URN], Operations: results };
}
