// Administrators: organization members (ORG_* roles) and instance members
// (IAM_* roles). An organization's members are its own users, or users of
// another organization added with that organization's consent: the caller
// administers memberships in both (an IAM_OWNER always does). The user's own
// organization keeps control of it: it manages the user as any other (the
// guards look at its roles there only) and may withdraw the membership.
// Every organization or instance keeps at least one owner once it has one
// (the rules shared with other operations are in memberships.ts).

import type { Store } from "../../store/index.js";
import type { MemberCondition, MemberRow } from "../../store/members.js";
import { authorize, holds, INSTANCE_ROLES, ORG_ROLES } from "../access/permissions.js";
import { type EventInput, recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { userNotFound } from "../identity/user-access.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import {
  checkIamOwnerKept,
  checkOrgOwnerKept,
  IAM_OWNER,
  iamOwnersLock,
  insertInstanceMember,
  insertOrgMember,
  lockTx,
  orgOwnersLock,
  validateRoles,
} from "./memberships.js";
import { authorizedOrg } from "./orgs.js";

// Other areas import these from here.
export {
  checkIamOwnerKept,
  IAM_OWNER,
  iamOwnersLock,
  insertOrgMember,
  keepActiveOrgOwners,
  lockTx,
  ORG_OWNER,
  validateRoles,
} from "./memberships.js";

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

export type MemberQuery = MemberCondition;

export interface ListMembersInput {
  page?: PageInput;
  queries: MemberQuery[];
}

function toView(row: MemberRow, resourceOwner: string): MemberView {
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

function validQuery(q: MemberQuery, table: Record<string, unknown>): MemberCondition {
  switch (q.kind) {
    case "userId":
      if (!q.userId) throw invalidArgument("Errors.Query.UserId.Missing", "user id filter needs a user id");
      return q;
    case "role":
      validateRoles([q.role], table);
      return q;
  }
}

async function findUser(ctx: Ctx, userId: string): Promise<{ id: string; orgId: string }> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await ctx.store.members.candidate(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  return user;
}

/**
 * The skeleton of every member change: in one transaction, drop what authentication cached about the user, run the
 * change, record its event.
 */
async function changeMember(ctx: Ctx, userId: string, change: (tx: Store, now: Date) => Promise<EventInput | undefined>): Promise<Date> {
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId });
    const event = await change(tx, now);
    if (event) await recordEvent(ctx, tx, event);
  });
  return now;
}

// ---------------------------------------------------------------- organization members

const targetOrg = async (ctx: Ctx, orgId: string, permission: "org.member.read" | "org.member.write") => (await authorizedOrg(ctx, orgId, permission)).id;

const orgEvent = (orgId: string, type: string, payload: Record<string, unknown>): EventInput => ({
  aggregateType: "org",
  aggregateId: orgId,
  orgId,
  type,
  payload,
});

/**
 * The user to make a member of `orgId`. A user of another organization needs
 * that organization's consent: the caller holds org.member.write there too.
 * A caller who cannot see that organization learns nothing (NotFound, as for
 * an id that does not exist).
 */
async function memberCandidate(ctx: Ctx, orgId: string, userId: string): Promise<{ id: string; orgId: string }> {
  const user = await findUser(ctx, userId);
  if (user.orgId !== orgId) authorize(ctx, "org.member.write", user.orgId, userNotFound);
  return user;
}

export async function addOrgMember(ctx: Ctx, input: { orgId: string; userId: string; roles: readonly string[] }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  const roles = validateRoles(input.roles, ORG_ROLES);
  const user = await memberCandidate(ctx, orgId, input.userId);
  return changeMember(ctx, user.id, async (tx, now) => {
    await lockTx(tx, orgOwnersLock(orgId));
    // insertOrgMember records its event.
    await insertOrgMember(ctx, tx, orgId, user.id, roles, now);
    return undefined;
  });
}

export async function updateOrgMember(ctx: Ctx, input: { orgId: string; userId: string; roles: readonly string[] }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  const roles = validateRoles(input.roles, ORG_ROLES);
  return changeMember(ctx, input.userId, async (tx, now) => {
    const previous = await checkOrgOwnerKept(tx, orgId, input.userId, roles);
    await tx.members.setOrgMemberRoles(orgId, input.userId, roles, now);
    return orgEvent(orgId, "org.member.changed", { userId: input.userId, roles, previousRoles: previous });
  });
}

