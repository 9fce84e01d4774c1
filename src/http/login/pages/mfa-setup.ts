// Setting up a second factor: during a sign-in at the policy's set-up step (MFA forced, the user has none yet), and
// from the account page. Within the sign-in the hosted login registers as the login client, from the account page (a
// complete session) the user for itself; either way with this browser's session presented, which the domain accepts
// only when the sign-in policy lets that session bind an authenticator (policy.ts sensitiveChange). A new
// factor is then proven once on the session like any other (the TOTP code used to verify the registration cannot
// be used again), so the sign-in continues through continueSignIn.
import type { Express } from "express";
import QRCode from "qrcode";
import type { Ctx } from "../../../domain/context.js";
import { asDomainError } from "../../../domain/errors.js";
import { listPasskeys, registerPasskey, verifyPasskeyRegistration } from "../../../domain/identity/authn/passkeys.js";
import { registerTotp, verifyTotpRegistration } from "../../../domain/identity/authn/totp.js";
import { type LinkedSession, sessionForLink, signInState } from "../../../domain/sessions/link.js";
import { type SecondFactor, sensitiveChange } from "../../../domain/sessions/policy.js";
import { effectiveSetting } from "../../../domain/settings/settings.js";
import { type LoginDeps, presenting, selfCtx } from "../context.js";
import { type BrowserSession, withoutSession } from "../cookie.js";
import { continueSignIn, proveAgain } from "../flow.js";
import { html, trusted } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

/** Who registers: the user itself on a complete session (the account page), else the login client within the sign-in. */
interface Actor {
  s: BrowserSession;
  linked: LinkedSession;
  /** Acts with this browser's session presented: the domain accepts the new factor only on its proof. */
  ctx: Ctx;
  /** The session is signed in completely: the user came from the account page, which it returns to. */
  complete: boolean;
  /** What may be set up: during a sign-in, the set-up step's factors; from the account page, what the settings allow. */
  options: SecondFactor[];
}

/**
 * The browser's session, when the sign-in policy lets it bind a new authenticator: a complete sign-in with a recent
 * first factor (else the first factor is asked again), or a sign-in at its set-up step (MFA forced, no second factor
 * yet). Any other session goes on with its own next step: a user with a second factor proves it before anything is
 * added. The domain checks the same again when the factor is registered.
 */
async function actor(r: LoginRequest): Promise<Actor | undefined> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  let linked: LinkedSession | undefined;
  if (s) {
    try {
      linked = await sessionForLink(r.ctx, s.id, s.token);
    } catch (err) {
      if (!asDomainError(err)) throw err;
      r.setState(withoutSession(r.state, s.id));
    }
  }
  if (!s || !linked) {
    r.redirect(r.url("/login", r.flowQuery()));
    return undefined;
  }
  r.orgId ??= linked.orgId;
  const state = await signInState(r.ctx, linked);
  const verdict = sensitiveChange(state, linked.factors, "bindAuthenticator", r.ctx.clock());
  if (verdict === "proveAgain") {
    await proveAgain(r, s);
    return undefined;
  }
  if (verdict === "signInFirst") {
    await continueSignIn(r, s);
    return undefined;
  }
  const complete = state.step.kind === "done";
  const ctx = presenting(complete ? selfCtx(r.deps, r.req, { id: linked.userId, orgId: linked.orgId }) : r.ctx, s);
  let options: SecondFactor[];
  if (state.step.kind === "setUpSecondFactor") options = state.step.options;
  else {
    const login = await effectiveSetting(r.ctx, "login", linked.orgId);
    options = [...(login.secondFactors.includes("otp") ? (["totp"] as const) : []), ...(login.passkeysAllowed ? (["u2f"] as const) : [])];
  }
  return { s, linked, ctx, complete, options };
}

/** After a factor is ready: back to the account page, or on with the sign-in (which asks for the new factor once). */
async function done(r: LoginRequest, a: Actor, which: "totp" | "passkey"): Promise<void> {
  if (a.complete && !r.authRequest && !r.samlRequest) return r.redirect(r.url("/account", { session: a.s.id, added: which }));
  await continueSignIn(r, a.s, { proved: true });
}

