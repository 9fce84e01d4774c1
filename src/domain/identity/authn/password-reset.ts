// Password reset: PasswordReset makes a code (valid for one hour, usable once) and sends it to the user's e-mail,
// as a link from the caller's URL template or as the code, or returns it to a caller allowed to take it (access.ts);
// SetPassword with that code sets the new password. The code proves the reset, so the caller needs no more than
// to act on the user's authentication methods (the user itself, a login client, an administrator).
import { hashPassword } from "../../../crypto/passwords.js";
import type { Store } from "../../../store/index.js";
import { commit, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { codeMail } from "../../mail/mail-texts.js";
import { checkPassword, passwordComplexity } from "../../settings/settings.js";
import { storePassword } from "../user-passwords.js";
import { type AuthnSubject, authnSubject, humanOnly } from "./access.js";
import { checkUserCode, issueUserCode, spendUserCode } from "./codes.js";
import { checkDelivery, type Delivery, passwordCodeAction, renderLink, sendMail } from "./delivery.js";
import { requireEmail } from "./email.js";
import { checkPasswordHistory } from "./password-history.js";
import type { Change } from "./ports.js";

/** PasswordReset. */
export async function requestPasswordReset(ctx: Ctx, userId: string, delivery: Delivery): Promise<Change & { code?: string }> {
  const user = await authnSubject(ctx, userId, passwordCodeAction(delivery));
  humanOnly(user);
  const email = delivery.kind === "send" ? requireEmail(user) : undefined;
  checkDelivery(ctx, delivery);
  let code = "";
  const at = await commit(ctx, async (tx, now) => {
    code = await issueUserCode(tx, user, "password_reset", null, now);
    return userEvent(user, "user.password.reset.requested", { delivery: delivery.kind });
  });
  if (email === undefined || delivery.kind !== "send") return { at, orgId: user.orgId, code };
  const link = delivery.urlTemplate === undefined ? undefined : renderLink(delivery.urlTemplate, { Code: code, UserID: user.id, LoginName: user.loginName });
  await sendMail(ctx, await codeMail(ctx, user, email, "password_reset", { code, link, validMinutes: 60 }));
  return { at, orgId: user.orgId };
}

/** The input of SetPassword with a verification code. */
export type CodePasswordInput = { userId: string; password: string; changeRequired: boolean; code: string };

/**
 * SetPassword with verification_code: the code of PasswordReset (or, `kind` invite, of CreateInviteCode), spent in the
 * transaction that sets the password, with what `alsoWrite` adds to it.
 */
export async function setPasswordWithCode(
  ctx: Ctx,
  input: CodePasswordInput,
  kind: "password_reset" | "invite" = "password_reset",
  alsoWrite?: (tx: Store, user: AuthnSubject, target: string | null) => Promise<void>,
): Promise<Date> {
  const user = await authnSubject(ctx, input.userId, "send");
  humanOnly(user);
  const checked = await checkUserCode(ctx, user, kind, input.code, "verification_code");
  // A refused new password leaves the code for another try.
  const complexity = await passwordComplexity(ctx, user.orgId);
  checkPassword(input.password, complexity);
  await checkPasswordHistory(ctx, user, input.password, complexity.historyCount);
  const passwordHash = await hashPassword(input.password);
  return ctx.store.transaction(async (tx) => {
    await spendUserCode(tx, user, kind, checked.hash);
    await alsoWrite?.(tx, user, checked.target);
    return storePassword({ ...ctx, store: tx }, user, { passwordHash, changeRequired: input.changeRequired, verifiedBy: "verificationCode" });
  });
}
