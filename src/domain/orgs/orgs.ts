// Organizations: the tenants of an instance. Finding and reading them, and
// the rules of their names (create and rename in org-create.ts and
// org-lifecycle.ts).

import type { Store } from "../../store/index.js";
import type { OrgCondition, OrgRow } from "../../store/orgs.js";
import { authorize, listScope, type Permission } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { alreadyExists, invalidArgument, notFound } from "../errors.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { lockTx } from "./memberships.js";

export type OrgView = OrgRow;

/** The one NotFound of an organization: also what a caller without any role in it gets, so ids cannot be probed. */
export const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");

/** The organization `orgId` of the caller's instance, or NotFound. Checks no permission. */
export async function existingOrg(ctx: Ctx, orgId: string): Promise<OrgView> {
  const org = await ctx.store.orgs.find(ctx.instanceId, orgId);
  if (!org) throw orgNotFound();
  return org;
}

/** The organization named by a request's organization_id, if the caller holds `permission` in it. */
export async function authorizedOrg(ctx: Ctx, orgId: string, permission: Permission): Promise<OrgView> {
  if (!orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  const org = await existingOrg(ctx, orgId);
  authorize(ctx, permission, org.id, orgNotFound);
  return org;
}

export async function getOrganization(ctx: Ctx, orgId: string): Promise<OrgView> {
  const org = await existingOrg(ctx, orgId);
  authorize(ctx, "org.read", org.id, orgNotFound);
  return org;
}

export type OrgQuery = OrgCondition;

function validQuery(q: OrgQuery): OrgCondition {
  if (q.kind === "id" && !q.id) throw invalidArgument("Errors.Query.Id.Missing", "id filter needs an id");
  return q;
}

export async function listOrganizations(
  ctx: Ctx,
  input: { page?: PageInput; sort?: "name" | "createdAt"; queries: OrgQuery[] },
): Promise<ListTotal & { orgs: OrgView[] }> {
  const p = page(input.page);
  const within = listScope(ctx, "org.read");
  const conditions = input.queries.map(validQuery);
  const { rows, ...total } = await ctx.store.orgs.page(ctx.instanceId, { within, conditions, sort: input.sort ?? "createdAt" }, p);
  return { ...total, orgs: rows };
}

// ---------------------------------------------------------------- names

const MAX_NAME_LENGTH = 200;

export function validateName(name: string): string {
  const v = name.trim();
  if (!v) throw invalidArgument("Errors.Org.Name.Missing", "name is required", { field: "name" });
  if (v.length > MAX_NAME_LENGTH) throw invalidArgument("Errors.Org.Name.TooLong", `name must be at most ${MAX_NAME_LENGTH} characters`, { field: "name" });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalidArgument("Errors.Org.Name.Invalid", "name contains control characters", { field: "name" });
  return v;
}

/** The DNS label of an organization's primary domain: lower-case letters and digits, accents dropped, any other run one dash. */
export function orgSlug(name: string): string {
  const s = name
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    // A DNS label is at most 63 characters, numeric suffix included.
    .slice(0, 56)
    .replace(/-+$/, "");
  return s || "org";
}

const orgNamesLock = (instanceId: string) => `org-names:${instanceId}`;

/**
 * Names are unique per instance, compared case-insensitively: takes the names lock (held until the transaction
 * ends, so primary domains are chosen under it too) and checks that no other organization has `name`.
 */
export async function claimName(ctx: Ctx, tx: Store, name: string, exceptOrgId?: string): Promise<void> {
  await lockTx(tx, orgNamesLock(ctx.instanceId));
  if (await tx.orgs.nameTaken(ctx.instanceId, name, exceptOrgId)) {
    throw alreadyExists("Errors.Org.AlreadyExists", "an organization with this name already exists");
  }
}
