// Who may act on a user's authentication methods. Reading them, and codes sent to the user's own address, need the
// user itself or user.authn.write in its organization (or instance-wide: IAM_OWNER, IAM_LOGIN_CLIENT). Binding or
// removing an authenticator is a sensitive change (policy.ts): the user itself and a login client acting for it may
// make it only through a session of the user that the request presents (its token, or the session the bearer token
// was issued from) and that satisfies the sign-in policy, with a recent proof; an administrator needs, besides the
// permission, the rule of "who may change an account" (authorizeOverRoles): an ORG_USER_MANAGER cannot add its
// passkey to its ORG_OWNER's account. Having a code returned instead of sent needs the latter too, and so does sending
// a password reset or an invitation whose link is the caller's URL template: the link takes the code to the caller's
// URL once the user follows it (a login client's template is its login UI's own page, which it may send).
import type { AuthnSubject } from "../../../store/authn.js";
import { authorize, authorizeOverRoles, hasInstancePermission } from "../../access/permissions.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition, invalidArgument, permissionDenied } from "../../errors.js";
import { assertSensitiveChange, liveSession, sessionForLink } from "../../sessions/link.js";
import type { SensitiveChange } from "../../sessions/policy.js";
import { effectiveSetting } from "../../settings/settings.js";
import { userNotFound } from "../user-access.js";
import type { AuthnSettings } from "./ports.js";

export type { AuthnSubject } from "../../../store/authn.js";

/**
 * What the caller wants to do: read the methods; send a code to the user (or verify one); register a factor;
 * remove one; have a code returned to it; send a code that sets a password as a link of the caller's URL template.
 */
export type AuthnAction = "read" | "send" | "register" | "remove" | "returnCode" | "sendToTemplate";

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
  if (action === "register" || action === "remove") {
    const change = action === "register" ? "bindAuthenticator" : "removeAuthenticator";
    if (self) {
      await assertPresentedProof(ctx, user, change);
      return user;
    }
    authorize(ctx, "user.authn.write", user.orgId, userNotFound);
    // A login client has no authority of its own over a user's authenticators: only the user's proof in a session.
    if (hasInstancePermission(ctx, "session.write")) await assertPresentedProof(ctx, user, change);
    else await authorizeOverRoles(ctx, user);
    return user;
  }
  if (self) return user;
  authorize(ctx, action === "read" ? "user.read" : "user.authn.write", user.orgId, userNotFound);
  if (action === "returnCode") await authorizeOverRoles(ctx, user);
  if (action === "sendToTemplate" && !hasInstancePermission(ctx, "session.write")) await authorizeOverRoles(ctx, user);
  return user;
}

/**
 * The session the request presents (ctx.session with its token, else the bearer token's own session) must be the
 * user's and allow the change under the sign-in policy.
 */
export async function assertPresentedProof(ctx: Ctx, user: { id: string }, change: SensitiveChange): Promise<void> {
  const presented = ctx.session
    ? await sessionForLink(ctx, ctx.session.id, ctx.session.token)
    : ctx.principal.sessionId
      ? await liveSession(ctx.store, ctx.instanceId, ctx.principal.sessionId, ctx.clock())
      : null;
  if (!presented) {
    throw permissionDenied(
      "Errors.Session.ProofRequired",
      "changing a user's authenticators needs a session of the user, presented with its token, in which the user signed in recently",
    );
  }
  if (presented.userId !== user.id) throw permissionDenied("Errors.Session.UserMismatch", "the presented session is another user's");
  await assertSensitiveChange(ctx, presented, change);
}

/** The commands that change a user's methods are for human users. */
export function humanOnly(user: AuthnSubject): void {
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users have authentication methods");
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
