// The signed-in user's own page: profile, e-mail, password, second factors and sessions. Everything here acts as the
// user itself (selfCtx: its own rights, none of its roles) and only on a session of this browser that is signed in
// completely; an incomplete one goes on with the sign-in, none at all to the login page.
import type { Express } from "express";
import type { Ctx } from "../../../domain/context.js";
import { asDomainError, DomainError } from "../../../domain/errors.js";
import { sendEmailCode, verifyEmail } from "../../../domain/identity/authn/email.js";
import { authenticationMethodTypes } from "../../../domain/identity/authn/methods.js";
import { listPasskeys, removePasskey } from "../../../domain/identity/authn/passkeys.js";
import { removeTotp } from "../../../domain/identity/authn/totp.js";
import { setPassword } from "../../../domain/identity/user-passwords.js";
import { getUser, updateUser } from "../../../domain/identity/users.js";
import { page as listPage } from "../../../domain/list.js";
import { listConsents, revokeConsent } from "../../../domain/oauth/consent.js";
import { samlParticipantsOf, startLogout } from "../../../domain/saml/logout.js";
import { type LinkedSession, sessionForLink, signInState } from "../../../domain/sessions/link.js";
import { type SensitiveChange, type SignInState, sensitiveChange } from "../../../domain/sessions/policy.js";
import { deleteSession, listSessions } from "../../../domain/sessions/reads.js";
import { effectiveSetting, passwordComplexity } from "../../../domain/settings/settings.js";
import { type LoginDeps, presenting, selfCtx } from "../context.js";
import { type BrowserSession, withoutSession } from "../cookie.js";
import { continueSignIn, proveAgain } from "../flow.js";
import { type Html, html } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

interface Account {
  s: BrowserSession;
  linked: LinkedSession;
  state: SignInState;
  /** The user itself, presenting this browser's session (the proof the domain asks of sensitive changes). */
  self: Ctx;
}

const MAX_FIELD = 200;
const MAX_PASSWORD = 256;
const SESSIONS_SHOWN = 20;

/** The session named by `session` (else this browser's newest complete one) as its user; else redirected. */
async function account(r: LoginRequest): Promise<Account | undefined> {
  const named = r.idParam("session");
  const candidates = named ? r.state.sessions.filter((s) => s.id === named) : r.state.sessions;
  let incomplete: BrowserSession | undefined;
  for (const s of candidates) {
    let linked: LinkedSession;
    try {
      linked = await sessionForLink(r.ctx, s.id, s.token);
    } catch (err) {
      if (!asDomainError(err)) throw err;
      r.setState(withoutSession(r.state, s.id));
      continue;
    }
    let state: SignInState;
    try {
      state = await signInState(r.ctx, linked);
    } catch (err) {
      if (!asDomainError(err)) throw err;
      continue;
    }
    if (state.step.kind !== "done") {
      incomplete ??= s;
      continue;
    }
    r.orgId = linked.orgId;
    const self = presenting(selfCtx(r.deps, r.req, { id: linked.userId, orgId: linked.orgId }), s);
    return { s, linked, state, self };
  }
  // A session that still misses a step (a second factor, a new password): the sign-in goes on with that step.
  if (named && incomplete) await continueSignIn(r, incomplete);
  else r.redirect(r.url("/login"));
  return undefined;
}

/** What a form's change came to: shown at the field it is about when there is one, else above the section's forms. */
type Notice = { section: string; text: string; kind: "error" | "info"; field?: string };

/** The form field a refusal is about, from the error (the domain names the API's field). */
function fieldOf(section: string, d: DomainError): string | undefined {
  if (section === "password") {
    if (d.id === "Errors.User.Password.Invalid") return "currentPassword";
    if (d.id === "Errors.Login.PasswordMismatch") return "repeatPassword";
    return d.kind === "InvalidArgument" ? "newPassword" : undefined;
  }
  if (section === "email") return d.id.startsWith("Errors.User.Code.") ? "code" : d.kind === "InvalidArgument" ? "email" : undefined;
  if (section === "profile") return PROFILE_FIELDS[d.metadata.field ?? ""];
  return undefined;
}

const PROFILE_FIELDS: Record<string, string> = { given_name: "givenName", family_name: "familyName", display_name: "displayName" };

