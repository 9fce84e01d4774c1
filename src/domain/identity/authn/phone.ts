// Phone verification by code: svc sends no SMS, so the code is returned to the caller (an administrator or a login
// client with user.authn.write, never the user itself) to deliver by its own means, and VerifyPhone with that code
// marks the number verified. The code names the number it was made for: if the phone changes meanwhile, it verifies
// nothing. An administrator may also set a number verified directly (UpdateUser's phone.is_verified).
import { commit, recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition } from "../../errors.js";
import { authnSubject, humanOnly } from "./access.js";
import { checkUserCode, issueUserCode, spendUserCode } from "./codes.js";
import type { Change } from "./ports.js";

/** SendPhoneCode: a new verification code of the user's phone number (replacing an earlier one), returned. */
export async function returnPhoneCode(ctx: Ctx, userId: string): Promise<Change & { code: string }> {
  const user = await authnSubject(ctx, userId, "returnCode");
  humanOnly(user);
  const phone = user.phone;
  if (!phone) throw failedPrecondition("Errors.User.Phone.Missing", "the user has no phone number");
  if (user.phoneVerified) throw failedPrecondition("Errors.User.Phone.AlreadyVerified", "the phone number is verified already");
  let code = "";
  const at = await commit(ctx, async (tx, now) => {
    code = await issueUserCode(tx, user, "phone_verification", phone, now);
    return userEvent(user, "user.phone.code.added", { delivery: "return" });
  });
  return { at, orgId: user.orgId, code };
}

/** VerifyPhone: the code made for the number marks it verified. */
export async function verifyPhone(ctx: Ctx, userId: string, code: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "send");
  humanOnly(user);
  const checked = await checkUserCode(ctx, user, "phone_verification", code, "verification_code");
  const now = ctx.clock();
  const verified = await ctx.store.transaction(async (tx) => {
    await spendUserCode(tx, user, "phone_verification", checked.hash);
    if (checked.target === null || !(await tx.authn.verifyPhone(user.id, checked.target, now))) return false;
    await tx.auth.invalidate({ userId: user.id });
    await recordEvent(ctx, tx, userEvent(user, "user.phone.verified", { phone: checked.target }));
    return true;
  });
  if (!verified) throw failedPrecondition("Errors.User.Phone.Changed", "the phone number changed since the code was made: request a new one");
  return { at: now, orgId: user.orgId };
}
