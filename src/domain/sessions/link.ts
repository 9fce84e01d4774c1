// What the protocols (OIDC's CreateCallback, the token endpoint, end_session; SAML later) need of a session: the
// session proven by its token, whether it may finish a sign-in, its auth_time and amr, and ending it.

import { sameHash, sha256 } from "../../crypto/tokens.js";
import type { Store } from "../../store/index.js";
import type { LinkSessionRow, SignInFacts } from "../../store/sign-in-sql.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { type DomainError, failedPrecondition, invalidArgument, permissionDenied } from "../errors.js";
import { SYSTEM_PRINCIPAL_ID } from "../request-context.js";
import { effectiveOf } from "../settings/settings.js";
import { queueBackchannelLogout } from "./backchannel-logout.js";
import { expired, sessionNotFound, tokenInvalid } from "./model.js";
import { passwordChangeRequired } from "./password-check.js";
import {
  evaluate,
  authMethods as policyAuthMethods,
  authTime as policyAuthTime,
  type SensitiveChange,
  type SignInState,
  type Step,
  sensitiveChange,
} from "./policy.js";
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

function linked(s: LinkSessionRow): LinkedSession | null {
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
  return provenSession(sessionId, sessionToken, sessionId ? await ctx.store.sessions.find(ctx.instanceId, sessionId) : null, ctx.clock());
}

/** sessionForLink of a session row the caller read by `sessionId` (null: none). */
export function provenSession(sessionId: string, sessionToken: string, s: (LinkSessionRow & { tokenHash: Uint8Array }) | null, now: Date): LinkedSession {
  if (!sessionId) throw invalidArgument("Errors.Session.Id.Missing", "session.session_id is required", { field: "session.session_id" });
  if (!s || expired(s, now)) throw sessionNotFound();
  if (!sessionToken || !sameHash(sha256(sessionToken), s.tokenHash)) throw tokenInvalid();
  const l = linked(s);
  if (!l) throw failedPrecondition("Errors.Session.NoUser", "the session has no checked user");
  return l;
}

/** The session by id without its token (id_token_hint's sid, refresh, logout): null when gone or expired. */
export async function liveSession(store: Store, instanceId: string, sessionId: string, now: Date): Promise<LinkedSession | null> {
  return liveOf(await store.sessions.find(instanceId, sessionId), now);
}

/** liveSession of a session row read with something else (LINK_SESSION_COLUMNS): null when gone or expired. */
export function liveOf(s: LinkSessionRow | null, now: Date): LinkedSession | null {
  return s && !expired(s, now) ? linked(s) : null;
}

/** auth_time: the latest verification of a factor that authenticates the user. */
export function authTime(s: LinkedSession): Date {
  return policyAuthTime(s.factors, s.factors.user);
}

/** RFC 8176 amr values: pwd, otp, hwk (a WebAuthn key) with user (it verified the user), mfa for two or more factors. */
export function authMethods(s: LinkedSession): string[] {
  return policyAuthMethods(s.factors);
}

/**
 * Where the session's sign-in stands under the sign-in policy (policy.ts), for a user who can still sign in (deleted,
 * deactivated, locked or in a deactivated organization: refused). `facts`: what the policy needs of the user
 * (SIGN_IN_SETTING_KINDS), when the caller read it with the session (null: the user is gone); else read here.
 */
export async function signInState(ctx: Ctx, s: LinkedSession, facts?: SignInFacts | null): Promise<SignInState> {
  const known = facts === undefined ? await ctx.store.sessions.signInFacts(ctx.instanceId, s.userId) : facts;
  if (!known) throw sessionNotFound();
  const { user, settings, ready } = known;
  assertCanSignIn(user);
  const now = ctx.clock();
  const login = effectiveOf("login", settings, ctx.instanceId, user.orgId);
  const changeRequired = s.factors.password !== undefined && (await passwordChangeRequired(ctx, user, now, settings));
  return evaluate(s.factors, { ready, passwordChangeRequired: changeRequired }, login, now);
}

