// The factors after the login name: a passkey as the first factor (no password), and the second factors a user has
// set up (TOTP, a code by e-mail, a security key or passkey). The WebAuthn ceremony runs in assets/webauthn.js; the
// rest works without JavaScript.
import { randomBytes } from "node:crypto";
import type { Express } from "express";
import { asDomainError, DomainError } from "../../../domain/errors.js";
import { authenticationMethodTypes } from "../../../domain/identity/authn/methods.js";
import type { SessionChecks } from "../../../domain/sessions/model.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { createSession, setSession } from "../../../domain/sessions/sessions.js";
import { effectiveSetting } from "../../../domain/settings/settings.js";
import type { LoginDeps } from "../context.js";
import { type BrowserSession, withoutSession, withSession } from "../cookie.js";
import { continueSignIn, PENDING_SESSION_SECONDS, SESSION_LIFETIME_SECONDS } from "../flow.js";
import { html, trusted } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

type SecondFactor = "totp" | "email" | "u2f";

/** The second factors the user has set up that its organization's login settings allow, in this order. */
async function secondFactors(r: LoginRequest, s: BrowserSession): Promise<SecondFactor[]> {
  if (!s.userId) return [];
  const methods = await authenticationMethodTypes(r.ctx, s.userId);
  const login = await effectiveSetting(r.ctx, "login", r.orgId);
  const out: SecondFactor[] = [];
  if (methods.includes("TOTP") && login.secondFactors.includes("otp")) out.push("totp");
  if (methods.includes("PASSKEY") && login.secondFactors.includes("u2f")) out.push("u2f");
  if (methods.includes("OTP_EMAIL") && login.secondFactors.includes("otp_email")) out.push("email");
  return out;
}

/** The browser's session of this flow, or a redirect to the start when the browser no longer holds it. */
async function flowSession(r: LoginRequest): Promise<BrowserSession | undefined> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  if (!s) {
    r.redirect(r.url("/login", r.flowQuery()));
    return undefined;
  }
  r.orgId ??= await r.orgOf(s);
  return s;
}

/** Runs checks (and challenges) on the flow's session and keeps the new token; false (and redirected) when it is gone. */
async function check(r: LoginRequest, s: BrowserSession, checks: SessionChecks, challenges = {}): Promise<BrowserSession | undefined> {
  try {
    // A pending session (made for a passkey before any factor) lives as long as any other once a check succeeded.
    const lifetimeSeconds = s.pending && Object.keys(checks).length ? SESSION_LIFETIME_SECONDS : undefined;
    const changed = await setSession(r.ctx, { sessionId: s.id, sessionToken: s.token, checks, challenges, metadata: {}, lifetimeSeconds });
    const next: BrowserSession = { ...s, token: changed.sessionToken, ...(lifetimeSeconds ? { pending: undefined } : {}) };
    r.setState(withSession(r.state, next));
    r.lastChallenges = changed.challenges;
    return next;
  } catch (err) {
    const d = asDomainError(err);
    if (d?.id === "Errors.Session.NotFound" || d?.id === "Errors.Session.Token.Invalid") {
      r.setState(withoutSession(r.state, s.id));
      r.redirect(r.url("/login", r.flowQuery()));
      return undefined;
    }
    throw err;
  }
}

function codeError(r: LoginRequest, err: unknown): string | undefined {
  const d = asDomainError(err);
  switch (d?.id) {
    case "Errors.User.Code.Invalid":
      return r.t("mfa.codeWrong");
    case "Errors.User.Code.Expired":
    case "Errors.Session.OTPEmail.NoChallenge":
      return r.t("mfa.codeExpired");
    case "Errors.User.Locked":
      return r.t("password.locked");
  }
  if (d?.kind === "ResourceExhausted") return r.t("common.tooManyAttempts");
  return undefined;
}

function webauthnError(r: LoginRequest, err: unknown): string | undefined {
  const d = asDomainError(err);
  if (!d) return undefined;
  if (d.id === "Errors.User.Passkey.NoneReady") return r.t("passkey.none");
  if (d.id.startsWith("Errors.Session.WebAuthN.")) return r.t("passkey.failed");
  if (d.kind === "InvalidArgument") return r.t("passkey.failed");
  return undefined;
}

const CODE_FIELD = { name: "code", type: "text", autocomplete: "one-time-code", inputmode: "numeric", required: true, autofocus: true, maxlength: 12 };

