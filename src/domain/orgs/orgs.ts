// Organizations: the tenants of an instance. Create (with first
// administrators), read, rename, deactivate/reactivate, delete.

import type { Prisma } from "../../../gen/prisma/client.js";
import type { Store } from "../../store/index.js";
import { invalidateGrantHolders } from "../access/grant-holders.js";
import { authorize, listScope, ORG_ROLES } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { type CreateUserInput, insertUser, type PreparedUser, prepareUser } from "../identity/users.js";
import { newId } from "../ids.js";
import { page, type TextMatch, textFilter } from "../list.js";
import { checkIamOwnerKept, iamOwnersLock, insertOrgMember, isUniqueViolation, keepOwnersOfOtherOrgs, lockTx, ORG_OWNER, validateRoles } from "./members.js";

export interface OrgView {
  id: string;
  name: string;
  state: "ACTIVE" | "INACTIVE";
  primaryDomain: string;
  createdAt: Date;
  updatedAt: Date;
}

const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");
const ORG_SELECT = { id: true, name: true, state: true, primaryDomain: true, createdAt: true, updatedAt: true } satisfies Prisma.OrganizationSelect;

export async function getOrganization(ctx: Ctx, orgId: string): Promise<OrgView> {
  const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: ORG_SELECT });
  if (!org) throw orgNotFound();
  authorize(ctx, "org.read", org.id, orgNotFound);
  return org;
}

export type OrgQuery = { kind: "name"; match: TextMatch } | { kind: "state"; state: "ACTIVE" | "INACTIVE" } | { kind: "id"; id: string };

function orgFilter(q: OrgQuery): Prisma.OrganizationWhereInput {
  switch (q.kind) {
    case "name":
      return { name: textFilter(q.match) };
    case "state":
      return { state: q.state };
    case "id":
      if (!q.id) throw invalidArgument("Errors.Query.Id.Missing", "id filter needs an id");
      return { id: q.id };
  }
}

export async function listOrganizations(
  ctx: Ctx,
  input: { page?: { offset?: bigint | number; limit?: number; asc?: boolean }; sort?: "name" | "createdAt"; queries: OrgQuery[] },
): Promise<{ total: number; orgs: OrgView[] }> {
  const p = page(input.page);
  const orgs = listScope(ctx, "org.read");
  const filters = input.queries.map(orgFilter);
  const where: Prisma.OrganizationWhereInput = { instanceId: ctx.instanceId, ...(orgs ? { id: { in: orgs } } : {}), AND: filters };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.organization.count({ where }),
    ctx.db.organization.findMany({ where, orderBy: [{ [input.sort ?? "createdAt"]: dir }, { id: dir }], skip: p.offset, take: p.limit, select: ORG_SELECT }),
  ]);
  return { total, orgs: rows };
}

// ---------------------------------------------------------------- create

export const MAX_ADMINS = 20;
const MAX_NAME_LENGTH = 200;

export type OrgAdminInput =
  | { userId: string; roles: readonly string[] }
  | { human: NonNullable<CreateUserInput["human"]>; username?: string; roles: readonly string[] };

export interface CreateOrgInput {
  name: string;
  admins: OrgAdminInput[];
  /** Host the generated primary domain ends in (the external URL's host name). */
  domainHost: string;
}

function validateName(name: string): string {
  const v = name.trim();
  if (!v) throw invalidArgument("Errors.Org.Name.Missing", "name is required", { field: "name" });
  if (v.length > MAX_NAME_LENGTH) throw invalidArgument("Errors.Org.Name.TooLong", `name must be at most ${MAX_NAME_LENGTH} characters`, { field: "name" });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalidArgument("Errors.Org.Name.Invalid", "name contains control characters", { field: "name" });
  return v;
}

/** Like the default organization's at bootstrap, with accents dropped rather than turned into dashes. */
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

/** Names are unique per instance, compared case-insensitively. Callers hold orgNamesLock. */
async function checkNameFree(ctx: Ctx, tx: Store, name: string, exceptOrgId?: string): Promise<void> {
  const clash = await tx.db.organization.findFirst({
    where: { instanceId: ctx.instanceId, name: { equals: name, mode: "insensitive" }, ...(exceptOrgId ? { id: { not: exceptOrgId } } : {}) },
    select: { id: true },
  });
  if (clash) throw alreadyExists("Errors.Org.AlreadyExists", "an organization with this name already exists");
}

