// SetPassword: self-service with the current password, or an administrator
// (user.write) without it. The new password is always stored as argon2id, so
// a user whose imported hash (bcrypt, scrypt, PBKDF2, other argon2) verified
// here leaves with a native hash.
import { hashPassword, verifyPassword } from "../../crypto/passwords.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";
import { checkNotLockedOut, lockedError, recordFailedPasswordCheck } from "./lockout.js";
import { type TargetUser, targetUser } from "./user-access.js";

export interface SetPasswordInput {
  userId: string;
  password: string;
  changeRequired: boolean;
  currentPassword?: string;
  verificationCode?: string;
}

/** Checks a new password against its organization's complexity policy and hashes it: the slow part, kept out of transactions. */
export async function hashNewPassword(ctx: Ctx, orgId: string, password: string): Promise<string> {
  checkPassword(password, await passwordComplexity(ctx, orgId));
  return hashPassword(password);
}

export async function setPassword(ctx: Ctx, input: SetPasswordInput): Promise<Date> {
  const verifying = input.currentPassword !== undefined || input.verificationCode !== undefined;
  // Proving knowledge of the current password (or a code) is what lets a user act on itself without a role.
  const user = await targetUser(ctx, input.userId, "user.write", { selfAllowed: verifying });
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users have passwords");
  if (!input.password) throw invalidArgument("Errors.User.Password.Missing", "new_password is required", { field: "new_password" });
  checkPassword(input.password, await passwordComplexity(ctx, user.orgId));

  if (input.verificationCode !== undefined) {
    // No RPC issues password reset codes yet, so there is never one to match.
    throw failedPrecondition("Errors.User.Code.NotFound", "no password reset code was requested for this user");
  }
  if (input.currentPassword !== undefined) await proveCurrentPassword(ctx, user, input.currentPassword);

  return storePassword(ctx, user, {
    passwordHash: await hashPassword(input.password),
    changeRequired: input.changeRequired,
    verifiedBy: input.currentPassword !== undefined ? "currentPassword" : "administrator",
  });
}

async function proveCurrentPassword(ctx: Ctx, user: TargetUser, currentPassword: string): Promise<void> {
  // A locked user proves nothing with a password until an administrator unlocks it (a last owner: until its lock period ends).
  await checkNotLockedOut(ctx, user);
  const hash = await ctx.store.users.passwordHash(user.id);
  const { ok } = hash ? await verifyPassword(hash, currentPassword) : { ok: false };
  if (ok) return;
  // Counted like a failed sign-in: the lockout policy may lock the user now.
  if ((await recordFailedPasswordCheck(ctx, user)) !== "counted") throw lockedError();
  throw invalidArgument("Errors.User.Password.Invalid", "the current password is wrong", { field: "current_password" });
}

export interface PasswordChange {
  /** From hashNewPassword (or hashPassword after the policy check). */
  passwordHash: string;
  changeRequired: boolean;
  /** Proven by the current password (which also clears the failed attempts), or set by an administrator. */
  verifiedBy: "currentPassword" | "administrator";
}

/**
 * Stores a human user's new password with its event; runs in (or joins) one transaction. Callers have checked
 * the caller's right to set it.
 */
export async function storePassword(ctx: Ctx, user: { id: string; orgId: string }, change: PasswordChange): Promise<Date> {
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      await tx.users.update(user.id, {
        passwordHash: change.passwordHash,
        passwordChangeRequired: change.changeRequired,
        passwordChangedAt: now,
        // The current password proved: the count starts again (and a last owner's password lock ends).
        ...(change.verifiedBy === "currentPassword" ? { failedPasswordAttempts: 0, lockedAt: null } : {}),
        updatedAt: now,
      });
      // A human waits in INITIAL until it has a password; no other state is changed by one.
      await tx.users.updateInState(user.id, ["INITIAL"], { state: "ACTIVE" });
      return userEvent(user, "user.password.changed", { changeRequired: change.changeRequired, verifiedBy: change.verifiedBy });
    },
    now,
  );
}