const rpDomain = (deps: LoginDeps) => new URL(deps.externalUrl).hostname;

async function getSetup(r: LoginRequest): Promise<void> {
  const a = await actor(r);
  if (!a) return;
  const choices: { path: string; key: string }[] = [];
  if (a.options.includes("totp")) choices.push({ path: "/mfa/setup/totp", key: "setup.totp.choice" });
  if (a.options.includes("u2f")) choices.push({ path: "/mfa/setup/passkey", key: "setup.passkey.choice" });
  await r.render((p) => ({
    title: p.t("setup.title"),
    subtitle: p.t(a.complete ? "setup.subtitleAccount" : "setup.subtitle"),
    body: html`${choices.length ? "" : alert(p.t("setup.none"))}<ul class="choices">${choices.map(
      (c) => html`<li><a class="button secondary" href="${p.url(c.path, r.flowQuery({ session: a.s.id }))}">${p.t(c.key)}</a></li>`,
    )}</ul>
${a.complete ? html`<p><a href="${p.url("/account", { session: a.s.id })}">${p.t("setup.back")}</a></p>` : ""}`,
  }));
}

// ------------------------------------------------------------------------------------------------------------- TOTP

const SECRET = /^[A-Z2-7]{16,128}=*$/;
const MAX_URI = 1_000;