/** The message of a refused change, in the user's words; undefined for what is not the user's doing. */
function changeError(r: LoginRequest, d: DomainError): string | undefined {
  switch (d.id) {
    case "Errors.User.Password.Invalid":
      return r.t("account.password.currentWrong");
    case "Errors.Login.PasswordMismatch":
      return r.t("account.password.mismatch");
    case "Errors.User.Locked":
      return r.t("password.locked");
    case "Errors.User.Code.Invalid":
      return r.t("mfa.codeWrong");
    case "Errors.User.Code.Expired":
      return r.t("mfa.codeExpired");
    case "Errors.User.Email.AlreadyVerified":
      return r.t("account.email.alreadyVerified");
    case "Errors.Smtp.NotConfigured":
      return r.t("account.email.noMail");
  }
  if (d.kind === "ResourceExhausted") return r.t("common.tooManyAttempts");
  if (d.id.startsWith("Errors.User.Password.") || d.id.startsWith("Errors.Settings.Password")) return r.t("account.password.rulesNotMet");
  if (d.kind === "InvalidArgument" || d.kind === "AlreadyExists") return r.t("account.invalid");
  if (d.kind === "Unavailable") return r.t("account.email.noMail");
  return undefined;
}

async function accountPage(r: LoginRequest, a: Account, notice?: Notice, status = 200): Promise<void> {
  const user = await getUser(a.self, a.linked.userId);
  const methods = await authenticationMethodTypes(a.self, user.id);
  const passkeys = (await listPasskeys(a.self, user.id)).filter((k) => k.ready);
  const login = await effectiveSetting(r.ctx, "login", user.orgId);
  const rules = await passwordComplexity(r.ctx, user.orgId);
  const { sessions } = await listSessions(a.self, [{ userId: user.id }], listPage({ limit: SESSIONS_SHOWN }));
  const consents = await listConsents(a.self, user.id);
  const note = (section: string) => (notice?.section === section && !notice.field ? alert(notice.text, notice.kind) : "");
  const err = (section: string, name: string) => (notice?.section === section && notice.field === name ? notice.text : undefined);
  const session = a.s.id;
  const added = r.param("added");
  const dateOf = (d: Date) => new Intl.DateTimeFormat(r.lang, { dateStyle: "medium", timeStyle: "short" }).format(d);
  const pc = await r.pageContext();
  const form = (action: string, values: Record<string, string>, content: Html | string) =>
    html`<form method="post" action="${r.url(action)}" novalidate>${hidden(pc, { session, ...values })}${content}</form>`;
  const t = r.t;
  const ruleItems: Html[] = [html`<li data-rule="length">${t("account.password.ruleLength", { n: rules.minLength })}</li>`];
  if (rules.requiresUppercase) ruleItems.push(html`<li data-rule="uppercase">${t("account.password.ruleUppercase")}</li>`);
  if (rules.requiresLowercase) ruleItems.push(html`<li data-rule="lowercase">${t("account.password.ruleLowercase")}</li>`);
  if (rules.requiresNumber) ruleItems.push(html`<li data-rule="number">${t("account.password.ruleNumber")}</li>`);
  if (rules.requiresSymbol) ruleItems.push(html`<li data-rule="symbol">${t("account.password.ruleSymbol")}</li>`);
  const totpAllowed = login.secondFactors.includes("otp");

  const body = html`${added ? alert(t(added === "totp" ? "account.totp.added" : "account.passkeys.added"), "info") : ""}
<section aria-labelledby="h-profile"><h2 id="h-profile">${t("account.profile.title")}</h2>${note("profile")}
${form(
  "/account/profile",
  {},
  html`${field({ name: "givenName", error: err("profile", "givenName"), label: t("account.profile.givenName"), value: user.givenName ?? "", autocomplete: "given-name", required: true, maxlength: MAX_FIELD })}
${field({ name: "familyName", error: err("profile", "familyName"), label: t("account.profile.familyName"), value: user.familyName ?? "", autocomplete: "family-name", required: true, maxlength: MAX_FIELD })}
${field({ name: "displayName", error: err("profile", "displayName"), label: t("account.profile.displayName"), value: user.displayName ?? "", autocomplete: "nickname", maxlength: MAX_FIELD })}
<button type="submit" class="button primary">${t("account.save")}</button>`,
)}</section>
<section aria-labelledby="h-email"><h2 id="h-email">${t("account.email.title")}</h2>${note("email")}
<p>${user.email ?? ""} <span class="identity">${t(user.emailVerified ? "account.email.verified" : "account.email.unverified")}</span></p>
${form(
  "/account/email",
  {},
  html`${field({ name: "email", error: err("email", "email"), label: t("account.email.new"), type: "email", autocomplete: "email", required: true, maxlength: MAX_FIELD })}
<button type="submit" class="button secondary">${t("account.email.change")}</button>`,
)}
${
  user.email && !user.emailVerified
    ? html`${form(
        "/account/email/verify",
        {},
        html`${field({ name: "code", error: err("email", "code"), label: t("account.email.code"), autocomplete: "one-time-code", required: true, maxlength: 20 })}
<button type="submit" class="button secondary">${t("common.verify")}</button>`,
      )}${form("/account/email/send", {}, html`<button type="submit" class="button secondary">${t("account.email.send")}</button>`)}`
    : ""
}</section>
<section aria-labelledby="h-password"><h2 id="h-password">${t("account.password.title")}</h2>${note("password")}
${form(
  "/account/password",
  {},
  html`<input type="text" name="username" value="${user.preferredLoginName}" autocomplete="username" hidden readonly />
${field({ name: "currentPassword", error: err("password", "currentPassword"), label: t("account.password.current"), type: "password", autocomplete: "current-password", required: true, maxlength: MAX_PASSWORD })}
${field({ name: "newPassword", error: err("password", "newPassword"), label: t("account.password.new"), type: "password", autocomplete: "new-password", required: true, maxlength: MAX_PASSWORD, describedBy: "password-rules" })}
<ul class="rules" id="password-rules" data-for="f-newPassword" data-min-length="${String(rules.minLength)}">${ruleItems}</ul>
${field({ name: "repeatPassword", error: err("password", "repeatPassword"), label: t("account.password.repeat"), type: "password", autocomplete: "new-password", required: true, maxlength: MAX_PASSWORD })}
<button type="submit" class="button primary">${t("account.password.change")}</button>`,
)}</section>
<section aria-labelledby="h-totp"><h2 id="h-totp">${t("account.totp.title")}</h2>${note("totp")}
${
  methods.includes("TOTP")
    ? html`<p>${t("account.totp.on")}</p>${form("/account/totp/remove", {}, html`<button type="submit" class="button secondary">${t("account.totp.remove")}</button>`)}`
    : html`<p>${t("account.totp.off")}</p>${totpAllowed ? html`<p><a class="button secondary" href="${r.url("/mfa/setup/totp", { session })}">${t("account.totp.setUp")}</a></p>` : ""}`
}</section>
<section aria-labelledby="h-passkeys"><h2 id="h-passkeys">${t("account.passkeys.title")}</h2>${note("passkeys")}
${
  passkeys.length
    ? html`<ul class="list">${passkeys.map(
        (k) =>
          html`<li><span>${k.name}</span> ${form("/account/passkey/remove", { passkeyId: k.id }, html`<button type="submit" class="button secondary" aria-label="${t("account.passkeys.removeNamed", { name: k.name })}">${t("account.passkeys.remove")}</button>`)}</li>`,
      )}</ul>`
    : html`<p>${t("account.passkeys.none")}</p>`
}
${login.passkeysAllowed ? html`<p><a class="button secondary" href="${r.url("/mfa/setup/passkey", { session })}">${t("account.passkeys.add")}</a></p>` : ""}</section>
<section aria-labelledby="h-sessions"><h2 id="h-sessions">${t("account.sessions.title")}</h2>${note("sessions")}
<ul class="list">${sessions.map(
    (x) =>
      html`<li><span>${x.userAgent?.description || t("account.sessions.unknownDevice")}</span> <span class="identity">${t("account.sessions.since", { date: dateOf(x.createdAt) })}${x.id === session ? html` · ${t("account.sessions.current")}` : ""}</span>
${form("/account/session/end", { target: x.id }, html`<button type="submit" class="button secondary">${t(x.id === session ? "account.sessions.endCurrent" : "account.sessions.end")}</button>`)}</li>`,
  )}</ul></section>
<section aria-labelledby="h-consents"><h2 id="h-consents">${t("account.consents.title")}</h2>${note("consents")}
${
  consents.length
    ? html`<ul class="list">${consents.map(
        (c) =>
          html`<li><span>${c.appName}</span> <span class="identity">${t("account.consents.since", { date: dateOf(c.grantedAt) })}</span>
${form("/account/consent/revoke", { appId: c.appId }, html`<button type="submit" class="button secondary" aria-label="${t("account.consents.revokeNamed", { app: c.appName })}">${t("account.consents.revoke")}</button>`)}</li>`,
      )}</ul>`
    : html`<p>${t("account.consents.none")}</p>`
}</section>
<p><a class="button secondary" href="${r.url("/logout")}">${t("account.signOut")}</a></p>`;

  await r.render(
    (p) => ({
      title: p.t("account.title"),
      subtitle: html`<span class="identity">${user.displayName ?? user.preferredLoginName}</span> · ${user.preferredLoginName}`,
      body,
      scripts: ["password-rules.js"],
    }),
    status,
  );
}

