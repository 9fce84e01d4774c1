// Resetting a forgotten password by a link sent to the user's e-mail (PasswordReset with a URL template), and the
// page of that link (SetPassword with the code); the page of an invitation's link (CreateInviteCode), where an invited
// user chooses its first password. The reset page answers the same, and as fast, whether or not the
// login name exists, so it tells nobody which accounts there are.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { requestPasswordReset } from "../../../domain/identity/authn/password-reset.js";
import { setPassword } from "../../../domain/identity/user-passwords.js";
import { listUsers } from "../../../domain/identity/user-query.js";
import { getUser } from "../../../domain/identity/users.js";
import { passwordComplexity } from "../../../domain/settings/settings.js";
import type { LoginDeps } from "../context.js";
import { html } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";
import { type NewPasswordErrors, newPasswordError, newPasswordFields, RULES_SCRIPT, readNewPassword } from "./password-form.js";

const MAX_LOGIN_NAME = 200;

async function resetPage(r: LoginRequest, loginName: string | undefined, error?: string, status = 200) {
  await r.render(
    (p) => ({
      title: p.t("selfservice.reset.title"),
      subtitle: p.t("selfservice.reset.subtitle"),
      body: html`<form method="post" action="${p.url("/password/reset")}" novalidate>
${hidden(p, r.flowQuery())}
${field({ name: "loginName", label: p.t("login.loginName"), value: loginName, autocomplete: "username", required: true, autofocus: true, error, maxlength: MAX_LOGIN_NAME })}
<button type="submit" class="button primary">${p.t("selfservice.reset.submit")}</button>
</form>
<p><a href="${p.url("/login", r.flowQuery())}">${p.t("selfservice.backToSignIn")}</a></p>`,
    }),
    status,
  );
}

/** The one user a login name (or a username unique in the instance) names, as ListUsers finds it. */
async function userByLoginName(r: LoginRequest, loginName: string): Promise<string | undefined> {
  const match = { method: "equals", ignoreCase: true, value: loginName } as const;
  const { users } = await listUsers(r.ctx, {
    page: { limit: 2 },
    queries: [
      {
        kind: "or",
        queries: [
          { kind: "loginName", match },
          { kind: "text", field: "username", match },
        ],
      },
    ],
  });
  return users.length === 1 && users[0]?.type === "HUMAN" ? users[0].id : undefined;
}

/** A URL template for a link of an e-mail: `path` with the flow's query and the placeholders the domain fills. */
function linkTemplate(r: LoginRequest, path: string, placeholders: string): string {
  const base = r.url(path, r.flowQuery());
  return `${base}${base.includes("?") ? "&" : "?"}${placeholders}`;
}

async function postReset(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const loginName = (r.param("loginName") ?? "").trim();
  if (!loginName || loginName.length > MAX_LOGIN_NAME) return resetPage(r, loginName, r.t("login.loginNameRequired"), 400);
  // Without a mail server no link can go out to anyone: saying so tells nothing about the account.
  if (!r.deps.mailer) return unavailablePage(r);
  await r.throttle("reset", loginName);
  const userId = await userByLoginName(r, loginName);
  if (userId) {
    // Not awaited: the answer comes as fast for an account as for none (the mail server's round trip would tell).
    // No e-mail address, a mail server that refused: the page must not tell this account from none either.
    const urlTemplate = linkTemplate(r, "/password/set", "userId={{.UserID}}&code={{.Code}}");
    requestPasswordReset(r.ctx, userId, { kind: "send", urlTemplate }).catch((err: unknown) => {
      const d = asDomainError(err);
      const log = { requestId: r.req.headers["x-request-id"], err: d ? d.id : err };
      if (d) r.deps.log.info(log, "password reset link not sent");
      else r.deps.log.error(log, "password reset failed");
    });
  }
  await r.render((p) => ({
    title: p.t("selfservice.reset.sent.title"),
    body: html`<p>${p.t("selfservice.reset.sent.text")}</p><p><a class="button secondary" href="${p.url("/login", r.flowQuery())}">${p.t("selfservice.backToSignIn")}</a></p>`,
  }));
}

async function unavailablePage(r: LoginRequest): Promise<void> {
  await r.render(
    (p) => ({
      title: p.t("selfservice.reset.title"),
      body: html`${alert(p.t("selfservice.mailUnavailable"))}<p><a href="${p.url("/login", r.flowQuery())}">${p.t("selfservice.backToSignIn")}</a></p>`,
    }),
    503,
  );
}

// ---------------------------------------------------------------- setting a new password with the link's code

/** The auth request of a link from an e-mail: it may have expired meanwhile; then the page works without it. */
async function linkAuthRequest(r: LoginRequest): Promise<void> {
  try {
    await r.loadAuthRequest();
  } catch (err) {
    if (!asDomainError(err)) throw err;
    r.authRequest = undefined;
  }
}

