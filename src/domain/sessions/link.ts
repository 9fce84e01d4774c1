// What the protocols (OIDC's CreateCallback, the token endpoint, end_session; SAML later) need of a session: the
// session proven by its token, whether it may finish a sign-in, its auth_time and amr, and ending it.
import { sameHash, sha256 } from "../../crypto/tokens.js";
import type { Store } from "../../store/index.js";
import type { SessionRow, SessionUserRow } from "../../store/sessions.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { effectiveSetting } from "../settings/settings.js";
import { expired, sessionNotFound, tokenInvalid } from "./model.js";
import { passwordChangeRequired } from "./password-check.js";
import { assertCanSignIn } from "./session-user.js";
import { sessionEvent } from "./sessions.js";

export interface LinkedSession {
  id: string;
  userId: string;
  orgId: string;
  /** When each factor was last verified (undefined: never in this session). */
  factors: { user: Date; password?: Date; totp?: Date; otpEmail?: Date; webauthn?: Date; webauthnUserVerified: boolean; intent?: Date };
  passwordChangeRequired: boolean;
  expiresAt: Date | null;
}

function linked(s: SessionRow): LinkedSession | null {
  if (!s.userId || !s.orgId || !s.userCheckedAt) return null;
  const f: LinkedSession["factors"] = { user: s.userCheckedAt, webauthnUserVerified: s.webauthnUserVerified };
  if (s.passwordCheckedAt) f.password = s.passwordCheckedAt;
  if (s.totpCheckedAt) f.totp = s.totpCheckedAt;
  if (s.otpEmailCheckedAt) f.otpEmail = s.otpEmailCheckedAt;
  if (s.webauthnCheckedAt) f.webauthn = s.webauthnCheckedAt;
  if (s.intentCheckedAt) f.intent = s.intentCheckedAt;
  return { id: s.id, userId: s.userId, orgId: s.orgId, factors: f, passwordChangeRequired: s.passwordChangeRequired, expiresAt: s.expiresAt };
}

/**
 * The session proven by its token: NotFound (unknown, expired or deleted), PermissionDenied Errors.Session.Token.Invalid
 * (a wrong or stale token), FailedPrecondition Errors.Session.NoUser (no user check yet).
 */
export async function sessionForLink(ctx: Ctx, sessionId: string, sessionToken: string): Promise<LinkedSession> {
  if (!sessionId) throw invalidArgument("Errors.Session.Id.Missing", "session.session_id is required", { field: "session.session_id" });
  const s = await ctx.store.sessions.find(ctx.instanceId, sessionId);
  if (!s || expired(s, ctx.clock())) throw sessionNotFound();
  if (!sessionToken || !sameHash(sha256(sessionToken), s.tokenHash)) throw tokenInvalid();
  const l = linked(s);
  if (!l) throw failedPrecondition("Errors.Session.NoUser", "the session has no checked user");
  return l;
}

/** The session by id without its token (id_token_hint's sid, refresh, logout): null when gone or expired. */
export async function liveSession(store: Store, instanceId: string, sessionId: string, now: Date): Promise<LinkedSession | null> {
  const s = await store.sessions.find(instanceId, sessionId);
  return s && !expired(s, now) ? linked(s) : null;
}

/** auth_time: the latest verification of a factor that authenticates the user. */
export function authTime(s: LinkedSession): Date {
  const f = s.factors;
  const times = [f.password, f.webauthn, f.intent, f.totp, f.otpEmail].filter((d): d is Date => d !== undefined);
  return times.length ? new Date(Math.max(...times.map((d) => d.getTime()))) : f.user;
}

