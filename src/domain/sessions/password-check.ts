// The password factor of a session: the one password check of identity (lockout, brute-force limits, lazy re-hash),
// allowed by the login settings, and whether the password must be changed before the sign-in may finish.

import type { StoredSettingValue } from "../../store/sign-in-sql.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { lockedError } from "../identity/lockout.js";
import { checkUserPassword } from "../identity/user-passwords.js";
import { effectiveOf, effectiveSetting } from "../settings/settings.js";
import type { FactorCheck } from "./factors.js";
import type { SessionUserRow } from "./model.js";

const DAY_MS = 86_400_000;

export const passwordCheck: FactorCheck<"password"> = async (step, { password }) => {
  if (!step.login.allowUsernamePassword) {
    throw failedPrecondition("Errors.Session.Password.NotAllowed", "the login settings do not allow signing in with a password");
  }
  if (!password) throw invalidArgument("Errors.Session.Password.Missing", "checks.password.password is required", { field: "checks.password.password" });
  // The session's insert (or update) clears the count of wrong passwords in its own statement.
  const result = await checkUserPassword(step.ctx, step.user, password, step.checks, { callerClears: true });
  // While locked, the answer is the same whether or not the password was right.
  if (result === "locked") throw lockedError();
  if (result === "wrong") throw invalidArgument("Errors.User.Password.Invalid", "the password is wrong", { field: "checks.password.password" });
  // A successful sign-in starts the count of wrong passwords again, as a password change does.
  step.clearFailedPasswords = true;
  step.patch.passwordCheckedAt = step.now;
  step.patch.passwordChangeRequired = await passwordChangeRequired(step.ctx, step.user, step.now, step.checks.settings);
};

/**
 * An administrator asked for a new password, or it is older than the password expiry settings allow. `settings`: the
 * stored settings of the user's organization and instance when the caller read them (else read here).
 */
export async function passwordChangeRequired(
  ctx: Ctx,
  user: Pick<SessionUserRow, "orgId" | "passwordChangeRequired" | "passwordChangedAt">,
  now: Date,
  settings?: readonly StoredSettingValue[],
): Promise<boolean> {
  if (user.passwordChangeRequired) return true;
  const { maxAgeDays } = settings
    ? effectiveOf("password_expiry", settings, ctx.instanceId, user.orgId)
    : await effectiveSetting(ctx, "password_expiry", user.orgId);
  return maxAgeDays > 0 && user.passwordChangedAt !== null && now.getTime() - user.passwordChangedAt.getTime() > maxAgeDays * DAY_MS;
}
