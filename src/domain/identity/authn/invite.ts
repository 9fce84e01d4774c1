// Invitations: an administrator creates a user without a password, then CreateInviteCode makes a code (valid for 72
// hours, usable once) and sends it to the user's e-mail as a link to the hosted login's invitation page (or to the
// caller's URL template), or returns it to a caller allowed to take it. The invited user opens the link and chooses a
// password: SetPassword with the code sets it and, since the code travelled to that address, verifies the e-mail. A
// user who can sign in already (a password or a passkey) is not invited: a password reset is what it needs.
import { sameHash } from "../../../crypto/tokens.js";
import type { Store } from "../../../store/index.js";
import { commit, recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition } from "../../errors.js";
import { codeMail } from "../../mail/mail-texts.js";
import { type AuthnSubject, authnSubject, humanOnly } from "./access.js";
import { CODE_LIFETIME_MS, codeHash, issueUserCode } from "./codes.js";
import { checkDelivery, type Delivery, passwordCodeAction, renderLink, sendMail } from "./delivery.js";
import { requireEmail } from "./email.js";
import { type CodePasswordInput, setPasswordWithCode } from "./password-reset.js";
import type { Change } from "./ports.js";

/** The hosted login's page of an invitation link, when the caller names no URL template of its own. */
export const INVITE_PAGE = "/ui/login/invite";

async function assertNotSetUp(ctx: Ctx, user: AuthnSubject): Promise<void> {
  const m = await ctx.store.authn.methods(user.id);
  if (m.password || m.passkey) {
    throw failedPrecondition("Errors.User.Invite.AlreadySetUp", "the user can sign in already: send a password reset instead of an invitation");
  }
}

/** CreateInviteCode: a new code (replacing an earlier one), sent as a link to the user's e-mail, or returned. */
export async function createInviteCode(ctx: Ctx, userId: string, delivery: Delivery): Promise<Change & { code?: string }> {
  const user = await authnSubject(ctx, userId, passwordCodeAction(delivery));
  humanOnly(user);
  const email = requireEmail(user);
  await assertNotSetUp(ctx, user);
  checkDelivery(ctx, delivery);
  let code = "";
  const at = await commit(ctx, async (tx, now) => {
    code = await issueUserCode(tx, user, "invite", email, now);
    return userEvent(user, "user.invite.code.added", { delivery: delivery.kind });
  });
  if (delivery.kind === "return") return { at, orgId: user.orgId, code };
  const template = delivery.urlTemplate ?? (ctx.authn ? `${ctx.authn.externalUrl}${INVITE_PAGE}?userId={{.UserID}}&code={{.Code}}` : undefined);
  const link = template === undefined ? undefined : renderLink(template, { Code: code, UserID: user.id, LoginName: user.loginName });
  await sendMail(ctx, await codeMail(ctx, user, email, "invite_user", { code, link, validMinutes: CODE_LIFETIME_MS.invite / 60_000 }));
  return { at, orgId: user.orgId };
}

/**
 * Whether SetPassword's verification_code is checked against the user's invitation (else against its password
 * reset): when the code is the invitation's, or the user has an invitation and no usable reset code, so that every wrong
 * guess counts against the code it could be (guessing an invitation must not escape its attempt limit).
 */
export async function isInviteCode(ctx: Ctx, userId: string, code: string): Promise<boolean> {
  const row = await ctx.store.authn.code(userId, "invite");
  if (row === null) return false;
  if (sameHash(codeHash(code), new Uint8Array(row.codeHash))) return true;
  // An expired reset code is none: checked against it, a guess is refused as expired and never counted.
  const reset = await ctx.store.authn.code(userId, "password_reset");
  return reset === null || reset.expiresAt.getTime() <= ctx.clock().getTime();
}

/**
 * SetPassword with the code of CreateInviteCode: the password is set, the code spent and the address it was sent to
 * verified (when it is still the user's), in one transaction.
 */
export function acceptInvite(ctx: Ctx, input: CodePasswordInput): Promise<Date> {
  return setPasswordWithCode(ctx, input, "invite", (tx, user, target) => verifyInvitedAddress(ctx, tx, user, target));
}

async function verifyInvitedAddress(ctx: Ctx, tx: Store, user: AuthnSubject, address: string | null): Promise<void> {
  if (address === null || user.emailVerified || !(await tx.authn.verifyEmail(user.id, address, ctx.clock()))) return;
  await tx.auth.invalidate({ userId: user.id });
  await recordEvent(ctx, tx, userEvent(user, "user.email.verified", { email: address, by: "invite" }));
}
