// One-time codes by e-mail as a second factor: AddOTPEmail (the user's e-mail must be verified) and RemoveOTPEmail.
// A session asks for a code (challenges.otpEmail) and checks it (checks.otpEmail); see session-otp.ts.
import { commit, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { alreadyExists, failedPrecondition, notFound } from "../../errors.js";
import { authnSubject, humanOnly, requireFactorAllowed } from "./access.js";
import type { Change } from "./ports.js";

export async function addOtpEmail(ctx: Ctx, userId: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "register");
  humanOnly(user);
  await requireFactorAllowed(ctx, user.orgId, "otp_email");
  if (!user.email || !user.emailVerified) throw failedPrecondition("Errors.User.Email.NotVerified", "one-time codes by e-mail need a verified e-mail address");
  const at = await commit(ctx, async (tx, now) => {
    if (!(await tx.authn.setOtpEmail(user.id, now))) throw alreadyExists("Errors.User.OTPEmail.AlreadyAdded", "one-time codes by e-mail are set up already");
    return userEvent(user, "user.otp_email.added");
  });
  return { at, orgId: user.orgId };
}

export async function removeOtpEmail(ctx: Ctx, userId: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "remove");
  humanOnly(user);
  const at = await commit(ctx, async (tx) => {
    if (!(await tx.authn.setOtpEmail(user.id, null))) throw notFound("Errors.User.OTPEmail.NotFound", "one-time codes by e-mail are not set up");
    return userEvent(user, "user.otp_email.removed");
  });
  return { at, orgId: user.orgId };
}