export async function removeOrgMember(ctx: Ctx, input: { orgId: string; userId: string }): Promise<Date> {
  if (!holds(ctx, "org.member.write", input.orgId)) {
    const user = input.userId ? await ctx.store.members.candidate(ctx.instanceId, input.userId) : null;
    if (user && user.orgId !== input.orgId && holds(ctx, "org.member.write", user.orgId)) return withdrawMembership(ctx, input.orgId, user.id);
  }
  const orgId = await targetOrg(ctx, input.orgId, "org.member.write");
  return changeMember(ctx, input.userId, async (tx) => {
    await checkOrgOwnerKept(tx, orgId, input.userId, null);
    await tx.members.deleteOrgMember(orgId, input.userId);
    return orgEvent(orgId, "org.member.removed", { userId: input.userId });
  });
}

/**
 * The user's own organization takes back the consent it gave: its user leaves
 * `orgId` even as that organization's last owner (an IAM_OWNER gives it a new
 * one).
 */
async function withdrawMembership(ctx: Ctx, orgId: string, userId: string): Promise<Date> {
  return changeMember(ctx, userId, async (tx) => {
    await lockTx(tx, orgOwnersLock(orgId));
    if (!(await tx.members.orgMemberRoles(orgId, userId))) throw notFound("Errors.Org.Member.NotFound", "the user is not a member of the organization");
    await tx.members.deleteOrgMember(orgId, userId);
    return orgEvent(orgId, "org.member.removed", { userId, withdrawnByUserOrganization: true });
  });
}

export async function listOrgMembers(ctx: Ctx, input: ListMembersInput & { orgId: string }): Promise<ListTotal & { members: MemberView[] }> {
  const orgId = await targetOrg(ctx, input.orgId, "org.member.read");
  const p = page(input.page);
  const conditions = input.queries.map((q) => validQuery(q, ORG_ROLES));
  const { rows, ...total } = await ctx.store.members.orgMembersPage(orgId, conditions, p);
  return { ...total, members: rows.map((r) => toView(r, orgId)) };
}

// ---------------------------------------------------------------- instance members

const LAST_IAM_OWNER = "the last IAM_OWNER of the instance cannot be removed or demoted";

const instanceEvent = (ctx: Ctx, type: string, payload: Record<string, unknown>): EventInput => ({
  aggregateType: "instance",
  aggregateId: ctx.instanceId,
  type,
  payload,
});

async function existingInstanceMember(ctx: Ctx, tx: Store, userId: string): Promise<string[]> {
  const roles = await tx.members.instanceMemberRoles(ctx.instanceId, userId);
  if (!roles) throw notFound("Errors.Instance.Member.NotFound", "the user is not an instance member");
  return roles;
}

export async function addInstanceMember(ctx: Ctx, input: { userId: string; roles: readonly string[] }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  const roles = validateRoles(input.roles, INSTANCE_ROLES);
  const user = await findUser(ctx, input.userId);
  return changeMember(ctx, input.userId, async (tx, now) => {
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    await insertInstanceMember(ctx, tx, user.id, roles, now);
    return undefined;
  });
}

export async function updateInstanceMember(ctx: Ctx, input: { userId: string; roles: readonly string[] }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  const roles = validateRoles(input.roles, INSTANCE_ROLES);
  return changeMember(ctx, input.userId, async (tx, now) => {
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    const previous = await existingInstanceMember(ctx, tx, input.userId);
    if (!roles.includes(IAM_OWNER)) await checkIamOwnerKept(ctx, tx, { userId: input.userId }, LAST_IAM_OWNER, "Errors.Instance.Member.LastOwner");
    await tx.members.setInstanceMemberRoles(ctx.instanceId, input.userId, roles, now);
    return instanceEvent(ctx, "instance.member.changed", { userId: input.userId, roles, previousRoles: previous });
  });
}

export async function removeInstanceMember(ctx: Ctx, input: { userId: string }): Promise<Date> {
  authorize(ctx, "iam.member.write", null);
  return changeMember(ctx, input.userId, async (tx) => {
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    await existingInstanceMember(ctx, tx, input.userId);
    await checkIamOwnerKept(ctx, tx, { userId: input.userId }, LAST_IAM_OWNER, "Errors.Instance.Member.LastOwner");
    await tx.members.deleteInstanceMember(ctx.instanceId, input.userId);
    return instanceEvent(ctx, "instance.member.removed", { userId: input.userId });
  });
}

export async function listInstanceMembers(ctx: Ctx, input: ListMembersInput): Promise<ListTotal & { members: MemberView[] }> {
  authorize(ctx, "iam.member.read", null);
  const p = page(input.page);
  const conditions = input.queries.map((q) => validQuery(q, INSTANCE_ROLES));
  const { rows, ...total } = await ctx.store.members.instanceMembersPage(ctx.instanceId, conditions, p);
  return { ...total, members: rows.map((r) => toView(r, ctx.instanceId)) };
}
