// The lockout policy for one-time codes (TOTP, e-mail OTP): wrong codes counted in the database (User.failedOtpAttempts,
// every replica sees the same count), the user locked when the count reaches maxOtpAttempts, the count reset by a right
// code. As with passwords (identity/lockout.ts), a last owner is not locked: only its codes are refused for a while.
// Guessing is also slowed by the brute-force limits per user and address before the policy is reached.
import { recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { invalidArgument } from "../../errors.js";
import { failureKeys, rateLimited } from "../../limits.js";
import { lockoutPolicy } from "../../settings/settings.js";
import { isLastOwner, lockedError, OWNER_PASSWORD_LOCK_MS } from "../lockout.js";

type User = { id: string; orgId: string };

/** The one answer to a wrong, reused or expired one-time code: it never says which. */
export const wrongCode = (field = "code") => invalidArgument("Errors.User.Code.Invalid", "the code is wrong", { field });

/** Refuses a check before it is made: the caller or user past the brute-force limits, or the user locked out. */
export async function beforeOtpCheck(ctx: Ctx, user: User): Promise<void> {
  const wait = ctx.limits?.blockedFor(failureKeys({ user: user.id }, ctx.peer)) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  const row = await ctx.store.authn.otpLock(user.id);
  if (!row) return;
  if (row.state === "LOCKED") throw lockedError();
  if (row.lockedAt === null) return;
  const { maxOtpAttempts: limit } = await lockoutPolicy(ctx, user.orgId);
  if (limit > 0 && row.failedOtpAttempts >= limit && ctx.clock().getTime() - row.lockedAt.getTime() < OWNER_PASSWORD_LOCK_MS) throw lockedError();
}

/**
 * Counts a wrong code (own transaction: the count stays whatever the request does next) and returns the error to
 * answer: the wrong code, or the lock it caused.
 */
export async function failedOtpCheck(ctx: Ctx, user: User, field?: string): Promise<Error> {
  await ctx.limits?.failed(failureKeys({ user: user.id }, ctx.peer));
  const policy = await lockoutPolicy(ctx, user.orgId);
  const now = ctx.clock();
  const locked = await ctx.store.transaction(async (tx) => {
    const after = await tx.authn.countFailedOtp(user.id);
    await recordEvent(ctx, tx, userEvent(user, "user.otp.check.failed"));
    const limit = policy.maxOtpAttempts;
    if (limit === 0 || after.failedOtpAttempts < limit || (after.state !== "ACTIVE" && after.state !== "INITIAL")) return false;
    const attempts = { failedOtpAttempts: after.failedOtpAttempts };
    if (await isLastOwner({ ...ctx, store: tx }, user)) {
      await tx.users.update(user.id, { lockedAt: now });
      const until = new Date(now.getTime() + OWNER_PASSWORD_LOCK_MS).toISOString();
      await recordEvent(ctx, tx, userEvent(user, "user.otp.locked", { reason: "lockout policy, last owner", until, ...attempts }));
      return true;
    }
    await tx.users.update(user.id, { state: "LOCKED", lockedAt: now, updatedAt: now });
    await tx.auth.invalidate({ userId: user.id });
    await recordEvent(ctx, tx, userEvent(user, "user.locked", { reason: "lockout policy (one-time codes)", ...attempts }));
    return true;
  });
  return locked ? lockedError() : wrongCode(field);
}

/** A right code: the count of wrong ones starts again. */
export async function otpCheckSucceeded(ctx: Ctx, user: User): Promise<void> {
  await ctx.store.authn.resetFailedOtp(user.id);
}
