// E-mail verification: a code for the user's current e-mail address, sent to it (or returned to a login client or
// administrator to deliver), and VerifyEmail with that code. The code names the address it was made for: if the
// e-mail changes meanwhile, it verifies nothing.
import { commit, recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition } from "../../errors.js";
import { codeMail } from "../../mail/mail-texts.js";
import { type AuthnSubject, authnSubject, humanOnly } from "./access.js";
import { checkUserCode, issueUserCode, spendUserCode } from "./codes.js";
import { checkDelivery, type Delivery, renderLink, sendMail } from "./delivery.js";
import type { Change } from "./ports.js";

export function requireEmail(user: AuthnSubject): string {
  if (!user.email) throw failedPrecondition("Errors.User.Email.Missing", "the user has no e-mail address");
  return user.email;
}

/** SendEmailCode: the verification code of the user's e-mail; returned only when asked for (and allowed). */
export async function sendEmailCode(ctx: Ctx, userId: string, delivery: Delivery): Promise<Change & { code?: string }> {
  const user = await authnSubject(ctx, userId, delivery.kind === "return" ? "returnCode" : "send");
  humanOnly(user);
  const email = requireEmail(user);
  if (user.emailVerified) throw failedPrecondition("Errors.User.Email.AlreadyVerified", "the e-mail address is verified already");
  checkDelivery(ctx, delivery);
  let code = "";
  const at = await commit(ctx, async (tx, now) => {
    code = await issueUserCode(tx, user, "email_verification", email, now);
    return userEvent(user, "user.email.code.added", { delivery: delivery.kind });
  });
  if (delivery.kind === "return") return { at, orgId: user.orgId, code };
  const link = delivery.urlTemplate === undefined ? undefined : renderLink(delivery.urlTemplate, { Code: code, UserID: user.id, LoginName: user.loginName });
  await sendMail(ctx, await codeMail(ctx, user, email, "verify_email", { code, link, validMinutes: 60 }));
  return { at, orgId: user.orgId };
}

/** VerifyEmail: the code sent to the address marks it verified. */
export async function verifyEmail(ctx: Ctx, userId: string, code: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "send");
  humanOnly(user);
  const checked = await checkUserCode(ctx, user, "email_verification", code, "verification_code");
  const changed = () => failedPrecondition("Errors.User.Email.Changed", "the e-mail address changed since the code was sent: request a new one");
  const now = ctx.clock();
  const verified = await ctx.store.transaction(async (tx) => {
    await spendUserCode(tx, user, "email_verification", checked.hash);
    if (checked.target === null || !(await tx.authn.verifyEmail(user.id, checked.target, now))) return false;
    await tx.auth.invalidate({ userId: user.id });
    await recordEvent(ctx, tx, userEvent(user, "user.email.verified", { email: checked.target }));
    return true;
  });
  if (!verified) throw changed();
  return { at: now, orgId: user.orgId };
}
