// The first steps of a sign-in: the login name, the password, and choosing one of this browser's accounts. Wrong
// password, unknown user: the same message, so the pages never tell whether a login name exists; a locked user is
// told so once the lock applies.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { authenticationMethodTypes } from "../../../domain/identity/authn/methods.js";
import { checkUnknownUserPassword } from "../../../domain/identity/user-passwords.js";
import type { AuthorizationError } from "../../../domain/oauth/authorize/callback.js";
import { requestedUser } from "../../../domain/oauth/authorize/login-hint.js";
import { type AuthRequestView, createCallback } from "../../../domain/oauth/authorize/login-ui.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { createSession, setSession } from "../../../domain/sessions/sessions.js";
import type { LoginDeps } from "../context.js";
import { type BrowserSession, withoutSession, withSession } from "../cookie.js";
import { continueSignIn, SESSION_LIFETIME_SECONDS } from "../flow.js";
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
  // For a session of this browser, the passkey is offered when its user has one; before any session (a login name
  // typed in) whenever the settings allow passkeys, so the page looks the same for every name.
  const login = r.login ?? (await r.loadLoginSettings());
  const passkey = s.id !== undefined && s.userId !== undefined ? (await authenticationMethodTypes(r.ctx, s.userId)).includes("PASSKEY") : login.passkeysAllowed;
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
${passkey ? html`<p><a href="${p.url("/passkey", r.flowQuery(s.id ? { session: s.id } : { loginName: s.loginName }))}">${p.t("password.usePasskey")}</a></p>` : ""}`,
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

/**
 * prompt=none: no page may be shown, and only this browser's own sessions can answer (OIDC Core §3.1.2.1). The one
 * session that fits (the user an id_token_hint or login_hint names, else the only one) finishes the request when its
 * sign-in is complete; a hint only selects among them. Otherwise the client gets the error that says why.
 */
async function promptNone(r: LoginRequest, request: AuthRequestView): Promise<void> {
  const finisher = { issuer: r.deps.issuer, codeLifetime: r.deps.codeLifetime };
  const finish = async (error: AuthorizationError, description: string) => {
    r.redirect((await createCallback(r.ctx, finisher, { authRequestId: request.id, error: { error, description } })).callbackUrl);
  };
  const live: BrowserSession[] = [];
  for (const s of r.state.sessions) if (await r.stillValid(s)) live.push(s);
  const named = request.hintUserId || request.loginHint ? await requestedUser(r.ctx, request) : undefined;
  const hinted = request.hintUserId || request.loginHint ? live.filter((s) => named !== undefined && s.userId === named) : live;
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
    if (d.id === "Errors.Consent.Required") return finish("consent_required", "the application needs the user's consent");
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
    // A hint (id_token_hint, login_hint) selects its user's session of this browser; without one, the only session.
    const named = request?.hintUserId || request?.loginHint ? await requestedUser(r.ctx, request) : undefined;
    const candidates = request?.hintUserId || request?.loginHint ? r.state.sessions.filter((s) => named !== undefined && s.userId === named) : r.state.sessions;
    if (candidates.length > 1) return r.redirect(r.url("/accounts", r.flowQuery()));
    const only = candidates[0];
    if (only && (await r.stillValid(only))) return continueSignIn(r, only);
  }
  const notice = r.param("mismatch") === "1" ? r.t("login.mismatch") : undefined;
  await loginNamePage(r, { loginName: request?.loginHint ?? undefined, notice });
}

/**
 * The login name: the same answer for every name (known, unknown, a machine, locked): the password page, which asks
 * for the password before anything about the user is told. No session exists before a factor succeeded.
 */
async function postLogin(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  await r.loadLoginSettings();
  const loginName = (r.param("loginName") ?? "").trim();
  if (!loginName || loginName.length > MAX_LOGIN_NAME) return loginNamePage(r, { loginName, error: r.t("login.loginNameRequired") }, 400);
  return r.redirect(r.url("/password", r.flowQuery({ loginName })));
}

async function getPassword(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  if (!s) {
    const loginName = (r.param("loginName") ?? "").trim();
    if (!loginName || loginName.length > MAX_LOGIN_NAME) return r.redirect(r.url("/login", r.flowQuery()));
    return passwordPage(r, { loginName });
  }
  r.orgId ??= await r.orgOf(s);
  await passwordPage(r, { id: s.id, userId: s.userId, loginName: s.loginName ?? "" });
}

async function postPassword(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const password = (r.param("password") ?? "").slice(0, MAX_PASSWORD);
  const s = r.session(r.idParam("session"));
  if (!s) return firstPassword(r, password);
  r.orgId ??= await r.orgOf(s);
  try {
    const changed = await setSession(r.ctx, { sessionId: s.id, sessionToken: s.token, checks: { password: { password } }, challenges: {}, metadata: {} });
    const next = { ...s, token: changed.sessionToken };
    r.setState(withSession(r.state, next));
    return continueSignIn(r, next, { proved: true });
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

/** The login name and the password at once: the session is created only when the password is right. */
async function firstPassword(r: LoginRequest, password: string): Promise<void> {
  const loginName = (r.param("loginName") ?? "").trim();
  if (!loginName || loginName.length > MAX_LOGIN_NAME) return r.redirect(r.url("/login", r.flowQuery()));
  await r.loadLoginSettings();
  try {
    const created = await createSession(r.ctx, {
      checks: { user: { loginName }, password: { password } },
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
    return continueSignIn(r, s, { proved: true });
  } catch (err) {
    const d = asDomainError(err);
    // Unknown, or not a user who signs in with a password here: the answer of a wrong password, at the same cost.
    if (d?.id === "Errors.User.NotFound" || d?.id === "Errors.User.NotHuman") {
      await checkUnknownUserPassword(r.ctx, loginName, password);
      return passwordPage(r, { loginName }, wrongCredentials(r), 400);
    }
    const message = passwordError(r, err);
    if (message) return passwordPage(r, { loginName }, message, 400);
    throw err;
  }
}

/**
 * The account chooser (prompt=select_account, or several sessions and no hint): this browser's signed-in accounts, the
 * one the request's hint names first, and "use another account".
 */
async function getAccounts(r: LoginRequest): Promise<void> {
  const request = await r.loadAuthRequest();
  const named = request ? await requestedUser(r.ctx, request) : undefined;
  const accounts: { s: BrowserSession; displayName: string; loginName: string }[] = [];
  for (const s of r.state.sessions) {
    try {
      const view = await getSession(r.ctx, s.id, s.token);
      if (view.factors.user) accounts.push({ s, displayName: view.factors.user.displayName, loginName: view.factors.user.loginName });
    } catch {
      r.setState(withoutSession(r.state, s.id));
    }
  }
  if (named) accounts.sort((a, b) => Number(b.s.userId === named) - Number(a.s.userId === named));
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
