// Administrators: organization members (ORG_* roles) and instance members
// (IAM_* roles). A member may be a user of any organization of the instance,
// as with ZITADEL's administrators: an org can be run by an outside account.
// Every organization or instance keeps at least one owner once it has one.

import type { Prisma } from "../../../gen/prisma/client.js";
import type { Store } from "../../store/index.js";
import { authorize, INSTANCE_ROLES, ORG_ROLES } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx, Tx } from "../context.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { page } from "../list.js";

export const ORG_OWNER = "ORG_OWNER";
export const IAM_OWNER = "IAM_OWNER";

const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");
const userNotFound = () => notFound("Errors.User.NotFound", "user not found");

/** Non-empty, known, deduplicated (first occurrence order kept). */
export function validateRoles(roles: readonly string[], table: Record<string, unknown>): string[] {
  const unique = [...new Set(roles)];
  if (unique.length === 0) throw invalidArgument("Errors.Member.Roles.Missing", "at least one role is required", { field: "roles" });
  for (const role of unique) {
    if (!Object.hasOwn(table, role)) {
      throw invalidArgument("Errors.Member.Role.Invalid", `unknown role ${JSON.stringify(role)}; allowed: ${Object.keys(table).join(", ")}`, {
        field: "roles",
        role,
      });
    }
  }
  return unique;
}

const LOCK_CLASS = 0x737663; // "svc"

/**
 * Serialises the transactions that check-then-write one invariant (the last
 * owner, unique org names) across connections and replicas. Released at
 * commit or rollback.
 */