/** A form of the account page: the change, then the page again with what happened in that section. */
function change(deps: LoginDeps, section: string, run: (r: LoginRequest, a: Account) => Promise<string | undefined>, sensitive?: SensitiveChange) {
  return page(deps, async (r) => {
    const a = await account(r);
    if (!a) return;
    // A new e-mail address or fewer factors could hand the account to whoever sits at an unattended browser: the
    // sign-in policy asks for a recent proof in this session (the domain refuses the change without it too).
    if (sensitive && sensitiveChange(a.state, a.linked.factors, sensitive, r.ctx.clock()) !== "allowed") return proveAgain(r, a.s);
    let notice: Notice | undefined;
    try {
      const ok = await run(r, a);
      if (r.res.headersSent) return;
      if (ok) notice = { section, text: ok, kind: "info" };
    } catch (err) {
      const d = asDomainError(err);
      const text = d && changeError(r, d);
      if (!text) throw err;
      return accountPage(r, a, { section, text, kind: "error", field: fieldOf(section, d) }, 400);
    }
    await accountPage(r, a, notice);
  });
}

const text = (r: LoginRequest, name: string) => (r.param(name) ?? "").trim().slice(0, MAX_FIELD);

export function accountPages(app: Express, deps: LoginDeps): void {
  app.get(
    "/ui/login/account",
    page(deps, async (r) => {
      const a = await account(r);
      if (a) await accountPage(r, a);
    }),
  );
  app.post(
    "/ui/login/account/profile",
    change(deps, "profile", async (r, a) => {
      await updateUser(a.self, {
        userId: a.linked.userId,
        human: { profile: { givenName: text(r, "givenName"), familyName: text(r, "familyName"), displayName: text(r, "displayName") } },
      });
      return r.t("account.saved");
    }),
  );
  app.post(
    "/ui/login/account/email",
    change(
      deps,
      "email",
      async (r, a) => {
        await updateUser(a.self, { userId: a.linked.userId, human: { email: { email: text(r, "email"), isVerified: false } } });
        if (!deps.mailer) return r.t("account.email.changedNoMail");
        await sendEmailCode(a.self, a.linked.userId, { kind: "send" });
        return r.t("account.email.changed");
      },
      "email",
    ),
  );
  app.post(
    "/ui/login/account/email/send",
    change(deps, "email", async (r, a) => {
      await sendEmailCode(a.self, a.linked.userId, { kind: "send" });
      return r.t("account.email.sent");
    }),
  );
  app.post(
    "/ui/login/account/email/verify",
    change(deps, "email", async (r, a) => {
      await verifyEmail(a.self, a.linked.userId, (r.param("code") ?? "").trim().slice(0, 20));
      return r.t("account.email.verifiedNow");
    }),
  );
  factorAndSessionForms(app, deps);
}

