// Changing a password that must be changed during a sign-in (expired, or set by an administrator to be changed):
// the user proves its current password and acts on itself, no role involved. The routes of the self-service pages
// (password reset in password-reset.ts, registration in register.ts) are registered here.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { setPassword } from "../../../domain/identity/user-passwords.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { passwordComplexity } from "../../../domain/settings/settings.js";
import { type LoginDeps, presenting, selfCtx } from "../context.js";
import { type BrowserSession, withoutSession } from "../cookie.js";
import { continueSignIn } from "../flow.js";
import { html } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";
import { type Complexity, MAX_PASSWORD, type NewPasswordErrors, newPasswordError, newPasswordFields, RULES_SCRIPT, readNewPassword } from "./password-form.js";
import { passwordResetPages } from "./password-reset.js";
import { registerPages } from "./register.js";

// ---------------------------------------------------------------- changing an expired password

interface ChangeErrors extends NewPasswordErrors {
  current?: string;
  alert?: string;
}

async function changePage(r: LoginRequest, s: BrowserSession, c: Complexity, e: ChangeErrors = {}, status = 200) {
  await r.render(
    (p) => ({
      title: p.t("selfservice.change.title"),
      subtitle: p.t("selfservice.change.subtitle"),
      body: html`${alert(e.alert)}<form method="post" action="${p.url("/password/change")}" novalidate>
${hidden(p, r.flowQuery({ session: s.id }))}
<input type="text" name="username" value="${s.loginName ?? ""}" autocomplete="username" hidden readonly />
${field({ name: "currentPassword", label: p.t("selfservice.currentPassword"), type: "password", autocomplete: "current-password", required: true, autofocus: !e.password && !e.repeat, error: e.current, maxlength: MAX_PASSWORD })}
${newPasswordFields(p, c, e)}
<button type="submit" class="button primary">${p.t("selfservice.change.submit")}</button>
</form>`,
      scripts: RULES_SCRIPT,
    }),
    status,
  );
}

/** The browser's session named in the request and its user; undefined when this browser holds no such session. */
async function sessionUser(r: LoginRequest): Promise<{ s: BrowserSession; user: { id: string; orgId: string } } | undefined> {
  const s = r.session(r.idParam("session"));
  if (!s) return undefined;
  try {
    const user = (await getSession(r.ctx, s.id, s.token)).factors.user;
    if (!user) return undefined;
    r.orgId ??= user.orgId;
    return { s, user: { id: user.id, orgId: user.orgId } };
  } catch (err) {
    if (!asDomainError(err)) throw err;
    r.setState(withoutSession(r.state, s.id));
    return undefined;
  }
}

async function getChange(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const found = await sessionUser(r);
  if (!found) return r.redirect(r.url("/login", r.flowQuery()));
  await changePage(r, found.s, await passwordComplexity(r.ctx, found.user.orgId));
}

async function postChange(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const found = await sessionUser(r);
  if (!found) return r.redirect(r.url("/login", r.flowQuery()));
  const { s, user } = found;
  const c = await passwordComplexity(r.ctx, user.orgId);
  const current = (r.param("currentPassword") ?? "").slice(0, MAX_PASSWORD);
  const { password, errors } = readNewPassword(r);
  if (!current) return changePage(r, s, c, { current: r.t("selfservice.currentPasswordRequired"), ...errors }, 400);
  if (errors) return changePage(r, s, c, errors, 400);
  try {
    // The user proves itself with its current password: it changes its own password, no role involved.
    // This browser's session stays; the user's other sessions end with the old password.
    await setPassword(presenting(selfCtx(r.deps, r.req, user), s), { userId: user.id, password, changeRequired: false, currentPassword: current });
  } catch (err) {
    const d = asDomainError(err);
    if (d?.id === "Errors.User.Password.Invalid") return changePage(r, s, c, { current: r.t("selfservice.currentPasswordWrong") }, 400);
    if (d?.id === "Errors.User.Locked") return changePage(r, s, c, { alert: r.t("password.locked") }, 403);
    if (d?.kind === "ResourceExhausted") return changePage(r, s, c, { alert: r.t("common.tooManyAttempts") }, 429);
    const message = newPasswordError(r.t, err);
    if (message) return changePage(r, s, c, { password: message }, 400);
    throw err;
  }
  return continueSignIn(r, s, { proved: true });
}

export function selfServicePages(app: Express, deps: LoginDeps): void {
  app.get("/ui/login/password/change", page(deps, getChange));
  app.post("/ui/login/password/change", page(deps, postChange));
  passwordResetPages(app, deps);
  registerPages(app, deps);
}