export async function lockTx(tx: Store, key: string): Promise<void> {
  await tx.db.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, hashtext(${key}))`;
}

export const iamOwnersLock = (instanceId: string) => `iam-owners:${instanceId}`;
const orgOwnersLock = (orgId: string) => `org-owners:${orgId}`;

export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === "P2002";
}

export interface MemberView {
  userId: string;
  roles: string[];
  /** The org id for org members, the instance id for instance members. */
  resourceOwner: string;
  userOrgId: string;
  preferredLoginName: string;
  displayName: string;
  createdAt: Date;
  updatedAt: Date;
}

export type MemberQuery = { kind: "userId"; userId: string } | { kind: "role"; role: string };

export interface ListMembersInput {
  page?: { offset?: bigint | number; limit?: number; asc?: boolean };
  queries: MemberQuery[];
}

const MEMBER_USER_SELECT = {
  select: { orgId: true, username: true, displayName: true, machineName: true, org: { select: { primaryDomain: true } } },
} as const;

type MemberUser = Prisma.UserGetPayload<typeof MEMBER_USER_SELECT>;

function toView(row: { userId: string; roles: string[]; createdAt: Date; updatedAt: Date; user: MemberUser }, resourceOwner: string): MemberView {
  const u = row.user;
  return {
    userId: row.userId,
    roles: row.roles,
    resourceOwner,
    userOrgId: u.orgId,
    preferredLoginName: `${u.username}@${u.org.primaryDomain}`,
    displayName: u.displayName ?? u.machineName ?? u.username,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function memberFilter(q: MemberQuery, table: Record<string, unknown>): Prisma.OrgMemberWhereInput & Prisma.InstanceMemberWhereInput {
  switch (q.kind) {
    case "userId":
      if (!q.userId) throw invalidArgument("Errors.Query.UserId.Missing", "user id filter needs a user id");
      return { userId: q.userId };
    case "role":
      validateRoles([q.role], table);
      return { roles: { has: q.role } };
  }
}

async function findUser(ctx: Ctx, db: Tx | Ctx["db"], userId: string): Promise<{ id: string; orgId: string }> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await db.user.findFirst({ where: { id: userId, instanceId: ctx.instanceId }, select: { id: true, orgId: true } });
  if (!user) throw userNotFound();
  return user;
}

// ---------------------------------------------------------------- organization members

async function targetOrg(ctx: Ctx, orgId: string, permission: "org.member.read" | "org.member.write"): Promise<string> {
  if (!orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: { id: true } });
  if (!org) throw orgNotFound();
  authorize(ctx, permission, org.id, orgNotFound);
  return org.id;
}

/** Adds a member inside a caller's transaction (CreateOrganization uses it for its admins). */
export async function insertOrgMember(ctx: Ctx, tx: Store, orgId: string, userId: string, roles: string[], now: Date): Promise<void> {
  try {
    // Checked first: on PostgreSQL a unique violation aborts the whole transaction; the catch covers a race.
    const existing = await tx.db.orgMember.findUnique({ where: { orgId_userId: { orgId, userId } }, select: { userId: true } });
    if (existing) throw alreadyExists("Errors.Org.Member.AlreadyExists", "the user is already a member of the organization");
    await tx.db.orgMember.create({ data: { orgId, userId, roles, createdAt: now, updatedAt: now } });
  } catch (err) {
    if (isUniqueViolation(err)) throw alreadyExists("Errors.Org.Member.AlreadyExists", "the user is already a member of the organization");
    throw err;
  }
  await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: orgId, orgId, type: "org.member.added", payload: { userId, roles } });
}

export async function addOrgMember(ctx: Ctx, input: { orgId: string; userId: string; roles: readonly string[] }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  const roles = validateRoles(input.roles, ORG_ROLES);
  const user = await findUser(ctx, ctx.db, input.userId);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: user.id });
    await lockTx(tx, orgOwnersLock(orgId));
    await insertOrgMember(ctx, tx, orgId, user.id, roles, now);
  });
  return now;
}

/** The member's row, or NotFound; and FailedPrecondition if the change would leave no ORG_OWNER. */
async function checkOrgOwnerKept(tx: Store, orgId: string, userId: string, newRoles: readonly string[] | null): Promise<string[]> {
  await lockTx(tx, orgOwnersLock(orgId));
  const member = await tx.db.orgMember.findUnique({ where: { orgId_userId: { orgId, userId } }, select: { roles: true } });
  if (!member) throw notFound("Errors.Org.Member.NotFound", "the user is not a member of the organization");
  if (member.roles.includes(ORG_OWNER) && !newRoles?.includes(ORG_OWNER) && !(await otherActiveOrgOwner(tx, orgId, userId))) {
    throw failedPrecondition("Errors.Org.Member.LastOwner", "the last active ORG_OWNER of the organization cannot be removed or demoted");
  }
  return member.roles;
}

/** Whether an ORG_OWNER other than `userId` can still act: an active user of an active organization. */
async function otherActiveOrgOwner(tx: Store, orgId: string, userId: string): Promise<boolean> {
  const other = await tx.db.orgMember.findFirst({
    where: { orgId, roles: { has: ORG_OWNER }, userId: { not: userId }, user: { state: "ACTIVE", org: { state: "ACTIVE" } } },
    select: { userId: true },
  });
  return other !== null;
}

/**
 * FailedPrecondition when the users of organization `orgId` losing their
 * access (the organization deactivated or deleted) would leave another
 * organization, which some of them own, without an ORG_OWNER who can act.
 */
export async function keepOwnersOfOtherOrgs(tx: Store, orgId: string, errorId: string, message: string): Promise<void> {
  const owned = await tx.db.orgMember.findMany({
    where: { roles: { has: ORG_OWNER }, orgId: { not: orgId }, user: { orgId } },
    select: { orgId: true },
    distinct: ["orgId"],
    orderBy: { orgId: "asc" },
  });
  for (const other of owned) {
    await lockTx(tx, orgOwnersLock(other.orgId));
    const remaining = await tx.db.orgMember.findFirst({
      where: { orgId: other.orgId, roles: { has: ORG_OWNER }, user: { orgId: { not: orgId }, state: "ACTIVE", org: { state: "ACTIVE" } } },
      select: { userId: true },
    });
    if (!remaining) throw failedPrecondition(errorId, message);
  }
}

/**
 * FailedPrecondition when `userId` losing its access (deactivated, locked)
 * would leave one of the organizations it owns without an ORG_OWNER who can
 * act. Takes each organization's owners lock, as member changes do.
 */
export async function keepActiveOrgOwners(tx: Store, userId: string, errorId: string, message: string): Promise<void> {
  const owned = await tx.db.orgMember.findMany({ where: { userId, roles: { has: ORG_OWNER } }, select: { orgId: true }, orderBy: { orgId: "asc" } });
  for (const { orgId } of owned) {
    await lockTx(tx, orgOwnersLock(orgId));
    if (!(await otherActiveOrgOwner(tx, orgId, userId))) throw failedPrecondition(errorId, message);
  }
}

export async function updateOrgMember(ctx: Ctx, input: { orgId: string; userId: string; roles: readonly string[] }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  const roles = validateRoles(input.roles, ORG_ROLES);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: input.userId });
    const previous = await checkOrgOwnerKept(tx, orgId, input.userId, roles);
    await tx.db.orgMember.update({ where: { orgId_userId: { orgId, userId: input.userId } }, data: { roles, updatedAt: now } });
    await recordEvent(ctx, tx, {
      aggregateType: "org",
      aggregateId: orgId,
      orgId,
      type: "org.member.changed",
      payload: { userId: input.userId, roles, previousRoles: previous },
    });
  });
  return now;
}

export async function removeOrgMember(ctx: Ctx, input: { orgId: string; userId: string }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: input.userId });
    await checkOrgOwnerKept(tx, orgId, input.userId, null);
    await tx.db.orgMember.delete({ where: { orgId_userId: { orgId, userId: input.userId } } });
    await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: orgId, orgId, type: "org.member.removed", payload: { userId: input.userId } });
  });
  return now;
}

export async function listOrgMembers(ctx: Ctx, input: ListMembersInput & { orgId: string }): Promise<{ total: number; members: MemberView[] }> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.read");
  const p = page(input.page);
  const where: Prisma.OrgMemberWhereInput = { orgId, AND: input.queries.map((q) => memberFilter(q, ORG_ROLES)) };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.orgMember.count({ where }),
    ctx.db.orgMember.findMany({
      where,
      orderBy: [{ createdAt: dir }, { userId: dir }],
      skip: p.offset,
      take: p.limit,
      select: { userId: true, roles: true, createdAt: true, updatedAt: true, user: MEMBER_USER_SELECT },
    }),
  ]);
  return { total, members: rows.map((r) => toView(r, orgId)) };
}

// ---------------------------------------------------------------- instance members

/**
 * FailedPrecondition unless an IAM_OWNER other than `leaving` stays. Callers
 * hold iamOwnersLock. `leaving` selects the owners that would go: one user, or
 * every user of an organization (deleted or deactivated).
 */
export async function checkIamOwnerKept(ctx: Ctx, tx: Store, leaving: { userId: string } | { orgId: string }, message: string, id: string): Promise<void> {
  const owners: Prisma.InstanceMemberWhereInput = { instanceId: ctx.instanceId, roles: { has: IAM_OWNER } };
  const going: Prisma.InstanceMemberWhereInput = "userId" in leaving ? { userId: leaving.userId } : { user: { orgId: leaving.orgId } };
  const affected = await tx.db.instanceMember.count({ where: { ...owners, ...going } });
  if (affected === 0) return;
  // Only owners who can still act count: active users of active organizations.
  const remaining = await tx.db.instanceMember.count({ where: { ...owners, NOT: going, user: { state: "ACTIVE", org: { state: "ACTIVE" } } } });
  if (remaining === 0) throw failedPrecondition(id, message);
}

export async function addInstanceMember(ctx: Ctx, input: { userId: string; roles: readonly string[] }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  const roles = validateRoles(input.roles, INSTANCE_ROLES);
  const user = await findUser(ctx, ctx.db, input.userId);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: input.userId });
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    const existing = await tx.db.instanceMember.findUnique({
      where: { instanceId_userId: { instanceId: ctx.instanceId, userId: user.id } },
      select: { userId: true },
    });
    if (existing) throw alreadyExists("Errors.Instance.Member.AlreadyExists", "the user is already an instance member");
    await tx.db.instanceMember.create({ data: { instanceId: ctx.instanceId, userId: user.id, roles, createdAt: now, updatedAt: now } });
    await recordEvent(ctx, tx, { aggregateType: "instance", aggregateId: ctx.instanceId, type: "instance.member.added", payload: { userId: user.id, roles } });
  });
  return now;
}

async function existingInstanceMember(ctx: Ctx, tx: Store, userId: string): Promise<string[]> {
  const member = await tx.db.instanceMember.findUnique({ where: { instanceId_userId: { instanceId: ctx.instanceId, userId } }, select: { roles: true } });
  if (!member) throw notFound("Errors.Instance.Member.NotFound", "the user is not an instance member");
  return member.roles;
}

const LAST_IAM_OWNER = "the last IAM_OWNER of the instance cannot be removed or demoted";

export async function updateInstanceMember(ctx: Ctx, input: { userId: string; roles: readonly string[] }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  const roles = validateRoles(input.roles, INSTANCE_ROLES);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: input.userId });
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    const previous = await existingInstanceMember(ctx, tx, input.userId);
    if (!roles.includes(IAM_OWNER)) await checkIamOwnerKept(ctx, tx, { userId: input.userId }, LAST_IAM_OWNER, "Errors.Instance.Member.LastOwner");
    await tx.db.instanceMember.update({ where: { instanceId_userId: { instanceId: ctx.instanceId, userId: input.userId } }, data: { roles, updatedAt: now } });
    await recordEvent(ctx, tx, {
      aggregateType: "instance",
      aggregateId: ctx.instanceId,
      type: "instance.member.changed",
      payload: { userId: input.userId, roles, previousRoles: previous },
    });
  });
  return now;
}

export async function removeInstanceMember(ctx: Ctx, input: { userId: string }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: input.userId });
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    await existingInstanceMember(ctx, tx, input.userId);
    await checkIamOwnerKept(ctx, tx, { userId: input.userId }, LAST_IAM_OWNER, "Errors.Instance.Member.LastOwner");
    await tx.db.instanceMember.delete({ where: { instanceId_userId: { instanceId: ctx.instanceId, userId: input.userId } } });
    await recordEvent(ctx, tx, { aggregateType: "instance", aggregateId: ctx.instanceId, type: "instance.member.removed", payload: { userId: input.userId } });
  });
  return now;
}

export async function listInstanceMembers(ctx: Ctx, input: ListMembersInput): Promise<{ total: number; members: MemberView[] }> {
  authorize(ctx, "iam.member.read", null);
  const p = page(input.page);
  const where: Prisma.InstanceMemberWhereInput = { instanceId: ctx.instanceId, AND: input.queries.map((q) => memberFilter(q, INSTANCE_ROLES)) };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.instanceMember.count({ where }),
    ctx.db.instanceMember.findMany({
      where,
      orderBy: [{ createdAt: dir }, { userId: dir }],
      skip: p.offset,
      take: p.limit,
      select: { userId: true, roles: true, createdAt: true, updatedAt: true, user: MEMBER_USER_SELECT },
    }),
  ]);
  return { total, members: rows.map((r) => toView(r, ctx.instanceId)) };
}