async function totpPage(r: LoginRequest, a: Actor, reg: { uri: string; secret: string }, error?: string, status = 200): Promise<void> {
  // The QR code is SVG generated from the URI by the library: markup svc makes, never a request's text.
  const svg = await QRCode.toString(reg.uri, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
  await r.render(
    (p) => ({
      title: p.t("setup.totp.title"),
      subtitle: p.t("setup.totp.subtitle"),
      body: html`<div class="qr" role="img" aria-label="${p.t("setup.totp.qr")}">${trusted(svg)}</div>
<p>${p.t("setup.totp.manual")}</p>
<p><span class="secret" id="totp-secret">${reg.secret}</span></p>
<p><a href="${reg.uri}">${p.t("setup.totp.openApp")}</a></p>
<form method="post" action="${p.url("/mfa/setup/totp")}" novalidate>
${hidden(p, r.flowQuery({ session: a.s.id, uri: reg.uri, secret: reg.secret }))}
${field({ name: "code", label: p.t("setup.totp.code"), autocomplete: "one-time-code", inputmode: "numeric", required: true, autofocus: true, maxlength: 12, error })}
<button type="submit" class="button primary">${p.t("setup.totp.verify")}</button>
</form>
<p><a href="${p.url("/mfa/setup", r.flowQuery({ session: a.s.id }))}">${p.t("setup.other")}</a></p>`,
    }),
    status,
  );
}

/** The actor, when `factor` is one it may set up now (else back to the choice). */
async function actorFor(r: LoginRequest, factor: SecondFactor): Promise<Actor | undefined> {
  const a = await actor(r);
  if (a && !a.options.includes(factor)) {
    r.redirect(r.url("/mfa/setup", r.flowQuery({ session: a.s.id })));
    return undefined;
  }
  return a;
}

async function getTotp(r: LoginRequest): Promise<void> {
  const a = await actorFor(r, "totp");
  if (!a) return;
  const reg = await registerTotp(a.ctx, a.linked.userId);
  await totpPage(r, a, reg);
}

async function postTotp(r: LoginRequest): Promise<void> {
  const a = await actorFor(r, "totp");
  if (!a) return;
  const code = (r.param("code") ?? "").replace(/\s/g, "").slice(0, 12);
  try {
    await verifyTotpRegistration(a.ctx, a.linked.userId, code);
  } catch (err) {
    const d = asDomainError(err);
    if (!d) throw err;
    // The registration the page showed is still pending: shown again so the user need not scan a new code.
    const uri = r.param("uri") ?? "";
    const secret = r.param("secret") ?? "";
    const shown = uri.startsWith("otpauth://totp/") && uri.length <= MAX_URI && SECRET.test(secret);
    if (d.id === "Errors.User.TOTP.NotRegistered" || d.id === "Errors.User.TOTP.AlreadyReady" || !shown) {
      return r.redirect(r.url("/mfa/setup/totp", r.flowQuery({ session: a.s.id })));
    }
    const message =
      d.kind === "ResourceExhausted"
        ? r.t("common.tooManyAttempts")
        : d.id === "Errors.User.Locked"
          ? r.t("password.locked")
          : d.id === "Errors.User.Code.Invalid"
            ? r.t("setup.totp.wrong")
            : undefined;
    if (!message) throw err;
    return totpPage(r, a, { uri, secret }, message, 400);
  }
  await done(r, a, "totp");
}

// ---------------------------------------------------------------------------------------------------------- passkeys

const MAX_NAME = 200;

async function getPasskey(r: LoginRequest): Promise<void> {
  const a = await actorFor(r, "u2f");
  if (!a) return;
  const reg = await registerPasskey(a.ctx, { userId: a.linked.userId, domain: rpDomain(r.deps) });
  const count = a.complete ? (await listPasskeys(a.ctx, a.linked.userId)).filter((k) => k.ready).length : 0;
  // JSON in a data block (not executed; the CSP allows no inline script): "<" escaped so it cannot close the element.
  const json = JSON.stringify(reg.options).replace(/</g, "\\u003c");
  const failed = r.param("failed") === "1" ? r.t("setup.passkey.failed") : undefined;
  await r.render((p) => ({
    title: p.t("setup.passkey.title"),
    subtitle: p.t("setup.passkey.subtitle"),
    body: html`${alert(failed)}<div id="webauthn-error" class="alert alert-error" role="alert" hidden></div>
<script type="application/json" id="webauthn-options">${trusted(json)}</script>
<form method="post" action="${p.url("/mfa/setup/passkey")}" id="webauthn-form" data-ceremony="register" data-error-text="${p.t("setup.passkey.failed")}">
${hidden(p, r.flowQuery({ session: a.s.id, passkeyId: reg.passkeyId }))}
<input type="hidden" name="credential" id="webauthn-credential" />
${field({ name: "name", label: p.t("setup.passkey.name"), value: p.t("setup.passkey.defaultName", { n: count + 1 }), required: true, maxlength: MAX_NAME })}
<button type="submit" class="button primary" id="webauthn-start">${p.t("setup.passkey.start")}</button>
</form>
<noscript><p>${p.t("setup.passkey.noScript")}</p></noscript>
<p><a href="${p.url("/mfa/setup", r.flowQuery({ session: a.s.id }))}">${p.t("setup.other")}</a></p>`,
    scripts: ["simplewebauthn-browser.js", "webauthn.js"],
  }));
}

function parseCredential(raw: string | undefined): Record<string, unknown> | undefined {
  if (!raw || raw.length > 16_384) return undefined;
  try {
    const v = JSON.parse(raw) as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

async function postPasskey(r: LoginRequest): Promise<void> {
  const a = await actorFor(r, "u2f");
  if (!a) return;
  const name = (r.param("name") ?? "").trim().slice(0, MAX_NAME) || r.t("setup.passkey.defaultName", { n: 1 });
  try {
    await verifyPasskeyRegistration(a.ctx, {
      userId: a.linked.userId,
      passkeyId: r.idParam("passkeyId") ?? "",
      credential: parseCredential(r.param("credential")),
      name,
    });
  } catch (err) {
    const d = asDomainError(err);
    if (!d || (d.kind !== "InvalidArgument" && d.kind !== "NotFound" && d.kind !== "FailedPrecondition")) throw err;
    return r.redirect(r.url("/mfa/setup/passkey", r.flowQuery({ session: a.s.id, failed: "1" })));
  }
  await done(r, a, "passkey");
}

export function mfaSetupPages(app: Express, deps: LoginDeps): void {
  app.get("/ui/login/mfa/setup", page(deps, getSetup));
  app.get("/ui/login/mfa/setup/totp", page(deps, getTotp));
  app.post("/ui/login/mfa/setup/totp", page(deps, postTotp));
  app.get("/ui/login/mfa/setup/passkey", page(deps, getPasskey));
  app.post("/ui/login/mfa/setup/passkey", page(deps, postPasskey));
}