/** slug.host, or slug-2.host, slug-3.host... when taken. Callers hold orgNamesLock. */
async function freeDomain(ctx: Ctx, tx: Store, name: string, host: string): Promise<string> {
  const slug = orgSlug(name);
  const suffix = `.${host}`;
  const taken = new Set(
    (
      await tx.db.organization.findMany({
        where: { instanceId: ctx.instanceId, primaryDomain: { startsWith: slug }, AND: { primaryDomain: { endsWith: suffix } } },
        select: { primaryDomain: true },
      })
    ).map((o) => o.primaryDomain),
  );
  for (let n = 1; ; n++) {
    const domain = `${n === 1 ? slug : `${slug}-${n}`}${suffix}`;
    if (!taken.has(domain)) return domain;
  }
}

export async function createOrganization(ctx: Ctx, input: CreateOrgInput): Promise<{ id: string; createdAt: Date; createdAdminIds: string[] }> {
  authorize(ctx, "org.create", null);
  const name = validateName(input.name);
  if (input.admins.length > MAX_ADMINS) throw invalidArgument("Errors.Org.Admins.TooMany", `at most ${MAX_ADMINS} admins`, { field: "admins" });
  const admins = input.admins.map((a) => ({ ...a, roles: validateRoles(a.roles.length ? a.roles : [ORG_OWNER], ORG_ROLES) }));
  const existing = admins.flatMap((a) => ("userId" in a ? [a.userId] : []));
  if (existing.some((id) => !id)) throw invalidArgument("Errors.User.Id.Missing", "an admin's user_id is required", { field: "admins" });
  if (new Set(existing).size !== existing.length) throw invalidArgument("Errors.Org.Admin.Duplicate", "an admin is listed twice", { field: "admins" });

  const id = newId();
  const now = ctx.clock();
  // New admins are validated and their passwords hashed before the transaction opens.
  const prepared = new Map<(typeof admins)[number], PreparedUser>();
  for (const admin of admins) {
    if (!("userId" in admin)) prepared.set(admin, await prepareUser(ctx, { orgId: id, username: admin.username, human: admin.human }, id));
  }
  const createdAdminIds: string[] = [];
  try {
    await ctx.store.transaction(
      async (tx) => {
        await lockTx(tx, orgNamesLock(ctx.instanceId));
        await checkNameFree(ctx, tx, name);
        const primaryDomain = await freeDomain(ctx, tx, name, input.domainHost);
        await tx.db.organization.create({ data: { id, instanceId: ctx.instanceId, name, primaryDomain, createdAt: now, updatedAt: now } });
        await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: id, orgId: id, type: "org.added", payload: { name, primaryDomain } });
        for (const admin of admins) {
          let userId: string;
          const newUser = prepared.get(admin);
          if (newUser) {
            await insertUser(ctx, tx, newUser);
            userId = newUser.data.id as string;
            createdAdminIds.push(userId);
          } else {
            const user = await tx.db.user.findFirst({ where: { id: (admin as { userId: string }).userId, instanceId: ctx.instanceId }, select: { id: true } });
            if (!user) throw notFound("Errors.User.NotFound", "user not found");
            userId = user.id;
          }
          await insertOrgMember(ctx, tx, id, userId, admin.roles, now);
        }
      },
      { timeout: 15_000, maxWait: 10_000 },
    );
  } catch (err) {
    // Backstop of the (instance, name) unique index; names are checked under the lock above.
    if (isUniqueViolation(err)) {
      throw alreadyExists("Errors.Org.AlreadyExists", "an organization with this name already exists");
    }
    throw err;
  }
  return { id, createdAt: now, createdAdminIds };
}

// ---------------------------------------------------------------- change

async function targetOrg(ctx: Ctx, orgId: string, permission: "org.write" | "org.delete"): Promise<{ id: string; name: string; state: OrgView["state"] }> {
  if (!orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: { id: true, name: true, state: true } });
  if (!org) throw orgNotFound();
  authorize(ctx, permission, org.id, orgNotFound);
  return org;
}

/** Renames; the primary domain stays, so users' login names do not change under them. */
export async function updateOrganization(ctx: Ctx, input: { orgId: string; name: string }): Promise<Date> {
  const org = await targetOrg(ctx, input.orgId, "org.write");
  const name = validateName(input.name);
  const now = ctx.clock();
  if (name === org.name) return now;
  await ctx.store.transaction(async (tx) => {
    await lockTx(tx, orgNamesLock(ctx.instanceId));
    await checkNameFree(ctx, tx, name, org.id);
    await tx.db.organization.update({ where: { id: org.id }, data: { name, updatedAt: now } });
    // Role claims name the organization each role is held in.
    await invalidateGrantHolders(tx, { orgId: org.id });
    await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: org.id, orgId: org.id, type: "org.changed", payload: { name, previousName: org.name } });
  });
  return now;
}

