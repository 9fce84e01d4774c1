// The lockout policy: wrong passwords counted in the database (every replica
// sees the same count), and the user locked when the count reaches the
// organization's maxPasswordAttempts. Locking must not make the instance or
// an organization unmanageable: a user whose lock would leave the instance
// without an active IAM_OWNER, or its own organization without an active
// ORG_OWNER, keeps its state and access (tokens, keys, PATs) and only its
// password is refused for OWNER_PASSWORD_LOCK_MS, after which one try is
// allowed again (another wrong one starts a new period). The answer while
// locked never says whether the password was right.
import { recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition } from "../errors.js";
import { keepActiveOrgOwners } from "../orgs/members.js";
import { effectiveOf, lockoutPolicy } from "../settings/settings.js";
import { keepAnActiveInstanceOwner } from "./user-access.js";

/** How long the password of a last owner stays refused once the policy's limit is reached. */
export const OWNER_PASSWORD_LOCK_MS = 15 * 60_000;

type Outcome = "counted" | "locked" | "passwordLocked";

export const lockedError = () => failedPrecondition("Errors.User.Locked", "the user is locked");

/** The user's lock state and the settings of its organization and instance, when the caller read them with the user. */
export interface KnownLock {
  state: string;
  failedPasswordAttempts: number;
  lockedAt: Date | null;
  settings: readonly { ownerId: string; kind: string; value: unknown }[];
}

/**
 * Whether the user may not prove anything with a password now: locked, or a last owner within its password lock
 * period. `known`: the lock state as the caller read it (else read here).
 */
export async function isLockedOut(ctx: Ctx, user: { id: string; orgId: string }, known?: KnownLock): Promise<boolean> {
  const row = known ?? (await ctx.store.users.passwordLock(user.id));
  if (!row) return false;
  if (row.state === "LOCKED") return true;
  if (row.lockedAt === null) return false;
  const { maxPasswordAttempts: limit } = known ? effectiveOf("lockout", known.settings, ctx.instanceId, user.orgId) : await lockoutPolicy(ctx, user.orgId);
  return limit > 0 && row.failedPasswordAttempts >= limit && ctx.clock().getTime() - row.lockedAt.getTime() < OWNER_PASSWORD_LOCK_MS;
}

/** Records a failed password check; returns whether it locked the user (or, for a last owner, its password). */
export async function recordFailedPasswordCheck(ctx: Ctx, user: { id: string; orgId: string }): Promise<Outcome> {
  const policy = await lockoutPolicy(ctx, user.orgId);
  const now = ctx.clock();
  return ctx.store.transaction(async (tx) => {
    const after = await tx.users.countFailedPassword(user.id);
    await recordEvent(ctx, tx, userEvent(user, "user.password.check.failed"));
    const limit = policy.maxPasswordAttempts;
    if (limit === 0 || after.failedPasswordAttempts < limit || (after.state !== "ACTIVE" && after.state !== "INITIAL")) return "counted";
    const attempts = { failedPasswordAttempts: after.failedPasswordAttempts };
    if (await isLastOwner({ ...ctx, store: tx }, user)) {
      await tx.users.update(user.id, { lockedAt: now });
      const until = new Date(now.getTime() + OWNER_PASSWORD_LOCK_MS).toISOString();
      await recordEvent(ctx, tx, userEvent(user, "user.password.locked", { reason: "lockout policy, last owner", until, ...attempts }));
      return "passwordLocked";
    }
    await tx.users.update(user.id, { state: "LOCKED", lockedAt: now, updatedAt: now });
    await tx.auth.invalidate({ userId: user.id });
    await recordEvent(ctx, tx, userEvent(user, "user.locked", { reason: "lockout policy", ...attempts }));
    return "locked";
  });
}

/** Whether locking the user would leave the instance or its own organization without an owner who can act. */
export async function isLastOwner(ctx: Ctx, user: { id: string; orgId: string }): Promise<boolean> {
  try {
    await keepAnActiveInstanceOwner(ctx, ctx.store, user.id, "Errors.User.LastInstanceOwner", "last IAM_OWNER");
    await keepActiveOrgOwners(ctx.store, user, "Errors.User.LastOrgOwner", "last ORG_OWNER");
    return false;
  } catch (err) {
    if (err instanceof DomainError && err.kind === "FailedPrecondition") return true;
    throw err;
  }
}