/** RFC 8176 amr values: pwd, otp, hwk (a WebAuthn key) with user (it verified the user), mfa for two or more factors. */
export function authMethods(s: LinkedSession): string[] {
  const f = s.factors;
  const amr: string[] = [];
  if (f.password) amr.push("pwd");
  if (f.totp || f.otpEmail) amr.push("otp");
  if (f.webauthn) amr.push(...(f.webauthnUserVerified ? ["hwk", "user"] : ["hwk"]));
  if (f.intent) amr.push("fed");
  const factors = [f.password, f.totp ?? f.otpEmail, f.webauthn, f.intent].filter(Boolean).length;
  if (factors >= 2 || (f.webauthn && f.webauthnUserVerified)) amr.push("mfa");
  return amr;
}

const fresh = (at: Date | undefined, lifetimeSeconds: number, now: Date): at is Date =>
  at !== undefined && now.getTime() - at.getTime() <= lifetimeSeconds * 1000;

/**
 * Refuses a session that may not finish a sign-in now: its user can no longer sign in (deleted, deactivated, locked,
 * organization deactivated), no first factor within the login settings' check lifetimes (Errors.Session.NotAuthenticated),
 * no second factor although the settings force MFA or the user has one set up (Errors.Session.MfaRequired), or a
 * password that must be changed first (Errors.Session.PasswordChangeRequired).
 */
export async function assertSignInComplete(ctx: Ctx, s: LinkedSession): Promise<void> {
  const user: SessionUserRow | null = await ctx.store.sessions.userById(ctx.instanceId, s.userId);
  if (!user) throw sessionNotFound();
  assertCanSignIn(user);
  const now = ctx.clock();
  const login = await effectiveSetting(ctx, "login", user.orgId);
  const f = s.factors;
  const password = login.allowUsernamePassword && fresh(f.password, login.passwordCheckLifetimeSeconds, now);
  const passkey = login.passkeysAllowed && f.webauthnUserVerified && fresh(f.webauthn, login.multiFactorCheckLifetimeSeconds, now);
  const external = login.allowExternalIdp && fresh(f.intent, login.externalLoginCheckLifetimeSeconds, now);
  if (!password && !passkey && !external) {
    throw failedPrecondition("Errors.Session.NotAuthenticated", "the session has no recent password, passkey or external sign-in check");
  }
  if (!passkey) {
    const second = login.secondFactorCheckLifetimeSeconds;
    const allowed = new Set(login.secondFactors);
    const hasSecond =
      (allowed.has("otp") && fresh(f.totp, second, now)) ||
      (allowed.has("otp_email") && fresh(f.otpEmail, second, now)) ||
      (allowed.has("u2f") && fresh(f.webauthn, second, now));
    if (!hasSecond && (login.forceMfa || (await hasSecondFactor(ctx, s.userId, allowed)))) {
      throw failedPrecondition("Errors.Session.MfaRequired", "a second factor must be checked before the sign-in can finish");
    }
  }
  if (f.password && (await passwordChangeRequired(ctx, user, now))) {
    throw failedPrecondition("Errors.Session.PasswordChangeRequired", "the user must change the password before the sign-in can finish");
  }
}

/** Whether the user set up a second factor the settings allow: then every sign-in asks for one. */
async function hasSecondFactor(ctx: Ctx, userId: string, allowed: ReadonlySet<string>): Promise<boolean> {
  const ready = await ctx.store.sessions.readyFactors(userId);
  return (allowed.has("otp") && ready.totp) || (allowed.has("otp_email") && ready.otpEmail) || (allowed.has("u2f") && ready.passkeys > 0);
}

/**
 * Ends the session and revokes the access and refresh tokens issued from it, in one transaction, caches invalidated on
 * every replica. False when it did not exist.
 */
export async function terminateSession(store: Store, instanceId: string, sessionId: string, at: Date): Promise<boolean> {
  return store.transaction(async (tx) => {
    const ended = await tx.sessions.terminate(instanceId, sessionId, at);
    if (!ended) return false;
    if (ended.userId) await tx.auth.invalidate({ userId: ended.userId });
    const event = sessionEvent({ id: sessionId, orgId: ended.orgId, userId: ended.userId }, "session.terminated", { by: "logout" });
    await tx.events.append(eventRow({ instanceId, clock: () => at, principal: null }, event));
    return true;
  });
}
