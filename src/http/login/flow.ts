// Where a sign-in goes next. The domain decides whether a session may finish (the same rules that answer a custom
// login UI's CreateCallback): the hosted login asks it, and turns each refusal into the page that fixes it.
import { asDomainError } from "../../domain/errors.js";
import { authenticationMethodTypes, type MethodType } from "../../domain/identity/authn/methods.js";
import { createCallback } from "../../domain/oauth/authorize/login-ui.js";
import { createResponse } from "../../domain/saml/login-ui.js";
import { assertSignInComplete, type LinkedSession, sessionForLink } from "../../domain/sessions/link.js";
import type { BrowserSession } from "./cookie.js";
import type { LoginRequest } from "./page.js";
import { sendSamlAnswer } from "./pages/saml-post.js";

/** How long a session of the hosted login lives (the cookie keeps it as long; factors expire by the login settings). */
export const SESSION_LIFETIME_SECONDS = 90 * 24 * 3600;

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

/** How recent a first factor must be for changes that could hand the account to someone else (a "sudo" window). */
export const RECENT_SIGN_IN_MS = 10 * 60_000;

/** Whether the session's user proved itself with a first factor (password, passkey, external sign-in) just now. */
export function recentlyProven(linked: LinkedSession, now: Date): boolean {
  const f = linked.factors;
  return [f.password, f.webauthn, f.intent].some((d) => d !== undefined && now.getTime() - d.getTime() <= RECENT_SIGN_IN_MS);
}

/** Sends the browser to prove the first factor again; the sign-in then returns to the account page (no auth request). */
export async function proveAgain(r: LoginRequest, s: BrowserSession): Promise<void> {
  r.redirect(r.url(await firstFactorPath(r, s), { session: s.id }));
}

const STEP_OF: Record<string, string> = {
  "Errors.Session.MfaRequired": "/mfa",
  "Errors.Session.PasswordChangeRequired": "/password/change",
};

/**
 * After a check succeeded: back to the application with a code (or to the SAML SP with its Response) when the sign-in is
 * complete (or to the account page without a request), else to the page of what is missing.
 */
export async function continueSignIn(r: LoginRequest, s: BrowserSession): Promise<void> {
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
    await assertSignInComplete(r.ctx, await sessionForLink(r.ctx, s.id, s.token));
    r.redirect(r.url("/account", { session: s.id }));
  } catch (err) {
    const d = asDomainError(err);
    const step = d && STEP_OF[d.id];
    if (step) return r.redirect(r.url(step, r.flowQuery({ session: s.id })));
    if (d && ["Errors.Session.NotAuthenticated", "Errors.AuthRequest.ReauthenticationRequired", "Errors.SamlRequest.ReauthenticationRequired"].includes(d.id)) {
      return r.redirect(r.url(await firstFactorPath(r, s), r.flowQuery({ session: s.id })));
    }
    if (d?.id === "Errors.AuthRequest.UserMismatch") return r.redirect(r.url("/login", r.flowQuery({ mismatch: "1" })));
    throw err;
  }
}
