// SetPassword: self-service with the current password, or an administrator
// (user.write) without it, or with a password reset code (authn/password-reset.ts) or an invitation's code
// (authn/invite.ts);
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
import { queueBackchannelLogout } from "../sessions/backchannel-logout.js";
import { checkPassword, effectiveOf, lockoutPolicy, passwordComplexity } from "../settings/settings.js";
import { acceptInvite, isInviteCode } from "./authn/invite.js";
import { checkPasswordHistory } from "./authn/password-history.js";
import { setPasswordWithCode } from "./authn/password-reset.js";
import { lockedError, recordFailedPasswordCheck, reservePasswordCheck } from "./lockout.js";
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
    const withCode = { ...input, code: input.verificationCode };
    return (await isInviteCode(ctx, input.userId, input.verificationCode)) ? acceptInvite(ctx, withCode) : setPasswordWithCode(ctx, withCode);
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

/** What a caller read with the user: its stored hash and the stored settings of its organization and instance. */
export interface KnownPassword {
  passwordHash: string | null;
  settings: readonly { ownerId: string; kind: string; value: unknown }[];
}

/**
 * Checks a user's password: every password check goes through here. The check is reserved against the lockout policy
 * before the hash is verified (identity/lockout.ts): while locked — also past the limit by concurrent checks — no hash
 * is verified and the answer is "locked" whether or not the password is right. A wrong one is counted like a failed
 * sign-in (it may lock the user now: "locked"). A right one clears the count, unless `callerClears` (a session's
 * insert clears it in its own statement); one whose hash is imported, or argon2 with other parameters than svc's, is
 * replaced by a fresh argon2id hash of the same password (lazy migration), unless the hash changed in the meantime.
 * `known`: the stored hash and settings as the caller read them with the user (a session's user check), else read here.
 */
export async function checkUserPassword(
  ctx: Ctx,
  user: { id: string; orgId: string },
  password: string,
  known?: KnownPassword,
  opts: { callerClears?: boolean } = {},
): Promise<"ok" | "wrong" | "locked"> {
  // Guessing at one user, or from one address, is slowed down before the lockout policy is reached (and one address
  // can lock out only a few users a window): past the limit no hash is even computed.
  const keys = failureKeys({ user: user.id }, ctx.peer);
  const wait = ctx.limits?.blockedFor(keys) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  const policy = known ? effectiveOf("lockout", known.settings, ctx.instanceId, user.orgId) : await lockoutPolicy(ctx, user.orgId);
  const attempts = await reservePasswordCheck(ctx, user, policy);
  if (attempts === null) return "locked";
  const stored = known ? known.passwordHash : await ctx.store.users.passwordHash(user.id);
  const result = stored ? await verifyPassword(stored, password) : { ok: false, needsRehash: false };
  if (!result.ok) {
    await ctx.limits?.failed(keys);
    return (await recordFailedPasswordCheck(ctx, user, policy, attempts)) ? "locked" : "wrong";
  }
  if (!opts.callerClears) await ctx.store.users.clearFailedPasswords(user.id);
  if (stored && result.needsRehash) await rehash(ctx, user, stored, password, result.format);
  return "ok";
}

// An unknown login name costs what a known one does: one password hash verified (against a hash of nothing).
let decoy: Promise<string> | undefined;

/**
 * The password check of a login name that names no user: the same work as a real check (one argon2id verification)
 * and, like a wrong password, counted against the brute-force limits of the login name and of the address (`address`,
 * else the request's peer), so that it is neither free hashing nor a way to tell unknown names from known ones. Past a
 * limit: ResourceExhausted (Errors.RateLimited) before any hash is computed, as for a known user. Always "wrong".
 */
export async function checkUnknownUserPassword(ctx: Ctx, loginName: string, password: string, address: string | undefined = ctx.peer): Promise<"wrong"> {
  const keys = failureKeys({ user: `name:${loginName.trim().toLowerCase()}` }, address);
  const wait = ctx.limits?.blockedFor(keys) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  decoy ??= hashPassword("svc-decoy-password");
  await verifyPassword(await decoy, password).catch(() => undefined);
  await ctx.limits?.failed(keys);
  return "wrong";
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
/** The session the user itself changes its password from (presented, or its access token's), which stays. */
function changingSession(ctx: Ctx, userId: string): string | undefined {
  if (ctx.principal.userId !== userId) return undefined;
  return ctx.session?.id ?? ctx.principal.sessionId;
}

export async function storePassword(ctx: Ctx, user: { id: string; orgId: string }, change: PasswordChange): Promise<Date> {
  const now = ctx.clock();
  const proven = change.verifiedBy !== "administrator";
  const policy = change.verifiedBy === "verificationCode" ? await lockoutPolicy(ctx, user.orgId) : undefined;
  return commit(
    ctx,
    async (tx) => {
      await tx.authn.keepPasswordInHistory(user.id, newId(), now);
      const lock = policy ? await tx.users.passwordLock(user.id) : null;
      await tx.users.update(user.id, {
        passwordHash: change.passwordHash,
        passwordChangeRequired: change.changeRequired,
        passwordChangedAt: now,
        // The current password, or a reset code (the mailbox), proved: the count starts again and a password lock ends.
        ...(proven ? { failedPasswordAttempts: 0, lockedAt: null, passwordLockPending: false } : {}),
        updatedAt: now,
      });
      // As the hosted login promises: an e-mail reset also ends a permanent lock the lockout policy set (an
      // administrator's lock resets the count, so it is never taken for one).
      if (policy && lock?.state === "LOCKED" && policy.maxPasswordAttempts > 0 && lock.failedPasswordAttempts >= policy.maxPasswordAttempts) {
        if (await tx.users.updateInState(user.id, ["LOCKED"], { state: "ACTIVE" })) {
          await recordEvent(ctx, tx, userEvent(user, "user.unlocked", { state: "ACTIVE", reason: "password reset" }));
        }
      }
      // A human waits in INITIAL until it has a password; no other state is changed by one.
      await tx.users.updateInState(user.id, ["INITIAL"], { state: "ACTIVE" });
      // Whoever knew the old password may hold a session made with it: every session of the user ends with its
      // tokens (OWASP ASVS V3.3.3), but the one the user changed it from.
      const keep = changingSession(ctx, user.id);
      await queueBackchannelLogout(tx, ctx.instanceId, { userId: user.id, ...(keep ? { keep } : {}) }, now);
      const endedSessions = await tx.sessions.terminateOfUser(ctx.instanceId, user.id, keep, now);
      if (endedSessions) await tx.auth.invalidate({ userId: user.id });
      return userEvent(user, "user.password.changed", {
        changeRequired: change.changeRequired,
        verifiedBy: change.verifiedBy,
        ...(endedSessions ? { endedSessions } : {}),
      });
    },
    now,
  );
}
