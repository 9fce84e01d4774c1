// SetPassword: self-service with the current password, or an administrator
// (user.write) without it, or with a password reset code (authn/password-reset.ts);
// and the one check of a user's password, which re-hashes an imported hash
// (bcrypt, scrypt, PBKDF2, other argon2) to argon2id on its first success. A
// new password is always stored as argon2id, differs from the last ones the
// history setting names, and the one it replaces joins the history.
import { hashPassword, verifyPassword } from "../../crypto/passwords.js";
import { commit, recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { failureKeys, rateLimited } from "../limits.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";
import { checkPasswordHistory } from "./authn/password-history.js";
import { setPasswordWithCode } from "./authn/password-reset.js";
import { isLockedOut, type KnownLock, lockedError, recordFailedPasswordCheck } from "./lockout.js";
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
  if (input.verificationCode !== undefined) {
    if (!input.password) throw invalidArgument("Errors.User.Password.Missing", "new_password is required", { field: "new_password" });
    return setPasswordWithCode(ctx, { ...input, code: input.verificationCode });
  }
  // Proving knowledge of the current password is what lets a user act on itself without a role.
  const user = await targetUser(ctx, input.userId, "user.write", { selfAllowed: input.currentPassword !== undefined });
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users have passwords");
  if (!input.password) throw invalidArgument("Errors.User.Password.Missing", "new_password is required", { field: "new_password" });

  // The current password is checked before the new one: a right one is a successful check (which migrates an
  // imported hash) even when the new password is then refused.
  if (input.currentPassword !== undefined) await proveCurrentPassword(ctx, user, input.currentPassword);
  const complexity = await passwordComplexity(ctx, user.orgId);
  checkPassword(input.password, complexity);
  await checkPasswordHistory(ctx, user, input.password, complexity.historyCount);

  return storePassword(ctx, user, {
    passwordHash: await hashPassword(input.password),
    changeRequired: input.changeRequired,
    verifiedBy: input.currentPassword !== undefined ? "currentPassword" : "administrator",
  });
}

async function proveCurrentPassword(ctx: Ctx, user: TargetUser, currentPassword: string): Promise<void> {
  const result = await checkUserPassword(ctx, user, currentPassword);
  if (result === "ok") return;
  if (result === "locked") throw lockedError();
  throw invalidArgument("Errors.User.Password.Invalid", "the current password is wrong", { field: "current_password" });
}

/**
 * Checks a user's password: every password check goes through here. A wrong one is counted like a failed sign-in
 * (the lockout policy may lock the user now: "locked"). A right one whose hash is imported, or argon2 with other
 * parameters than svc's, is replaced by a fresh argon2id hash of the same password (lazy migration), unless the
 * hash changed in the meantime. `known`: the stored hash and lock state as the caller read them with the user (a
 * session's user check), else read here.
 */
export async function checkUserPassword(
  ctx: Ctx,
  user: { id: string; orgId: string },
  password: string,
  known?: KnownLock & { passwordHash: string | null },
): Promise<"ok" | "wrong" | "locked"> {
  // Guessing at one user, or from one address, is slowed down before the lockout policy is reached (and one address
  // can lock out only a few users a window): past the limit no hash is even computed.
  const keys = failureKeys({ user: user.id }, ctx.peer);
  const wait = ctx.limits?.blockedFor(keys) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  // A locked user proves nothing with a password until an administrator unlocks it (a last owner: until its lock
  // period ends), whether or not the password is right.
  if (await isLockedOut(ctx, user, known)) return "locked";
  const stored = known ? known.passwordHash : await ctx.store.users.passwordHash(user.id);
  const result = stored ? await verifyPassword(stored, password) : { ok: false, needsRehash: false };
  if (!result.ok) {
    await ctx.limits?.failed(keys);
    return (await recordFailedPasswordCheck(ctx, user)) === "counted" ? "wrong" : "locked";
  }
  if (stored && result.needsRehash) await rehash(ctx, user, stored, password, result.format);
  return "ok";
}

async function rehash(ctx: Ctx, user: { id: string; orgId: string }, stored: string, password: string, from: string | undefined): Promise<void> {
  const fresh = await hashPassword(password);
  await ctx.store.transaction(async (tx) => {
    // Compare-and-set: a password set concurrently wins over the migration of the old one.
    if (await tx.users.replacePasswordHash(user.id, stored, fresh)) {
      await recordEvent(ctx, tx, userEvent(user, "user.password.rehashed", { from, to: "argon2id" }));
    }
  });
}

export interface PasswordChange {
  /** From hashNewPassword (or hashPassword after the policy check). */
  passwordHash: string;
  changeRequired: boolean;
  /** Proven by the current password (which also clears the failed attempts) or a reset code, or set by an administrator. */
  verifiedBy: "currentPassword" | "verificationCode" | "administrator";
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
      await tx.authn.keepPasswordInHistory(user.id, newId(), now);
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
