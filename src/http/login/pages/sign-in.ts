// The first steps of a sign-in: the login name, the password, and choosing one of this browser's accounts. Wrong
// password, unknown user: the same message, so the pages never tell whether a login name exists; a locked user is
// told so once the lock applies.
import type { Express } from "express";
import { hashPassword, verifyPassword } from "../../../crypto/passwords.js";
import { asDomainError } from "../../../domain/errors.js";
import { authenticationMethodTypes } from "../../../domain/identity/authn/methods.js";
import type { AuthorizationError } from "../../../domain/oauth/authorize/callback.js";
import { type AuthRequestView, createCallback } from "../../../domain/oauth/authorize/login-ui.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { createSession, setSession } from "../../../domain/sessions/sessions.js";
import type { LoginDeps } from "../context.js";
import { type BrowserSession, withoutSession, withSession } from "../cookie.js";
import { continueSignIn, firstFactorPath, SESSION_LIFETIME_SECONDS } from "../flow.js";
import { html } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";
import { offeredProviders, providerButtons } from "./external.js";
import { samlPassive } from "./saml-post.js";

const MAX_LOGIN_NAME = 200;
const MAX_PASSWORD = 256;

async function loginNamePage(r: LoginRequest, o: { loginName?: string; error?: string; notice?: string } = {}, status = 200) {
  const login = r.login ?? (await r.loadLoginSettings());
  const idps = login.allowExternalIdp ? await offeredProviders(r.ctx, await r.settingsOrg()) : [];
  await r.render(
    (p) => ({
      title: p.t("login.title"),
      subtitle: p.t("login.subtitle"),
      body: html`${alert(o.notice, "info")}<form method="post" action="${p.url("/login")}" novalidate>
${hidden(p, r.flowQuery())}
${field({ name: "loginName", label: p.t("login.loginName"), value: o.loginName, autocomplete: "username webauthn", required: true, autofocus: true, error: o.error, maxlength: MAX_LOGIN_NAME })}
<button type="submit" class="button primary">${p.t("common.next")}</button>
</form>
${r.state.sessions.length ? html`<p><a href="${p.url("/accounts", r.flowQuery())}">${p.t("login.chooseAccount")}</a></p>` : ""}
${providerButtons(p, r, idps)}
${r.registrationAllowed ? html`<p>${p.t("login.noAccount")} <a href="${p.url("/register", r.flowQuery())}">${p.t("login.register")}</a></p>` : ""}`,
    }),
    status,
  );
}

async function passwordPage(r: LoginRequest, s: { id?: string; userId?: string; loginName: string }, error?: string, status = 200) {
  // The passkey is offered only to a user who has one (an unknown login name has none).
  const passkey = s.id !== undefined && s.userId !== undefined && (await authenticationMethodTypes(r.ctx, s.userId)).includes("PASSKEY");
  await r.render(
    (p) => ({
      title: p.t("password.title"),
      subtitle: html`<span class="identity">${p.shown(s.loginName)}</span> <a href="${p.url("/login", r.flowQuery({ fresh: "1" }))}">${p.t("common.notYou")}</a>`,
      body: html`${alert(error)}<form method="post" action="${p.url("/password")}" novalidate>
${hidden(p, r.flowQuery({ session: s.id, loginName: s.id ? undefined : s.loginName }))}
<input type="text" name="username" value="${s.loginName}" autocomplete="username" hidden readonly />
${field({ name: "password", label: p.t("password.password"), type: "password", autocomplete: "current-password", required: true, autofocus: true, error: undefined, maxlength: MAX_PASSWORD })}
<button type="submit" class="button primary">${p.t("common.next")}</button>
</form>
<p><a href="${p.url("/password/reset", r.flowQuery({ loginName: s.loginName }))}">${p.t("password.forgot")}</a></p>
${passkey ? html`<p><a href="${p.url("/passkey", r.flowQuery({ session: s.id }))}">${p.t("password.usePasskey")}</a></p>` : ""}`,
    }),
    status,
  );
}

/** The one message for a wrong password and an unknown login name. */
const wrongCredentials = (r: LoginRequest) => r.t("password.wrong");