/** The error a sign-in that is not complete answers to whoever asks it to finish (CreateCallback, CreateResponse). */
export function incomplete(step: Step): DomainError | undefined {
  switch (step.kind) {
    case "done":
      return undefined;
    case "firstFactor":
      return failedPrecondition("Errors.Session.NotAuthenticated", "the session has no recent password, passkey or external sign-in check");
    case "secondFactor":
      return failedPrecondition("Errors.Session.MfaRequired", "a second factor must be checked before the sign-in can finish");
    case "setUpSecondFactor":
      return failedPrecondition("Errors.Session.MfaRequired", "a second factor must be set up and checked before the sign-in can finish", {
        step: "set_up_second_factor",
      });
    case "changePassword":
      return failedPrecondition("Errors.Session.PasswordChangeRequired", "the user must change the password before the sign-in can finish");
  }
}

/**
 * Refuses a session that may not finish a sign-in now (signInState's step is not done): its user can no longer sign
 * in, no first factor within the login settings' check lifetimes (Errors.Session.NotAuthenticated), no second factor
 * although the settings force MFA or the user has one set up (Errors.Session.MfaRequired), or a password that must be
 * changed first (Errors.Session.PasswordChangeRequired).
 */
export async function assertSignInComplete(ctx: Ctx, s: LinkedSession, facts?: SignInFacts | null): Promise<void> {
  const problem = incomplete((await signInState(ctx, s, facts)).step);
  if (problem) throw problem;
}

/**
 * Refuses a sensitive change (binding or removing an authenticator, a new e-mail address) unless the presented
 * session allows it (policy.ts sensitiveChange): FailedPrecondition Errors.Session.RecentProofRequired when a first
 * factor must be proven again in it, PermissionDenied Errors.Session.SignInIncomplete when it has not satisfied what
 * the account requires.
 */
export async function assertSensitiveChange(ctx: Ctx, s: LinkedSession, change: SensitiveChange): Promise<void> {
  const state = await signInState(ctx, s);
  const verdict = sensitiveChange(state, s.factors, change, ctx.clock());
  if (verdict === "proveAgain") {
    throw failedPrecondition("Errors.Session.RecentProofRequired", "prove a first factor again in this session first (the last one is too old)");
  }
  if (verdict === "signInFirst") {
    throw permissionDenied("Errors.Session.SignInIncomplete", "the session has not satisfied what the account requires to make this change");
  }
}

/**
 * The one way a session ends (logout, end_session, DeleteSession, the account page): the session and the access and
 * refresh tokens issued from it, in one transaction with its event, caches invalidated on every replica. `by`: who
 * ended it (null: the browser's logout, svc itself) and why, and which SAML SP asked (not told again). False when it
 * did not exist.
 */
export async function terminateSession(
  store: Store,
  instanceId: string,
  sessionId: string,
  at: Date,
  by: { editor: string | null; reason?: string; exceptApp?: string } = { editor: null, reason: "logout" },
): Promise<boolean> {
  return store.transaction(async (tx) => {
    // Its OIDC applications' logout tokens and its SAML SPs' SOAP LogoutRequests (but to `exceptApp`, the SP that
    // asked), while its participants exist; rolled back with the rest when it did not.
    await queueBackchannelLogout(tx, instanceId, { ids: [sessionId] }, at, by.exceptApp);
    const ended = await tx.sessions.terminate(instanceId, sessionId, at);
    if (!ended) return false;
    if (ended.userId) await tx.auth.invalidate({ userId: ended.userId });
    const event = sessionEvent({ id: sessionId, orgId: ended.orgId, userId: ended.userId }, "session.terminated", by.reason ? { by: by.reason } : {});
    await tx.events.append(eventRow({ instanceId, clock: () => at, principal: { userId: by.editor ?? SYSTEM_PRINCIPAL_ID } }, event));
    return true;
  });
}
