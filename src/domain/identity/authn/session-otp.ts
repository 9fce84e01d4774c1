// The one-time-code factors of a session (registered in sessions/registry.ts): checks.totp with the user's ready
// TOTP (totp.ts: a code once, lockout), and e-mail OTP: challenges.otpEmail makes a six-digit code, kept on the
// session as its SHA-256 with a five-minute expiry, sent to the user's verified address or returned to a login
// client; checks.otpEmail spends it. Wrong codes count towards the lockout and are answered "the code is wrong".

import { sameHash } from "../../../crypto/tokens.js";
import { hasInstancePermission } from "../../access/permissions.js";
import { failedPrecondition, permissionDenied } from "../../errors.js";
import { codeMail } from "../../mail/mail-texts.js";
import type { FactorChallenge, FactorCheck } from "../../sessions/factors.js";
import type { SecondFactor } from "../../settings/values.js";
import { codeHash, newDigitCode } from "./codes.js";
import { checkDelivery, type Delivery, renderLink, sendMail } from "./delivery.js";
import { failedOtpCheck, otpCheckSucceeded, reserveOtpCheck } from "./otp-lockout.js";
import { checkTotp } from "./totp.js";

/** How long an e-mail code of a sign-in may be used. */
export const OTP_EMAIL_TTL_MS = 5 * 60_000;

function allowed(login: { secondFactors: SecondFactor[] }, factor: SecondFactor, what: string): void {
  if (!login.secondFactors.includes(factor)) throw failedPrecondition("Errors.User.Factor.NotAllowed", `the login settings do not allow ${what}`);
}

export const totpCheck: FactorCheck<"totp"> = async (step, { code }) => {
  allowed(step.login, "otp", "TOTP");
  step.patch.totpCheckedAt = await checkTotp(step.ctx, step.user, code, "checks.totp.code");
};

export const otpEmailChallenge: FactorChallenge<"otpEmail"> = async (step, input) => {
  allowed(step.login, "otp_email", "one-time codes by e-mail");
  const { ctx, user, session } = step;
  // Only a login client delivers codes itself: a user asking for its own would skip proving its mailbox.
  if (input.delivery === "return" && !hasInstancePermission(ctx, "session.write")) {
    throw permissionDenied("Errors.User.Code.ReturnDenied", "only a login client (IAM_LOGIN_CLIENT) may have the code returned");
  }
  const subject = await ctx.store.authn.subject(ctx.instanceId, user.id);
  if (!subject?.otpEmailAddedAt) throw failedPrecondition("Errors.User.OTPEmail.NotFound", "one-time codes by e-mail are not set up for the user");
  if (!subject.email || !subject.emailVerified) throw failedPrecondition("Errors.User.Email.NotVerified", "the user's e-mail address is not verified");
  const delivery: Delivery = input.delivery === "return" ? { kind: "return" } : { kind: "send", urlTemplate: input.urlTemplate };
  const names = ["Code", "UserID", "LoginName", "SessionID"] as const;
  checkDelivery(ctx, delivery, names);
  const code = newDigitCode();
  step.patch.otpEmailCodeHash = codeHash(code);
  step.patch.otpEmailExpiresAt = new Date(step.now.getTime() + OTP_EMAIL_TTL_MS);
  if (delivery.kind === "return") return { otpEmail: code };
  const values = { Code: code, UserID: user.id, LoginName: subject.loginName, SessionID: session.id };
  const link = delivery.urlTemplate === undefined ? undefined : renderLink(delivery.urlTemplate, values, names);
  await sendMail(ctx, await codeMail(ctx, subject, subject.email, "otp_email", { code, link, validMinutes: OTP_EMAIL_TTL_MS / 60_000 }));
  return {};
};

export const otpEmailCheck: FactorCheck<"otpEmail"> = async (step, { code }) => {
  allowed(step.login, "otp_email", "one-time codes by e-mail");
  const { ctx, user, session, now } = step;
  const field = "checks.otp_email.code";
  if (!session.otpEmailCodeHash || !session.otpEmailExpiresAt) {
    throw failedPrecondition("Errors.Session.OTPEmail.NoChallenge", "no e-mail code was requested in this session (challenges.otp_email)");
  }
  if (session.otpEmailExpiresAt.getTime() <= now.getTime()) throw failedPrecondition("Errors.User.Code.Expired", "the code has expired: request a new one");
  const reservation = await reserveOtpCheck(ctx, user);
  if (code.length > 64 || !sameHash(codeHash(code), session.otpEmailCodeHash)) throw await failedOtpCheck(ctx, user, reservation, field);
  await otpCheckSucceeded(ctx, user);
  // Spent: the session row keeps no code that works again.
  step.patch.otpEmailCheckedAt = now;
  step.patch.otpEmailCodeHash = null;
  step.patch.otpEmailExpiresAt = null;
};