function passwordError(r: LoginRequest, err: unknown): string | undefined {
  const d = asDomainError(err);
  switch (d?.id) {
    case "Errors.User.Password.Invalid":
    case "Errors.User.NotFound":
    case "Errors.Session.Password.Missing":
      return wrongCredentials(r);
    case "Errors.User.Locked":
      return r.t("password.locked");
    case "Errors.User.NotActive":
    case "Errors.Org.NotActive":
      return r.t("password.inactive");
    case "Errors.Session.Password.NotAllowed":
      return r.t("password.notAllowed");
  }
  if (d?.kind === "ResourceExhausted") return r.t("common.tooManyAttempts");
  return undefined;
}

// An unknown login name costs what a known one does: one password hash verified (against a hash of nothing).
let decoy: Promise<string> | undefined;
async function decoyCheck(password: string): Promise<void> {
  decoy ??= hashPassword("svc-decoy-password");
  await verifyPassword(await decoy, password).catch(() => undefined);
}

/**
 * prompt=none: no page may be shown. The one session of this browser that fits (the hinted user's, or the only one)
 * finishes the request when its sign-in is complete; otherwise the client gets the error that says why.
 */
async function promptNone(r: LoginRequest, request: AuthRequestView): Promise<void> {
  const finisher = { issuer: r.deps.issuer, codeLifetime: r.deps.codeLifetime };
  const finish = async (error: AuthorizationError, description: string) => {
    r.redirect((await createCallback(r.ctx, finisher, { authRequestId: request.id, error: { error, description } })).callbackUrl);
  };
  const live: BrowserSession[] = [];
  for (const s of r.state.sessions) if (await r.stillValid(s)) live.push(s);
  const hinted = request.loginHint ? live.filter((s) => s.loginName === request.loginHint) : live;
  if (hinted.length > 1) return finish("account_selection_required", "more than one account is signed in: the user must choose");
  const only = hinted[0];
  if (!only) return finish("login_required", "no usable session: the user must sign in");
  try {
    const session = { sessionId: only.id, sessionToken: only.token };
    r.redirect((await createCallback(r.ctx, finisher, { authRequestId: request.id, session })).callbackUrl);
  } catch (err) {
    const d = asDomainError(err);
    if (!d) throw err;
    if (d.id === "Errors.AuthRequest.AccessDenied") return finish("access_denied", "the user may not sign in to this application");
    if (d.id === "Errors.Session.MfaRequired" || d.id === "Errors.Session.PasswordChangeRequired") {
      return finish("interaction_required", "the sign-in needs the user to act");
    }
    if (d.kind === "FailedPrecondition" || d.kind === "NotFound" || d.kind === "PermissionDenied") {
      return finish("login_required", "no usable session: the user must sign in");
    }
    throw err;
  }
}

async function getLogin(r: LoginRequest): Promise<void> {
  const request = await r.loadAuthRequest();
  await r.loadLoginSettings();
  if (request?.prompt.includes("none")) return promptNone(r, request);
  if (request?.prompt.includes("create") && r.registrationAllowed) return r.redirect(r.url("/register", r.flowQuery()));
  if (request?.prompt.includes("select_account") && r.state.sessions.length) return r.redirect(r.url("/accounts", r.flowQuery()));
  if (r.samlRequest?.isPassive) return samlPassive(r, r.samlRequest);
  const fresh = r.param("fresh") === "1" || request?.prompt.includes("login") || r.samlRequest?.forceAuthn;
  if ((request || r.samlRequest) && !fresh && r.state.sessions.length) {
    const hinted = r.state.sessions.filter(
      (s) => (request?.hintUserId && s.userId === request.hintUserId) || (request?.loginHint && s.loginName === request.loginHint),
    );
    const candidates = request?.hintUserId || request?.loginHint ? hinted : r.state.sessions;
    if (candidates.length > 1) return r.redirect(r.url("/accounts", r.flowQuery()));
    const only = candidates[0];
    if (only && (await r.stillValid(only))) return continueSignIn(r, only);
  }
  const notice = r.param("mismatch") === "1" ? r.t("login.mismatch") : undefined;
  await loginNamePage(r, { loginName: request?.loginHint ?? undefined, notice });
}