const LAST_IAM_OWNERS_DEACTIVATE = "every IAM_OWNER of the instance belongs to this organization: deactivating it would lock them all out";
const LAST_IAM_OWNERS_DELETE = "every IAM_OWNER of the instance belongs to this organization: deleting it would remove them all";
const LAST_OWNERS_ELSEWHERE_DEACTIVATE = "every active ORG_OWNER of another organization belongs to this organization: deactivating it would lock them all out";
const LAST_OWNERS_ELSEWHERE_DELETE = "every active ORG_OWNER of another organization belongs to this organization: deleting it would remove them all";

async function setState(ctx: Ctx, orgId: string, state: OrgView["state"]): Promise<Date> {
  const org = await targetOrg(ctx, orgId, "org.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ orgId: org.id });
    // Lock before touching the org row: deleteOrganization takes the same lock, then the row.
    if (state === "INACTIVE") await lockTx(tx, iamOwnersLock(ctx.instanceId));
    // Conditional update: of two concurrent deactivations only one succeeds.
    const { count } = await tx.db.organization.updateMany({ where: { id: org.id, state: { not: state } }, data: { state, updatedAt: now } });
    if (count === 0) {
      throw state === "INACTIVE"
        ? failedPrecondition("Errors.Org.AlreadyInactive", "the organization is already deactivated")
        : failedPrecondition("Errors.Org.NotInactive", "the organization is not deactivated");
    }
    // Roles held in the organization's name, and the roles of its projects (whoever holds them), count only while it
    // is active, for users of any organization.
    await invalidateGrantHolders(tx, { orgId: org.id, orOnItsProjects: true });
    if (state === "INACTIVE") {
      await checkIamOwnerKept(ctx, tx, { orgId: org.id }, LAST_IAM_OWNERS_DEACTIVATE, "Errors.Org.LastInstanceOwners");
      await keepOwnersOfOtherOrgs(tx, org.id, "Errors.Org.LastOwnersElsewhere", LAST_OWNERS_ELSEWHERE_DEACTIVATE);
    }
    await recordEvent(ctx, tx, {
      aggregateType: "org",
      aggregateId: org.id,
      orgId: org.id,
      type: state === "INACTIVE" ? "org.deactivated" : "org.reactivated",
    });
  });
  return now;
}

export const deactivateOrganization = (ctx: Ctx, orgId: string) => setState(ctx, orgId, "INACTIVE");
export const reactivateOrganization = (ctx: Ctx, orgId: string) => setState(ctx, orgId, "ACTIVE");

/**
 * Deletes the organization and, by ON DELETE CASCADE, everything it owns:
 * its users (with their tokens, keys, metadata and memberships anywhere),
 * the memberships held in it, its metadata. Its settings overrides have no
 * foreign key and are removed explicitly. Audit events stay.
 */
export async function deleteOrganization(ctx: Ctx, orgId: string): Promise<Date> {
  const org = await targetOrg(ctx, orgId, "org.delete");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ orgId: org.id });
    const instance = await tx.db.instance.findUnique({ where: { id: ctx.instanceId }, select: { defaultOrgId: true } });
    if (instance?.defaultOrgId === org.id) throw failedPrecondition("Errors.Org.Default", "the default organization of the instance cannot be deleted");
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    await checkIamOwnerKept(ctx, tx, { orgId: org.id }, LAST_IAM_OWNERS_DELETE, "Errors.Org.LastInstanceOwners");
    await keepOwnersOfOtherOrgs(tx, org.id, "Errors.Org.LastOwnersElsewhere", LAST_OWNERS_ELSEWHERE_DELETE);
    const users = await tx.db.user.count({ where: { orgId: org.id } });
    // Users of other organizations lose the grants held in its name and those on its projects.
    await invalidateGrantHolders(tx, { orgId: org.id, orOnItsProjects: true });
    await tx.db.setting.deleteMany({ where: { instanceId: ctx.instanceId, ownerId: org.id } });
    // Grants made in this org's name on other orgs' projects have no foreign key to it.
    await tx.db.userGrant.deleteMany({ where: { instanceId: ctx.instanceId, orgId: org.id } });
    await tx.db.projectGrant.deleteMany({ where: { instanceId: ctx.instanceId, grantedOrgId: org.id } });
    await tx.db.organization.delete({ where: { id: org.id } });
    await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: org.id, orgId: org.id, type: "org.removed", payload: { name: org.name, users } });
  });
  return now;
}
