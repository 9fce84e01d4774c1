// TOTP (RFC 6238: SHA-1, 6 digits, 30 s steps, the authenticator apps' common ground) with `otpauth`. The secret is
// sealed with the master key (bound to the instance and user); a code is accepted in a window of one step either
// side, once: the step it matched is stored and only later steps pass afterwards, so a code seen by someone else
// (or replayed concurrently) is worthless. Wrong codes count towards the lockout (otp-lockout.ts).
import { Secret, TOTP } from "otpauth";
import { totpAad } from "../../../crypto/sealer.js";
import { commit, recordEvent, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition, notFound } from "../../errors.js";
import { type AuthnSubject, authnSettings, authnSubject, humanOnly, requireFactorAllowed } from "./access.js";
import { failedOtpCheck, otpCheckSucceeded, reserveOtpCheck, wrongCode } from "./otp-lockout.js";
import type { Change } from "./ports.js";

const PERIOD = 30;
const DIGITS = 6;

function totpOf(secret: Uint8Array, user?: AuthnSubject): TOTP {
  return new TOTP({
    issuer: user?.instanceName,
    label: user?.loginName,
    secret: new Secret({ buffer: Uint8Array.from(secret).buffer }),
    algorithm: "SHA1",
    digits: DIGITS,
    period: PERIOD,
  });
}

/** RegisterTOTP: a new secret (replacing a registration not yet verified) and its otpauth:// URI. */
export async function registerTotp(ctx: Ctx, userId: string): Promise<Change & { uri: string; secret: string }> {
  const user = await authnSubject(ctx, userId, "register");
  humanOnly(user);
  await requireFactorAllowed(ctx, user.orgId, "otp");
  const secret = new Secret({ size: 20 });
  const secretEnc = authnSettings(ctx).sealer.seal(secret.bytes, totpAad(ctx.instanceId, user.id));
  const at = await commit(ctx, async (tx, now) => {
    await tx.authn.startTotp({ userId: user.id, instanceId: ctx.instanceId, secretEnc, createdAt: now });
    return userEvent(user, "user.totp.added");
  });
  return { uri: totpOf(secret.bytes, user).toString(), secret: secret.base32, at, orgId: user.orgId };
}

/** VerifyTOTPRegistration: a current code of the authenticator makes the registration ready. */
export async function verifyTotpRegistration(ctx: Ctx, userId: string, code: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "register");
  humanOnly(user);
  const row = await ctx.store.authn.totp(user.id);
  if (!row) throw failedPrecondition("Errors.User.TOTP.NotRegistered", "no TOTP registration was started (RegisterTOTP)");
  if (row.verifiedAt) throw failedPrecondition("Errors.User.TOTP.AlreadyReady", "the TOTP registration is verified already");
  return { at: await checkCode(ctx, user, row.secretEnc, code, true), orgId: user.orgId };
}

/**
 * Checks a code of the user's ready TOTP (a session's checks.totp): throws the wrong-code error (or the lock it
 * caused) unless the code is right and not used before. Returns when it was checked.
 */
export async function checkTotp(ctx: Ctx, user: { id: string; orgId: string }, code: string, field = "code"): Promise<Date> {
  const row = await ctx.store.authn.totp(user.id);
  if (!row?.verifiedAt) throw failedPrecondition("Errors.User.TOTP.NotReady", "the user has no TOTP authenticator");
  return checkCode(ctx, user, row.secretEnc, code, false, field);
}

async function checkCode(
  ctx: Ctx,
  user: { id: string; orgId: string },
  secretEnc: Uint8Array,
  code: string,
  completing: boolean,
  field = "code",
): Promise<Date> {
  if (!/^\d{6}$/.test(code)) throw wrongCode(field);
  const reservation = await reserveOtpCheck(ctx, user);
  const now = ctx.clock();
  const secret = authnSettings(ctx).sealer.open(secretEnc, totpAad(ctx.instanceId, user.id));
  const delta = totpOf(secret).validate({ token: code, timestamp: now.getTime(), window: 1 });
  const step = delta === null ? undefined : BigInt(Math.floor(now.getTime() / 1000 / PERIOD) + delta);
  const spent =
    step !== undefined &&
    (await ctx.store.transaction(async (tx) => {
      if (!(await tx.authn.spendTotpStep(user.id, step, completing ? now : undefined))) return false;
      await recordEvent(ctx, tx, userEvent(user, completing ? "user.totp.verified" : "user.totp.checked"));
      return true;
    }));
  // A code of a step already spent is as wrong as any other.
  if (!spent) throw await failedOtpCheck(ctx, user, reservation, field);
  await otpCheckSucceeded(ctx, user);
  return now;
}

/** RemoveTOTP. */
export async function removeTotp(ctx: Ctx, userId: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "remove");
  humanOnly(user);
  const at = await commit(ctx, async (tx) => {
    if (!(await tx.authn.removeTotp(user.id))) throw notFound("Errors.User.TOTP.NotFound", "the user has no TOTP authenticator");
    return userEvent(user, "user.totp.removed");
  });
  return { at, orgId: user.orgId };
}