/** The forms of the account page's password, factors and sessions sections. */
function factorAndSessionForms(app: Express, deps: LoginDeps): void {
  app.post(
    "/ui/login/account/password",
    change(deps, "password", async (r, a) => {
      const password = (r.param("newPassword") ?? "").slice(0, MAX_PASSWORD);
      if (password !== (r.param("repeatPassword") ?? "").slice(0, MAX_PASSWORD)) throw mismatch();
      await setPassword(a.self, {
        userId: a.linked.userId,
        password,
        changeRequired: false,
        currentPassword: (r.param("currentPassword") ?? "").slice(0, MAX_PASSWORD),
      });
      return r.t("account.password.changed");
    }),
  );
  app.post(
    "/ui/login/account/totp/remove",
    change(
      deps,
      "totp",
      async (r, a) => {
        await removeTotp(a.self, a.linked.userId);
        return r.t("account.totp.removed");
      },
      "removeAuthenticator",
    ),
  );
  app.post(
    "/ui/login/account/passkey/remove",
    change(
      deps,
      "passkeys",
      async (r, a) => {
        await removePasskey(a.self, a.linked.userId, r.idParam("passkeyId") ?? "");
        return r.t("account.passkeys.removed");
      },
      "removeAuthenticator",
    ),
  );
  app.post(
    "/ui/login/account/consent/revoke",
    change(deps, "consents", async (r, a) => {
      await revokeConsent(a.self, a.linked.userId, r.idParam("appId") ?? "");
      return r.t("account.consents.revoked");
    }),
  );
  app.post(
    "/ui/login/account/session/end",
    change(deps, "sessions", async (r, a) => {
      const target = r.idParam("target") ?? "";
      // The SAML SPs the session signed into are told through this browser (Single Logout), read while it exists.
      const samlIdp = { store: r.ctx.store, instanceId: r.ctx.instanceId, clock: r.ctx.clock, externalUrl: r.deps.externalUrl };
      const toTell = await samlParticipantsOf(samlIdp, [target]);
      // The user's own session (listSessions showed only those): ending it revokes its tokens too.
      await deleteSession(a.self, target);
      r.setState(withoutSession(r.state, target));
      const slo = await startLogout(samlIdp, toTell, target === a.s.id ? r.url("/logout/done") : r.url("/account"));
      if (slo) {
        r.redirect(slo);
        return undefined;
      }
      if (target === a.s.id) {
        r.redirect(r.url("/logout/done"));
        return undefined;
      }
      return r.t("account.sessions.ended");
    }),
  );
}

const mismatch = () => new DomainError("InvalidArgument", "Errors.Login.PasswordMismatch", "the new password and its repetition differ");