/** The relying party of passkeys: the external URL's host. */
const rpDomain = (deps: LoginDeps) => new URL(deps.externalUrl).hostname;

/** A WebAuthn page: the options for the script, the form it fills, and what to do without JavaScript. */
async function webauthnPage(
  r: LoginRequest,
  o: { action: string; title: string; subtitle: string; s?: BrowserSession; loginName?: string; options: unknown; error?: string; alternatives?: unknown },
  status = 200,
) {
  // JSON in a data block (not executed; the CSP allows no inline script): "<" escaped so it cannot close the element.
  const json = JSON.stringify(o.options).replace(/</g, "\\u003c");
  await r.render(
    (p) => ({
      title: o.title,
      subtitle: o.subtitle,
      body: html`${alert(o.error)}<div id="webauthn-error" class="alert alert-error" role="alert" hidden></div>
<script type="application/json" id="webauthn-options">${trusted(json)}</script>
<form method="post" action="${o.action}" id="webauthn-form" data-ceremony="authenticate" data-error-text="${p.t("passkey.failed")}">
${hidden(p, r.flowQuery(o.s ? { session: o.s.id } : { loginName: o.loginName }))}
<input type="hidden" name="credential" id="webauthn-credential" />
<button type="submit" class="button primary" id="webauthn-start">${p.t("passkey.start")}</button>
</form>
<noscript><p>${p.t("passkey.noScript")}</p></noscript>
${o.alternatives ?? ""}`,
      scripts: ["simplewebauthn-browser.js", "webauthn.js"],
    }),
    status,
  );
}

