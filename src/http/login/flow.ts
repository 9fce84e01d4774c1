// Where a sign-in goes next. The domain's sign-in policy decides (the same step a custom login UI gets from
// SessionService, and the same rules CreateCallback applies); the hosted login shows the page of that step.
import { asDomainError } from "../../domain/errors.js";
import { authenticationMethodTypes, type MethodType } from "../../domain/identity/authn/methods.js";
import { createCallback } from "../../domain/oauth/authorize/login-ui.js";
import { createResponse } from "../../domain/saml/login-ui.js";
import { type LinkedSession, sessionForLink, signInState } from "../../domain/sessions/link.js";
import type { Step } from "../../domain/sessions/policy.js";
import { type BrowserSession, withNewCsrf, withoutSession } from "./cookie.js";
import type { LoginRequest } from "./page.js";
import { sendSamlAnswer } from "./pages/saml-post.js";

/** How long a session of the hosted login lives (the cookie keeps it as long; factors expire by the login settings). */
export const SESSION_LIFETIME_SECONDS = 90 * 24 * 3600;
/** How long a session made before any factor succeeded lives (a passkey's challenge): then it is gone. */
export const PENDING_SESSION_SECONDS = 10 * 60;

/**
 * The page that asks for the user's first factor: the passkey when the user has one and the login settings allow
 * passkeys (its page offers the password instead), else the password.
 */
export async function firstFactorPath(r: LoginRequest, s: BrowserSession): Promise<string> {
  const methods: MethodType[] = s.userId ? await authenticationMethodTypes(r.ctx, s.userId) : [];
  if (!methods.includes("PASSKEY")) return "/password";
  const login = r.login ?? (await r.loadLoginSettings());
  return login.passkeysAllowed || !methods.includes("PASSWORD") ? "/passkey" : "/password";
}

/** Sends the browser to prove the first factor again; the sign-in then returns to the account page (no auth request). */
export async function proveAgain(r: LoginRequest, s: BrowserSession): Promise<void> {
  r.redirect(r.url(await firstFactorPath(r, s), { session: s.id }));
}

/** The hosted login's page for each step of the sign-in policy (policy.ts). */
function pageOf(step: Exclude<Step["kind"], "done" | "firstFactor">): string {
  switch (step) {
    case "secondFactor":
      return "/mfa";
    case "setUpSecondFactor":
      return "/mfa/setup";
    case "changePassword":
      return "/password/change";
  }
}

/**
 * Where a sign-in goes next, by the sign-in policy's step for this session: the page of what is missing, else back to
 * the application with a code (or to the SAML SP with its Response), or to the account page without a request.
 * `proved`: a check just succeeded in this request; the browser's CSRF secret is then replaced (a sign-in changes
 * what the browser may do, so a token learnt before it is worth nothing after).
 */
export async function continueSignIn(r: LoginRequest, s: BrowserSession, o: { proved?: boolean } = {}): Promise<void> {
  if (o.proved) r.setState(withNewCsrf(r.state));
  let linked: LinkedSession;
  try {
    linked = await sessionForLink(r.ctx, s.id, s.token);
  } catch (err) {
    if (!asDomainError(err)) throw err;
    r.setState(withoutSession(r.state, s.id));
    return r.redirect(r.url("/login", r.flowQuery()));
  }
  const { step } = await signInState(r.ctx, linked);
  if (step.kind === "firstFactor") return r.redirect(r.url(await firstFactorPath(r, s), r.flowQuery({ session: s.id })));
  if (step.kind !== "done") return r.redirect(r.url(pageOf(step.kind), r.flowQuery({ session: s.id })));
  // prompt=consent: the user is asked (the consent page finishes the request when it allows); an application that
  // requires consent is asked for by finishSignIn when the user has not allowed its scopes yet.
  if (r.authRequest?.prompt.includes("consent")) return r.redirect(r.url("/consent", r.flowQuery({ session: s.id })));
  return finishSignIn(r, s);
}

/**
 * A done sign-in: back to the application with a code (or to the SAML SP with its Response), or to the account page
 * without a request; what the request asks beyond the policy (a new authentication, another user) sends it back.
 */
export async function finishSignIn(r: LoginRequest, s: BrowserSession): Promise<void> {
  try {
    if (r.samlRequest) {
      const { answer } = await createResponse(r.ctx, r.deps.saml, { samlRequestId: r.samlRequest.id, session: { sessionId: s.id, sessionToken: s.token } });
      return sendSamlAnswer(r, answer);
    }
    if (r.authRequest) {
      const { callbackUrl } = await createCallback(
        r.ctx,
        { issuer: r.deps.issuer, codeLifetime: r.deps.codeLifetime },
        { authRequestId: r.authRequest.id, session: { sessionId: s.id, sessionToken: s.token } },
      );
      r.redirect(callbackUrl);
      return;
    }
    r.redirect(r.url("/account", { session: s.id }));
  } catch (err) {
    const d = asDomainError(err);
    // What the request asks beyond the policy: a new authentication (prompt=login, max_age), or another user.
    if (d?.id === "Errors.AuthRequest.ReauthenticationRequired" || d?.id === "Errors.SamlRequest.ReauthenticationRequired") {
      return r.redirect(r.url(await firstFactorPath(r, s), r.flowQuery({ session: s.id })));
    }
    if (d?.id === "Errors.AuthRequest.UserMismatch") return r.redirect(r.url("/login", r.flowQuery({ mismatch: "1" })));
    // The application asks its users' consent, and this user has not allowed what it requests yet.
    if (d?.id === "Errors.Consent.Required" && r.authRequest) return r.redirect(r.url("/consent", r.flowQuery({ session: s.id })));
    throw err;
  }
}
