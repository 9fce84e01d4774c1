// The SCIM read side of users: the full resource (profile, multi-valued rows
// and the provisioner's externalId) of one user or of a filtered, sorted page.
import type { Store } from "../../store/index.js";
import { authorize, hasAnyRoleFor, type Permission } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { orgNotFound } from "../orgs/orgs.js";
import type { ScimUserInput } from "./scim-users.js";
import type { UserQuery, UserSort } from "./user-query.js";
import { userNotFound } from "./users.js";

export interface ScimUserRecord extends Required<Omit<ScimUserInput, "password">> {
  id: string;
  orgId: string;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * The full resources of `ids` (human users of `orgId`) with the caller's
 * externalIds, in the order of `ids`, in one statement. `via` is the
 * transaction's Store when reading inside one.
 */
export function loadRecords(ctx: Ctx, orgId: string, ids: string[], via: Store = ctx.store): Promise<ScimUserRecord[]> {
  return via.scimRecords.load({ instanceId: ctx.instanceId, orgId, provisionerId: ctx.principal.userId, ids });
}

/**
 * Checks `permission` in the path's organization first (a caller without
 * membership there learns nothing, not even whether the organization exists).
 */
export function authorizeOrg(ctx: Ctx, permission: Permission, orgId: string): void {
  // An id PostgreSQL text cannot hold (a NUL, from a percent-encoded path) names no organization.
  if (orgId.includes("\u0000")) throw orgNotFound();
  authorize(ctx, permission, orgId, orgNotFound);
}

/**
 * For requests whose operations each check their own permission (Bulk): a
 * caller without membership in the organization (and no instance role)
 * learns nothing about it, the whole request is 404 as on every endpoint.
 */
export function requireOrgMembership(ctx: Ctx, orgId: string): void {
  if (!hasAnyRoleFor(ctx, orgId)) throw orgNotFound();
}

export async function getScimUser(ctx: Ctx, orgId: string, id: string): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.read", orgId);
  return readBack(ctx, orgId, id);
}

export interface ScimListInput {
  /** The filter (src/http/scim/query.ts compiles SCIM's); none lists everyone. */
  query?: UserQuery;
  /** No attribute: by id. The id always breaks ties, so that pages are stable. */
  sort: { by?: UserSort; asc: boolean };
  skip: number;
  take: number;
}

/**
 * The organization's existence, the total and the page's ids in one
 * statement, then the page's resources in a second, prepared one: never a
 * query per user.
 */
export async function listScimUsers(ctx: Ctx, orgId: string, input: ScimListInput): Promise<{ total: number; users: ScimUserRecord[] }> {
  authorizeOrg(ctx, "user.read", orgId);
  const row = await ctx.store.userQueries.scimPage({ instanceId: ctx.instanceId, orgId, ...input });
  if (!row.org) throw orgNotFound();
  return { total: row.total, users: await loadRecords(ctx, orgId, row.ids) };
}

/** A resource id from a request path: one PostgreSQL text cannot hold (a NUL) names no user. */
export function storableId(id: string): string {
  if (id.includes("\u0000")) throw userNotFound();
  return id;
}

export async function readBack(ctx: Ctx, orgId: string, id: string): Promise<ScimUserRecord> {
  const [record] = await loadRecords(ctx, orgId, [storableId(id)]);
  if (!record) throw userNotFound();
  return record;
}