function parseCredential(r: LoginRequest): Record<string, unknown> | undefined {
  const raw = r.param("credential");
  if (!raw || raw.length > 16_384) return undefined;
  try {
    const v = JSON.parse(raw) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A passkey as the first factor for a typed login name (no session yet): a pending session of the user, short-lived
 * until the passkey is proven, made with its challenge. An unknown name (or a user who cannot sign in here) gets the
 * same page with a challenge no authenticator can answer, so the page does not tell whether the name exists.
 */
async function pendingPasskeySession(r: LoginRequest, deps: LoginDeps): Promise<{ s?: BrowserSession; options: unknown } | undefined> {
  await r.loadAuthRequest();
  const loginName = (r.param("loginName") ?? "").trim();
  if (!loginName || loginName.length > 200) {
    r.redirect(r.url("/login", r.flowQuery()));
    return undefined;
  }
  try {
    const created = await createSession(r.ctx, {
      checks: { user: { loginName } },
      challenges: { webAuthN: { domain: rpDomain(deps), userVerification: "required" } },
      metadata: {},
      userAgent: r.userAgent(),
      lifetimeSeconds: PENDING_SESSION_SECONDS,
    });
    const s: BrowserSession = { id: created.sessionId, token: created.sessionToken, loginName, pending: true };
    const view = await getSession(r.ctx, s.id, s.token);
    s.userId = view.factors.user?.id;
    if (view.factors.user) s.loginName = view.factors.user.loginName;
    r.orgId ??= view.factors.user?.orgId;
    r.setState(withSession(r.state, s));
    return { s, options: created.challenges.webAuthN?.publicKeyCredentialRequestOptions };
  } catch (err) {
    const d = asDomainError(err);
    // Unknown, no passkey, cannot sign in, or too many sessions already waiting: the same page (a 429 here would tell
    // that the name exists).
    if (!d || (d.kind !== "NotFound" && d.kind !== "FailedPrecondition" && d.id !== "Errors.Session.TooManyPending")) throw err;
    return {
      options: { challenge: randomBytes(32).toString("base64url"), timeout: 300_000, rpId: rpDomain(deps), allowCredentials: [], userVerification: "required" },
    };
  }
}

const passkeyGet = (deps: LoginDeps, kind: "passkey" | "u2f") =>
  page(deps, async (r) => {
    if (kind === "passkey" && !r.idParam("session") && r.param("loginName") !== undefined) {
      const pending = await pendingPasskeySession(r, deps);
      if (!pending) return;
      const loginName = (r.param("loginName") ?? "").trim();
      return webauthnPage(r, {
        action: r.url("/passkey"),
        title: r.t("passkey.title"),
        subtitle: r.t("passkey.subtitle"),
        s: pending.s,
        loginName: pending.s ? undefined : loginName,
        options: pending.options,
        error: r.param("failed") === "1" ? r.t("passkey.failed") : undefined,
        alternatives: html`<p><a href="${r.url("/password", r.flowQuery({ loginName }))}">${r.t("passkey.usePassword")}</a></p>`,
      });
    }
    const s = await flowSession(r);
    if (!s) return;
    const userVerification = kind === "passkey" ? "required" : "discouraged";
    let challenged: BrowserSession | undefined;
    try {
      challenged = await check(r, s, {}, { webAuthN: { domain: rpDomain(deps), userVerification } });
    } catch (err) {
      const message = webauthnError(r, err) ?? (asDomainError(err)?.id === "Errors.User.Factor.NotAllowed" ? r.t("passkey.notAllowed") : undefined);
      if (!message) throw err;
      return r.render(
        (p) => ({
          title: p.t("passkey.title"),
          body: html`${alert(message)}<p><a href="${p.url("/password", r.flowQuery({ session: s.id }))}">${p.t("passkey.usePassword")}</a></p>`,
        }),
        400,
      );
    }
    if (!challenged) return;
    const options = r.lastChallenges?.webAuthN?.publicKeyCredentialRequestOptions;
    await webauthnPage(r, {
      action: r.url(kind === "passkey" ? "/passkey" : "/mfa/u2f"),
      title: r.t(kind === "passkey" ? "passkey.title" : "mfa.u2f.title"),
      subtitle: r.t(kind === "passkey" ? "passkey.subtitle" : "mfa.u2f.subtitle"),
      s: challenged,
      options,
      // Back from a refused answer (passkeyPost redirects here with a new challenge).
      error: r.param("failed") === "1" ? r.t("passkey.failed") : undefined,
      alternatives:
        kind === "passkey"
          ? html`<p><a href="${r.url("/password", r.flowQuery({ session: s.id }))}">${r.t("passkey.usePassword")}</a></p>`
          : html`<p><a href="${r.url("/mfa", r.flowQuery({ session: s.id, choose: "1" }))}">${r.t("mfa.other")}</a></p>`,
    });
  });

const passkeyPost = (deps: LoginDeps, kind: "passkey" | "u2f") =>
  page(deps, async (r) => {
    if (kind === "passkey" && !r.idParam("session") && r.param("loginName") !== undefined) {
      // The page of a name with no user: no answer can be right.
      await r.loadAuthRequest();
      return r.redirect(r.url("/passkey", r.flowQuery({ loginName: (r.param("loginName") ?? "").trim().slice(0, 200), failed: "1" })));
    }
    const s = await flowSession(r);
    if (!s) return;
    const credential = parseCredential(r);
    try {
      if (!credential) throw new DomainError("InvalidArgument", "Errors.Session.WebAuthN.Invalid", "no passkey answer in the form");
      const next = await check(r, s, { webAuthN: { credentialAssertionData: credential } });
      if (next) await continueSignIn(r, next, { proved: true });
    } catch (err) {
      if (!webauthnError(r, err)) throw err;
      r.redirect(r.url(kind === "passkey" ? "/passkey" : "/mfa/u2f", r.flowQuery({ session: s.id, failed: "1" })));
    }
  });

const totpPage = (r: LoginRequest, s: BrowserSession, error?: string, status = 200) =>
  r.render(
    (p) => ({
      title: p.t("mfa.totp.title"),
      subtitle: p.t("mfa.totp.subtitle"),
      body: html`<form method="post" action="${p.url("/mfa/totp")}" novalidate>
${hidden(p, r.flowQuery({ session: s.id }))}
${field({ ...CODE_FIELD, label: p.t("mfa.code"), error })}
<button type="submit" class="button primary">${p.t("common.verify")}</button>
</form>
<p><a href="${p.url("/mfa", r.flowQuery({ session: s.id, choose: "1" }))}">${p.t("mfa.other")}</a></p>`,
    }),
    status,
  );

const emailPage = (r: LoginRequest, s: BrowserSession, o: { sent: boolean; error?: string }, status = 200) =>
  r.render(
    (p) => ({
      title: p.t("mfa.email.title"),
      subtitle: o.sent ? p.t("mfa.email.sent") : p.t("mfa.email.subtitle"),
      body: html`${
        o.sent
          ? html`<form method="post" action="${p.url("/mfa/email")}" novalidate>
${hidden(p, r.flowQuery({ session: s.id }))}
${field({ ...CODE_FIELD, label: p.t("mfa.code"), error: o.error })}
<button type="submit" class="button primary">${p.t("common.verify")}</button>
</form>`
          : alert(o.error)
      }
<form method="post" action="${p.url("/mfa/email/send")}">
${hidden(p, r.flowQuery({ session: s.id }))}
<button type="submit" class="button ${o.sent ? "secondary" : "primary"}">${p.t(o.sent ? "mfa.email.resend" : "mfa.email.send")}</button>
</form>
<p><a href="${p.url("/mfa", r.flowQuery({ session: s.id, choose: "1" }))}">${p.t("mfa.other")}</a></p>`,
    }),
    status,
  );

async function getMfa(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (!s) return;
  const factors = await secondFactors(r, s);
  if (factors.length === 0) return r.redirect(r.url("/mfa/setup", r.flowQuery({ session: s.id })));
  if (factors.length === 1 && r.param("choose") !== "1") return r.redirect(r.url(`/mfa/${factors[0]}`, r.flowQuery({ session: s.id })));
  await r.render((p) => ({
    title: p.t("mfa.title"),
    subtitle: p.t("mfa.subtitle"),
    body: html`<ul class="choices">${factors.map((f) => html`<li><a class="button secondary" href="${p.url(`/mfa/${f}`, r.flowQuery({ session: s.id }))}">${p.t(`mfa.${f}.choice`)}</a></li>`)}</ul>`,
  }));
}

async function getMfaTotp(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (s) await totpPage(r, s);
}

async function postMfaTotp(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (!s) return;
  try {
    const next = await check(r, s, { totp: { code: (r.param("code") ?? "").replace(/\s/g, "").slice(0, 12) } });
    if (next) await continueSignIn(r, next, { proved: true });
  } catch (err) {
    const message = codeError(r, err);
    if (!message) throw err;
    await totpPage(r, s, message, 400);
  }
}

async function getMfaEmail(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (s) await emailPage(r, s, { sent: r.param("sent") === "1" });
}

async function postMfaEmailSend(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (!s) return;
  try {
    const next = await check(r, s, {}, { otpEmail: { delivery: "send" } });
    if (next) r.redirect(r.url("/mfa/email", r.flowQuery({ session: s.id, sent: "1" })));
  } catch (err) {
    const d = asDomainError(err);
    const message = d?.id === "Errors.Smtp.NotConfigured" || d?.kind === "Unavailable" ? r.t("mfa.email.unavailable") : codeError(r, err);
    if (!message) throw err;
    await emailPage(r, s, { sent: false, error: message }, 400);
  }
}

async function postMfaEmail(r: LoginRequest): Promise<void> {
  const s = await flowSession(r);
  if (!s) return;
  try {
    const next = await check(r, s, { otpEmail: { code: (r.param("code") ?? "").replace(/\s/g, "").slice(0, 12) } });
    if (next) await continueSignIn(r, next, { proved: true });
  } catch (err) {
    const message = codeError(r, err);
    if (!message) throw err;
    await emailPage(r, s, { sent: true, error: message }, 400);
  }
}

export function factorPages(app: Express, deps: LoginDeps): void {
  // ------------------------------------------------------------ passkey as the first factor
  app.get("/ui/login/passkey", passkeyGet(deps, "passkey"));
  app.post("/ui/login/passkey", passkeyPost(deps, "passkey"));
  app.get("/ui/login/mfa/u2f", passkeyGet(deps, "u2f"));
  app.post("/ui/login/mfa/u2f", passkeyPost(deps, "u2f"));

  // ------------------------------------------------------------ choosing a second factor

  // ------------------------------------------------------------ TOTP

  // ------------------------------------------------------------ a code by e-mail
  app.get("/ui/login/mfa", page(deps, getMfa));
  app.get("/ui/login/mfa/totp", page(deps, getMfaTotp));
  app.post("/ui/login/mfa/totp", page(deps, postMfaTotp));
  app.get("/ui/login/mfa/email", page(deps, getMfaEmail));
  app.post("/ui/login/mfa/email/send", page(deps, postMfaEmailSend));
  app.post("/ui/login/mfa/email", page(deps, postMfaEmail));
}
