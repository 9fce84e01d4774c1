// The lockout policy for one-time codes (TOTP, e-mail OTP), the same as for passwords (identity/lockout.ts) with its own
// count and lock period (User.failedOtpAttempts, User.otpLockedAt): every check is reserved in the database before the
// code is verified, so that concurrent guesses cannot outrun maxOtpAttempts; reaching it locks the codes for
// lockoutDurationSeconds, doubled by each further period up to maxLockoutDurationSeconds (the user stays ACTIVE and
// its password still works, its codes are refused: a temporary back-off, as for passwords, because whoever knows
// the password could otherwise lock the user for good). With permanentLockout the user is LOCKED — except a last
// owner, whose codes are refused for OWNER_PASSWORD_LOCK_MS. A right code clears the count and the period; a right
// password does not (the period is the second factor's own). While the codes are locked no code is verified, so the
// answer never says whether a code was right. Guessing is also slowed by the brute-force limits per user and address.
import { recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { invalidArgument } from "../../errors.js";
import { failureKeys, rateLimited } from "../../limits.js";
import { lockoutPolicy } from "../../settings/settings.js";
import type { LockoutPolicy } from "../../settings/values.js";
import { isLastOwner, lockedError, lockPeriodMs, OWNER_PASSWORD_LOCK_MS } from "../lockout.js";

type User = { id: string; orgId: string };

/** The one answer to a wrong, reused or expired one-time code: it never says which. */
export const wrongCode = (field = "code") => invalidArgument("Errors.User.Code.Invalid", "the code is wrong", { field });

/** The codes' lock periods of a policy: the temporary back-off, or (permanent lockout) the fixed period of a last owner. */
export function otpLockPeriods(policy: LockoutPolicy): { limit: number; firstLockSeconds: number; maxLockSeconds: number } {
  const owner = OWNER_PASSWORD_LOCK_MS / 1000;
  return policy.permanentLockout
    ? { limit: policy.maxOtpAttempts, firstLockSeconds: owner, maxLockSeconds: owner }
    : { limit: policy.maxOtpAttempts, firstLockSeconds: policy.lockoutDurationSeconds, maxLockSeconds: policy.maxLockoutDurationSeconds };
}

/** A check of a code the user may make now, reserved (counted as failed until it succeeds). */
export interface OtpReservation {
  policy: LockoutPolicy;
  attempts: number;
}

/**
 * Reserves a check of the user's one-time code before it is verified: refused (nothing verified) when the caller or
 * the user is past the brute-force limits, or the user's codes are locked.
 */
export async function reserveOtpCheck(ctx: Ctx, user: User): Promise<OtpReservation> {
  const wait = ctx.limits?.blockedFor(failureKeys({ user: user.id }, ctx.peer)) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  const policy = await lockoutPolicy(ctx, user.orgId);
  const reserved = await ctx.store.authn.reserveOtpCheck(user.id, otpLockPeriods(policy), ctx.clock());
  if (!reserved) throw lockedError();
  return { policy, attempts: reserved.failedOtpAttempts };
}

/**
 * A reserved check whose code was wrong (or reused, or expired): counted by the limits, audited, and when its
 * reservation reached the limit the lock it started is recorded. Returns the error to answer: the wrong code, or the
 * lock it caused.
 */
export async function failedOtpCheck(ctx: Ctx, user: User, reservation: OtpReservation, field?: string): Promise<Error> {
  await ctx.limits?.failed(failureKeys({ user: user.id }, ctx.peer));
  const { policy, attempts } = reservation;
  const limit = policy.maxOtpAttempts;
  const now = ctx.clock();
  const locked = await ctx.store.transaction(async (tx) => {
    await recordEvent(ctx, tx, userEvent(user, "user.otp.check.failed"));
    if (limit === 0 || attempts < limit) return false;
    const counted = { failedOtpAttempts: attempts };
    if (policy.permanentLockout && !(await isLastOwner({ ...ctx, store: tx }, user))) {
      // Only from a usable state: a concurrent administrator's change (deactivated, deleted) wins.
      if (await tx.users.updateInState(user.id, ["ACTIVE", "INITIAL"], { state: "LOCKED", lockedAt: now, updatedAt: now })) {
        await tx.auth.invalidate({ userId: user.id });
        await recordEvent(ctx, tx, userEvent(user, "user.locked", { reason: "lockout policy (one-time codes)", ...counted }));
      }
      return true;
    }
    const until = new Date(now.getTime() + lockPeriodMs(otpLockPeriods(policy), attempts)).toISOString();
    const reason = policy.permanentLockout ? "lockout policy, last owner" : "lockout policy";
    await recordEvent(ctx, tx, userEvent(user, "user.otp.locked", { reason, until, ...counted }));
    return true;
  });
  return locked ? lockedError() : wrongCode(field);
}

/** A right code: the count of wrong ones and the codes' lock period start again. */
export async function otpCheckSucceeded(ctx: Ctx, user: User): Promise<void> {
  await ctx.store.authn.resetFailedOtp(user.id);
}