/** The page of a link with a code: a password reset's (/password/set) or an invitation's (/invite). */
type LinkKind = "set" | "invite";
const LINK_PATH: Record<LinkKind, string> = { set: "/password/set", invite: "/invite" };

async function setPage(
  r: LoginRequest,
  kind: LinkKind,
  target: { userId: string; code: string; orgId: string },
  e: NewPasswordErrors & { alert?: string } = {},
  status = 200,
) {
  const c = await passwordComplexity(r.ctx, target.orgId);
  await r.render(
    (p) => ({
      title: p.t(`selfservice.${kind}.title`),
      subtitle: p.t(`selfservice.${kind}.subtitle`),
      body: html`${alert(e.alert)}<form method="post" action="${p.url(LINK_PATH[kind])}" novalidate>
${hidden(p, r.flowQuery({ userId: target.userId, code: target.code }))}
${newPasswordFields(p, c, e, true)}
<button type="submit" class="button primary">${p.t(`selfservice.${kind}.submit`)}</button>
</form>
${e.alert ? html`<p><a href="${p.url("/password/reset", r.flowQuery())}">${p.t("selfservice.set.again")}</a></p>` : ""}`,
      scripts: RULES_SCRIPT,
    }),
    status,
  );
}

async function linkTarget(r: LoginRequest) {
  await linkAuthRequest(r);
  const userId = r.idParam("userId");
  const code = (r.param("code") ?? "").slice(0, 200);
  if (!userId || !code) return undefined;
  try {
    const user = await getUser(r.ctx, userId);
    r.orgId ??= user.orgId;
    return { userId, code, orgId: user.orgId, loginName: user.preferredLoginName };
  } catch (err) {
    if (!asDomainError(err)) throw err;
    return undefined;
  }
}

const linkInvalid = (r: LoginRequest, kind: LinkKind) =>
  r.render(
    (p) => ({
      title: p.t("selfservice.link.invalid.title"),
      body: html`<p>${p.t(kind === "invite" ? "selfservice.invite.invalid" : "selfservice.link.invalid.text")}</p><p><a class="button secondary" href="${p.url("/password/reset", r.flowQuery())}">${p.t("selfservice.set.again")}</a></p>`,
    }),
    400,
  );

const getSet = (kind: LinkKind) => async (r: LoginRequest) => {
  const target = await linkTarget(r);
  if (!target) return linkInvalid(r, kind);
  await setPage(r, kind, target);
};

/** SetPassword with the link's code: a password reset's, or an invitation's (which verifies the e-mail too). */
const postSet = (kind: LinkKind) => async (r: LoginRequest) => {
  const target = await linkTarget(r);
  if (!target) return linkInvalid(r, kind);
  const { password, errors } = readNewPassword(r);
  if (errors) return setPage(r, kind, target, errors, 400);
  try {
    await setPassword(r.ctx, { userId: target.userId, password, changeRequired: false, verificationCode: target.code });
  } catch (err) {
    const d = asDomainError(err);
    const message = newPasswordError(r.t, err);
    if (message) return setPage(r, kind, target, { password: message }, 400);
    if (d?.id.startsWith("Errors.User.Code.")) return setPage(r, kind, target, { alert: r.t("selfservice.link.invalid.text") }, 400);
    if (d?.kind === "ResourceExhausted") return setPage(r, kind, target, { alert: r.t("common.tooManyAttempts") }, 429);
    throw err;
  }
  // Back to signing in: one button posts the login name to the login page, which asks for the new password.
  await r.render((p) => ({
    title: p.t(`selfservice.${kind}.done.title`),
    body: html`<p>${p.t(`selfservice.${kind}.done.text`)}</p><form method="post" action="${p.url("/login")}">
${hidden(p, r.flowQuery({ loginName: target.loginName }))}
<button type="submit" class="button primary">${p.t("selfservice.signIn")}</button>
</form>`,
  }));
};

export function passwordResetPages(app: Express, deps: LoginDeps): void {
  app.get(
    "/ui/login/password/reset",
    page(deps, async (r) => {
      await r.loadAuthRequest();
      await resetPage(r, (r.param("loginName") ?? "").slice(0, MAX_LOGIN_NAME) || undefined);
    }),
  );
  app.post("/ui/login/password/reset", page(deps, postReset));
  app.get("/ui/login/password/set", page(deps, getSet("set")));
  app.post("/ui/login/password/set", page(deps, postSet("set")));
  app.get("/ui/login/invite", page(deps, getSet("invite")));
  app.post("/ui/login/invite", page(deps, postSet("invite")));
}
