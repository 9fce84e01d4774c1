// SetPassword: self-service with the current password, or an administrator
// (user.write) without it. The new password is always stored as argon2id, so
// a user whose imported hash (bcrypt, scrypt, PBKDF2, other argon2) verified
// here leaves with a native hash.
import { hashPassword, verifyPassword } from "../../crypto/passwords.js";
import { authorizeOverRoles } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";
import { recordFailedPasswordCheck } from "./lockout.js";
import { targetUser } from "./users.js";

export interface SetPasswordInput {
  userId: string;
  password: string;
  changeRequired: boolean;
  currentPassword?: string;
  verificationCode?: string;
}

export async function setPassword(ctx: Ctx, input: SetPasswordInput): Promise<Date> {
  const verifying = input.currentPassword !== undefined || input.verificationCode !== undefined;
  // Proving knowledge of the current password (or a code) is what lets a user act on itself without a role.
  const user = await targetUser(ctx, input.userId, "user.write", { selfAllowed: verifying });
  // An administrator's reset (no proof of the current password) is a takeover of the account.
  if (!verifying) await authorizeOverRoles(ctx, user.id);
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users have passwords");
  if (!input.password) throw invalidArgument("Errors.User.Password.Missing", "new_password is required", { field: "new_password" });
  checkPassword(input.password, await passwordComplexity(ctx, user.orgId));

  if (input.verificationCode !== undefined) {
    // No RPC issues password reset codes yet, so there is never one to match.
    throw failedPrecondition("Errors.User.Code.NotFound", "no password reset code was requested for this user");
  }
  if (input.currentPassword !== undefined) {
    // A locked user proves nothing with a password until an administrator unlocks it.
    if (user.state === "LOCKED") throw failedPrecondition("Errors.User.Locked", "the user is locked");
    const row = await ctx.db.user.findUniqueOrThrow({ where: { id: user.id }, select: { passwordHash: true } });
    const { ok } = row.passwordHash ? await verifyPassword(row.passwordHash, input.currentPassword) : { ok: false };
    if (!ok) {
      // Counted like a failed sign-in: the lockout policy may lock the user now.
      const locked = await recordFailedPasswordCheck(ctx, user);
      if (locked) throw failedPrecondition("Errors.User.Locked", "too many wrong passwords: the user is locked");
      throw invalidArgument("Errors.User.Password.Invalid", "the current password is wrong", { field: "current_password" });
    }
  }

  const passwordHash = await hashPassword(input.password);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.db.user.update({
      where: { id: user.id },
      data: {
        passwordHash,
        passwordChangeRequired: input.changeRequired,
        passwordChangedAt: now,
        ...(input.currentPassword !== undefined ? { failedPasswordAttempts: 0 } : {}),
        updatedAt: now,
      },
    });
    // A human waits in INITIAL until it has a password; no other state is changed by one.
    await tx.db.user.updateMany({ where: { id: user.id, state: "INITIAL" }, data: { state: "ACTIVE" } });
    await recordEvent(ctx, tx, {
      aggregateType: "user",
      aggregateId: user.id,
      orgId: user.orgId,
      type: "user.password.changed",
      payload: { changeRequired: input.changeRequired, verifiedBy: input.currentPassword !== undefined ? "currentPassword" : "administrator" },
    });
  });
  return now;
}