async function postLogin(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  await r.loadLoginSettings();
  const loginName = (r.param("loginName") ?? "").trim();
  if (!loginName || loginName.length > MAX_LOGIN_NAME) return loginNamePage(r, { loginName, error: r.t("login.loginNameRequired") }, 400);
  try {
    const created = await createSession(r.ctx, {
      checks: { user: { loginName } },
      challenges: {},
      metadata: {},
      userAgent: r.userAgent(),
      lifetimeSeconds: SESSION_LIFETIME_SECONDS,
    });
    const view = await getSession(r.ctx, created.sessionId, created.sessionToken);
    const user = view.factors.user;
    r.orgId ??= user?.orgId;
    const s: BrowserSession = { id: created.sessionId, token: created.sessionToken, userId: user?.id, loginName: user?.loginName ?? loginName };
    r.setState(withSession(r.state, s));
    return r.redirect(r.url(await firstFactorPath(r, s), r.flowQuery({ session: s.id })));
  } catch (err) {
    const d = asDomainError(err);
    // Unknown: the password page all the same; its answer will be the one of a wrong password.
    if (d?.id === "Errors.User.NotFound") return passwordPage(r, { loginName });
    const message = passwordError(r, err);
    if (message) return loginNamePage(r, { loginName, error: message }, 400);
    throw err;
  }
}

async function getPassword(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  if (!s) return r.redirect(r.url("/login", r.flowQuery()));
  r.orgId ??= await r.orgOf(s);
  await passwordPage(r, { id: s.id, userId: s.userId, loginName: s.loginName ?? "" });
}

async function postPassword(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const password = r.param("password") ?? "";
  const s = r.session(r.idParam("session"));
  if (!s) {
    const loginName = (r.param("loginName") ?? "").slice(0, MAX_LOGIN_NAME);
    if (!loginName) return r.redirect(r.url("/login", r.flowQuery()));
    await decoyCheck(password.slice(0, MAX_PASSWORD));
    return passwordPage(r, { loginName }, wrongCredentials(r), 400);
  }
  r.orgId ??= await r.orgOf(s);
  try {
    const changed = await setSession(r.ctx, { sessionId: s.id, sessionToken: s.token, checks: { password: { password } }, challenges: {}, metadata: {} });
    const next = { ...s, token: changed.sessionToken };
    r.setState(withSession(r.state, next));
    return continueSignIn(r, next);
  } catch (err) {
    const d = asDomainError(err);
    if (d?.id === "Errors.Session.NotFound" || d?.id === "Errors.Session.Token.Invalid") {
      r.setState(withoutSession(r.state, s.id));
      return r.redirect(r.url("/login", r.flowQuery()));
    }
    const message = passwordError(r, err);
    if (message) return passwordPage(r, { id: s.id, userId: s.userId, loginName: s.loginName ?? "" }, message, 400);
    throw err;
  }
}

async function getAccounts(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const accounts: { s: BrowserSession; displayName: string; loginName: string }[] = [];
  for (const s of r.state.sessions) {
    try {
      const view = await getSession(r.ctx, s.id, s.token);
      if (view.factors.user) accounts.push({ s, displayName: view.factors.user.displayName, loginName: view.factors.user.loginName });
    } catch {
      r.setState(withoutSession(r.state, s.id));
    }
  }
  await r.render((p) => ({
    title: p.t("accounts.title"),
    subtitle: p.t("accounts.subtitle"),
    body: html`<ul class="accounts">${accounts.map(
      (a) =>
        html`<li><form method="post" action="${p.url("/accounts")}">${hidden(p, r.flowQuery({ session: a.s.id }))}<button type="submit" class="account"><span class="name">${a.displayName}</span><span class="login-name">${p.shown(a.loginName)}</span></button></form></li>`,
    )}</ul>
<p><a class="button secondary" href="${p.url("/login", r.flowQuery({ fresh: "1" }))}">${p.t("accounts.other")}</a></p>`,
  }));
}

async function postAccounts(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  if (!s || !(await r.stillValid(s))) return r.redirect(r.url("/accounts", r.flowQuery()));
  r.orgId ??= await r.orgOf(s);
  return continueSignIn(r, s);
}

export function signInPages(app: Express, deps: LoginDeps): void {
  app.get("/ui/login/login", page(deps, getLogin));
  app.post("/ui/login/login", page(deps, postLogin));
  app.get("/ui/login/password", page(deps, getPassword));
  app.post("/ui/login/password", page(deps, postPassword));
  app.get("/ui/login/accounts", page(deps, getAccounts));
  app.post("/ui/login/accounts", page(deps, postAccounts));
}
