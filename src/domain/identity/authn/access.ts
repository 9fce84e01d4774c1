// Who may act on a user's authentication methods. The user itself always may (it proves who it is with its own
// token). Anyone else needs user.authn.write in the user's organization (or instance-wide: IAM_OWNER,
// IAM_LOGIN_CLIENT) and, for whatever could hand the account to someone else (registering a factor, removing one,
// taking a code instead of having it sent to the user), the rule of "who may change an account"
// (authorizeOverRoles): an ORG_USER_MANAGER cannot add its passkey to its ORG_OWNER's account, nor a login client to
// an administrator's. A login client registers factors during a sign-in, before the user has a token: it may then
// register one for a user holding roles too, when it holds a live session of that user, made by itself, in which
// the user proved itself within the last 10 minutes as a login would (a first factor and, when the user has a
// second factor already, that too). Codes sent to the user's own address need no more than the permission.
import type { AuthnSubject, SignInSession } from "../../../store/authn.js";
import { authorize, authorizeOverRoles } from "../../access/permissions.js";
import type { Ctx } from "../../context.js";
import { DomainError, failedPrecondition, invalidArgument, permissionDenied } from "../../errors.js";
import { effectiveSetting } from "../../settings/settings.js";
import { userNotFound } from "../user-access.js";
import type { AuthnSettings } from "./ports.js";

export type { AuthnSubject } from "../../../store/authn.js";

/**
 * What the caller wants to do: read the methods; send a code to the user (or verify one); register a factor;
 * remove one; have a code returned to it.
 */
export type AuthnAction = "read" | "send" | "register" | "remove" | "returnCode";

/** How recent a sign-in must be for a login client to register a factor of a user holding roles. */
export const SIGN_IN_WINDOW_MS = 10 * 60_000;

/** The authentication settings, which the composition root always provides to API calls. */
export function authnSettings(ctx: Ctx): AuthnSettings {
  if (!ctx.authn) throw new Error("the authentication settings (master key, external URL) are missing from the context");
  return ctx.authn;
}

/** Loads a user of the instance and checks that the caller may do `action` on its authentication methods. */
export async function authnSubject(ctx: Ctx, userId: string, action: AuthnAction): Promise<AuthnSubject> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await ctx.store.authn.subject(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  const self = user.id === ctx.principal.userId;
  if (action === "returnCode" && self) {
    throw permissionDenied("Errors.User.Code.ReturnDenied", "a code is sent to the user, never returned to the user itself");
  }
  if (self) return user;
  authorize(ctx, action === "read" ? "user.read" : "user.authn.write", user.orgId, userNotFound);
  if (action === "register") await overRolesOrSignedIn(ctx, user);
  else if (action === "remove" || action === "returnCode") await authorizeOverRoles(ctx, user);
  return user;
}

/** The commands that change a user's methods are for human users. */
export function humanOnly(user: AuthnSubject): void {
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users have authentication methods");
}

async function overRolesOrSignedIn(ctx: Ctx, user: AuthnSubject): Promise<void> {
  try {
    await authorizeOverRoles(ctx, user);
  } catch (err) {
    if (!(err instanceof DomainError) || err.kind !== "PermissionDenied") throw err;
    const now = ctx.clock();
    const sessions = await ctx.store.authn.signInSessions(ctx.instanceId, user.id, ctx.principal.userId, now);
    if (sessions.length === 0) throw err;
    const m = await ctx.store.authn.methods(user.id);
    const since = new Date(now.getTime() - SIGN_IN_WINDOW_MS);
    if (!sessions.some((s) => provesUser(s, m.totp || m.passkey || m.otpEmail, since))) throw err;
  }
}

/** Whether a session shows the user signed in since `since`, with a second factor when it has one. */
export function provesUser(s: SignInSession, hasSecondFactor: boolean, since: Date): boolean {
  const recent = (d: Date | null) => d !== null && d.getTime() >= since.getTime();
  const knowledge = recent(s.passwordCheckedAt) || recent(s.intentCheckedAt);
  const webauthn = recent(s.webauthnCheckedAt);
  const otp = recent(s.totpCheckedAt) || recent(s.otpEmailCheckedAt);
  if (!hasSecondFactor) return knowledge || webauthn;
  return (webauthn && s.webauthnUserVerified) || (knowledge && (webauthn || otp)) || (webauthn && otp);
}

/** Factors the login settings of an organization allow to be registered. */
export type FactorKind = "otp" | "otp_email" | "passkey";

export async function requireFactorAllowed(ctx: Ctx, orgId: string, factor: FactorKind): Promise<void> {
  const login = await effectiveSetting(ctx, "login", orgId);
  const allowed = factor === "passkey" ? login.passkeysAllowed : login.secondFactors.includes(factor);
  if (!allowed) {
    throw failedPrecondition("Errors.User.Factor.NotAllowed", `the login settings of the user's organization do not allow ${FACTOR_NAMES[factor]}`);
  }
}

const FACTOR_NAMES: Record<FactorKind, string> = { otp: "TOTP", otp_email: "one-time codes by e-mail", passkey: "passkeys" };
