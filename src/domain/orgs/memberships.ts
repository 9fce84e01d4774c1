// What every change of administrators shares, and what other operations run
// inside their own transactions: validating roles, adding a member, the
// advisory locks and the rule that every organization and the instance keep
// an owner who can act once they have one.

import type { Store } from "../../store/index.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../errors.js";

export const ORG_OWNER = "ORG_OWNER";
export const IAM_OWNER = "IAM_OWNER";

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

/**
 * Serialises the transactions that check-then-write one invariant (the last
 * owner, unique org names) across connections and replicas. Released at
 * commit or rollback.
 */
export async function lockTx(tx: Store, key: string): Promise<void> {
  await tx.members.lock(key);
}

export const iamOwnersLock = (instanceId: string) => `iam-owners:${instanceId}`;
export const orgOwnersLock = (orgId: string) => `org-owners:${orgId}`;

const memberExists = () => alreadyExists("Errors.Org.Member.AlreadyExists", "the user is already a member of the organization");

/** Adds a member inside a caller's transaction (CreateOrganization uses it for its admins). */
export async function insertOrgMember(ctx: Ctx, tx: Store, orgId: string, userId: string, roles: string[], now: Date): Promise<void> {
  // Checked first: on PostgreSQL a unique violation aborts the whole transaction; the repository's translation covers a race.
  if (await tx.members.orgMemberRoles(orgId, userId)) throw memberExists();
  await tx.members.insertOrgMember({ orgId, userId, roles, createdAt: now }, memberExists);
  await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: orgId, orgId, type: "org.member.added", payload: { userId, roles } });
}

/** Adds an instance member inside a caller's transaction that holds iamOwnersLock. */
export async function insertInstanceMember(ctx: Ctx, tx: Store, userId: string, roles: string[], now: Date): Promise<void> {
  if (await tx.members.instanceMemberRoles(ctx.instanceId, userId)) {
    throw alreadyExists("Errors.Instance.Member.AlreadyExists", "the user is already an instance member");
  }
  await tx.members.insertInstanceMember({ instanceId: ctx.instanceId, userId, roles, createdAt: now });
  await recordEvent(ctx, tx, { aggregateType: "instance", aggregateId: ctx.instanceId, type: "instance.member.added", payload: { userId, roles } });
}

/** The member's roles, or NotFound; and FailedPrecondition if the change would leave no ORG_OWNER. */
export async function checkOrgOwnerKept(tx: Store, orgId: string, userId: string, newRoles: readonly string[] | null): Promise<string[]> {
  await lockTx(tx, orgOwnersLock(orgId));
  const roles = await tx.members.orgMemberRoles(orgId, userId);
  if (!roles) throw notFound("Errors.Org.Member.NotFound", "the user is not a member of the organization");
  if (roles.includes(ORG_OWNER) && !newRoles?.includes(ORG_OWNER) && !(await tx.members.otherActiveHolder(orgId, ORG_OWNER, userId))) {
    throw failedPrecondition("Errors.Org.Member.LastOwner", "the last active ORG_OWNER of the organization cannot be removed or demoted");
  }
  return roles;
}

/**
 * FailedPrecondition when `user` losing its access (deactivated, locked,
 * deleted) would leave its own organization without an ORG_OWNER who can act.
 * Only the organization that owns the user counts: other organizations that
 * made the user a member did so with its organization's consent and are
 * resolved by an IAM_OWNER if it leaves them without an owner. Takes the
 * organization's owners lock, as member changes do.
 */
export async function keepActiveOrgOwners(tx: Store, user: { id: string; orgId: string }, errorId: string, message: string): Promise<void> {
  const roles = await tx.members.orgMemberRoles(user.orgId, user.id);
  if (!roles?.includes(ORG_OWNER)) return;
  await lockTx(tx, orgOwnersLock(user.orgId));
  if (!(await tx.members.otherActiveHolder(user.orgId, ORG_OWNER, user.id))) throw failedPrecondition(errorId, message);
}

/**
 * FailedPrecondition unless an IAM_OWNER other than `leaving` stays. Callers
 * hold iamOwnersLock. `leaving` selects the owners that would go: one user, or
 * every user of an organization (deleted or deactivated).
 */
export async function checkIamOwnerKept(ctx: Ctx, tx: Store, leaving: { userId: string } | { orgId: string }, message: string, id: string): Promise<void> {
  // Only owners who can still act count: active users of active organizations.
  const owners = await tx.members.instanceHolders(ctx.instanceId, IAM_OWNER, leaving);
  if (owners.leaving > 0 && owners.remaining === 0) throw failedPrecondition(id, message);
}
