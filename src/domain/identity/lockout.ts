// The lockout policy for passwords: checks counted in the database (every replica sees the same count), each one
// reserved before its hash is verified (store: reservePasswordCheck), so that concurrent guesses cannot outrun the
// limit — at most maxPasswordAttempts verifications run before the lock, and none while it holds. A right password
// clears the count (the caller: a session's insert, or checkUserPassword).
//
// Reaching the limit locks the user's password for a while (lockoutDurationSeconds, doubled by each further lock
// period — one more wrong password after a period ended — up to maxLockoutDurationSeconds), as Keycloak's temporary
// lockout does: anybody who knows a login name can cause a lock, so a lock must not deny the account for good. The
// user stays ACTIVE (tokens, sessions, passkeys and external sign-ins keep working) and a completed e-mail password
// reset ends the lock (authn/password-reset.ts). With permanentLockout the user is LOCKED until an administrator
// unlocks it or the e-mail reset proves the mailbox — except a user whose lock would leave the instance without an
// active IAM_OWNER or its organization without an active ORG_OWNER: its password is locked for
// OWNER_PASSWORD_LOCK_MS only. While locked the answer never says whether the password was right: no hash is verified.
import { recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition } from "../errors.js";
import { keepActiveOrgOwners } from "../orgs/members.js";
import { queueBackchannelLogout } from "../sessions/backchannel-logout.js";
import type { LockoutPolicy } from "../settings/values.js";
import { keepAnActiveInstanceOwner } from "./user-access.js";

/** How long the password of a last owner stays refused under a permanent lockout policy. */
export const OWNER_PASSWORD_LOCK_MS = 15 * 60_000;

export const lockedError = () => failedPrecondition("Errors.User.Locked", "the user is locked");

/** The lock periods of a policy: the temporary back-off, or (permanent lockout) the fixed period of a last owner. */
export function lockPeriods(policy: LockoutPolicy): { limit: number; firstLockSeconds: number; maxLockSeconds: number } {
  const owner = OWNER_PASSWORD_LOCK_MS / 1000;
  return policy.permanentLockout
    ? { limit: policy.maxPasswordAttempts, firstLockSeconds: owner, maxLockSeconds: owner }
    : { limit: policy.maxPasswordAttempts, firstLockSeconds: policy.lockoutDurationSeconds, maxLockSeconds: policy.maxLockoutDurationSeconds };
}

/** The length of the lock period that `attempts` (at or past the limit) started, in ms. Pure. */
export function lockPeriodMs(periods: { limit: number; firstLockSeconds: number; maxLockSeconds: number }, attempts: number): number {
  const doublings = Math.min(Math.max(attempts - periods.limit, 0), 40);
  return Math.min(periods.firstLockSeconds * 2 ** doublings, periods.maxLockSeconds) * 1000;
}

/**
 * Reserves a password check of the user (see the store's reservePasswordCheck): the attempts counted with it, or
 * null when the user may not try now (LOCKED, or within a lock period) and no hash may be verified.
 *
 * A lock that is still pending is only the reservations of checks in flight (a burst of sign-ins of one account
 * reaching maxPasswordAttempts together): if their passwords are right, their success ends it; a wrong one confirms it.
 * A refused check waits for that outcome and tries again, so right passwords are never refused by each other, and no
 * more than the limit's checks are ever being verified. A confirmed lock (or LOCKED) refuses at once. A pending lock
 * older than PENDING_LOCK_MS is taken as confirmed (its check was abandoned: the replica died mid-verification).
 * Right and wrong passwords wait alike (none is verified yet), so the wait tells nothing.
 */
export async function reservePasswordCheck(ctx: Ctx, user: { id: string }, policy: LockoutPolicy): Promise<number | null> {
  const deadline = Date.now() + PENDING_LOCK_MS;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const reserved = await ctx.store.users.reservePasswordCheck(user.id, lockPeriods(policy), ctx.clock());
    if (reserved) return reserved.failedPasswordAttempts;
    const lock = await ctx.store.users.passwordLock(user.id);
    if (!lock || lock.state === "LOCKED") return null;
    // Refused, yet no lock now: a check in flight proved its password right between the refusal and this read (its
    // success cleared the count). Try again at once.
    const cleared = lock.lockedAt === null;
    const pending = !cleared && lock.passwordLockPending && ctx.clock().getTime() - (lock.lockedAt as Date).getTime() < PENDING_LOCK_MS;
    if ((!cleared && !pending) || Date.now() + delay > deadline) return null;
    if (pending) await new Promise((r) => setTimeout(r, delay));
  }
}

/** Longer than any password verification takes, even on a loaded machine; a pending lock older than this holds. */
export const PENDING_LOCK_MS = 15_000;

/**
 * A reserved check whose password was wrong: audited, and when its reservation reached the limit the lock it started
 * is recorded (under permanentLockout the user is LOCKED, its tokens revoked). Returns whether the user is locked now.
 */
export async function recordFailedPasswordCheck(ctx: Ctx, user: { id: string; orgId: string }, policy: LockoutPolicy, attempts: number): Promise<boolean> {
  const now = ctx.clock();
  const limit = policy.maxPasswordAttempts;
  return ctx.store.transaction(async (tx) => {
    await recordEvent(ctx, tx, userEvent(user, "user.password.check.failed"));
    if (limit === 0 || attempts < limit) return false;
    // The lock this check's reservation started (pending while it was verified) holds.
    await tx.users.confirmPasswordLock(user.id);
    const counted = { failedPasswordAttempts: attempts };
    if (policy.permanentLockout && !(await isLastOwner({ ...ctx, store: tx }, user))) {
      // Only from a usable state: a concurrent administrator's change (deactivated, deleted) wins.
      if (await tx.users.updateInState(user.id, ["ACTIVE", "INITIAL"], { state: "LOCKED", lockedAt: now, updatedAt: now })) {
        await tx.auth.invalidate({ userId: user.id });
        // A lock ends the user's sign-in sessions, telling their OIDC and SAML participants, and its OAuth tokens, as
        // an administrator's lock does (issue 29): someone was guessing the password, and an unlock must not revive
        // them. Its personal access tokens stay (credentials, not sessions: anybody who knows the login name can
        // cause this lock, and must not be able to wipe them with it).
        await queueBackchannelLogout(tx, ctx.instanceId, { userId: user.id }, now);
        const endedSessions = await tx.sessions.terminateOfUser(ctx.instanceId, user.id, undefined, now);
        const revokedTokens = await tx.tokens.revokeIssued({ userId: user.id }, now);
        const revokedRefreshTokens = await tx.refreshTokens.revokeOfUser(user.id, now);
        await recordEvent(
          ctx,
          tx,
          userEvent(user, "user.locked", {
            reason: "lockout policy",
            ...counted,
            ...(endedSessions ? { endedSessions } : {}),
            ...(revokedTokens ? { revokedTokens } : {}),
            ...(revokedRefreshTokens ? { revokedRefreshTokens } : {}),
          }),
        );
      }
      return true;
    }
    const until = new Date(now.getTime() + lockPeriodMs(lockPeriods(policy), attempts)).toISOString();
    const reason = policy.permanentLockout ? "lockout policy, last owner" : "lockout policy";
    await recordEvent(ctx, tx, userEvent(user, "user.password.locked", { reason, until, ...counted }));
    return true;
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
