// Signing up: a person creates its own human user in the organization the application asked for (the auth
// request's organization scope) or the instance's default one, where the login settings allow registration; the
// new user is signed in at once (a session with the password just set) and the sign-in continues. The e-mail
// address is verified by the link of a code sent to it, on its own page.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { sendEmailCode, verifyEmail } from "../../../domain/identity/authn/email.js";
import { createUser } from "../../../domain/identity/users.js";
import { getInstance } from "../../../domain/orgs/instance.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { createSession } from "../../../domain/sessions/sessions.js";
import { passwordComplexity } from "../../../domain/settings/settings.js";
import type { LoginDeps } from "../context.js";
import { type BrowserSession, withSession } from "../cookie.js";
import { continueSignIn, SESSION_LIFETIME_SECONDS } from "../flow.js";
import { html } from "../html.js";
import { alert, field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";
import { newPasswordError, newPasswordFields, RULES_SCRIPT, readNewPassword } from "./password-form.js";

const MAX_TEXT = 200;
const FIELDS = ["givenName", "familyName", "email", "username"] as const;
type Field = (typeof FIELDS)[number];
type Form = Record<Field, string>;
type Errors = Partial<Record<Field | "password" | "repeat" | "alert", string>>;

/** The domain's field names (its errors' `field`) as this form names them. */
const FORM_FIELD: Record<string, Field> = { given_name: "givenName", family_name: "familyName", email: "email", username: "username" };

/** The organization a registration creates the user in, with its login settings loaded; undefined: not allowed. */
async function registrationOrg(r: LoginRequest): Promise<string | undefined> {
  await r.loadAuthRequest();
  r.orgId ??= (await getInstance(r.ctx)).defaultOrgId ?? undefined;
  if (!r.orgId) return undefined;
  await r.loadLoginSettings();
  return r.registrationAllowed ? r.orgId : undefined;
}

async function notAllowedPage(r: LoginRequest): Promise<void> {
  await r.render(
    (p) => ({
      title: p.t("selfservice.register.closed.title"),
      body: html`<p>${p.t("selfservice.register.closed.text")}</p><p><a class="button secondary" href="${p.url("/login", r.flowQuery())}">${p.t("selfservice.backToSignIn")}</a></p>`,
    }),
    403,
  );
}

async function registerPage(r: LoginRequest, orgId: string, form: Form, e: Errors = {}, status = 200) {
  const c = await passwordComplexity(r.ctx, orgId);
  // The focus goes to the first field with an error, else to the first field.
  const focused = FIELDS.find((f) => e[f]) ?? (e.password || e.repeat ? undefined : "givenName");
  const text = (name: Field, label: string, o: { type?: string; autocomplete: string; required?: boolean; hint?: string }) =>
    field({
      name,
      label,
      type: o.type,
      value: form[name],
      autocomplete: o.autocomplete,
      required: o.required,
      autofocus: name === focused,
      error: e[name],
      maxlength: MAX_TEXT,
      describedBy: o.hint,
    });
  await r.render(
    (p) => ({
      title: p.t("selfservice.register.title"),
      subtitle: p.t("selfservice.register.subtitle"),
      body: html`${alert(e.alert)}<form method="post" action="${p.url("/register")}" novalidate>
${hidden(p, r.flowQuery())}
${text("givenName", p.t("selfservice.register.givenName"), { autocomplete: "given-name", required: true })}
${text("familyName", p.t("selfservice.register.familyName"), { autocomplete: "family-name", required: true })}
${text("email", p.t("selfservice.register.email"), { type: "email", autocomplete: "email", required: true })}
${text("username", p.t("selfservice.register.username"), { autocomplete: "username", hint: "username-hint" })}
<p class="hint" id="username-hint">${p.t("selfservice.register.usernameHint")}</p>
${newPasswordFields(p, c, { password: e.password, repeat: e.repeat })}
<button type="submit" class="button primary">${p.t("selfservice.register.submit")}</button>
</form>
<p>${p.t("selfservice.register.haveAccount")} <a href="${p.url("/login", r.flowQuery())}">${p.t("selfservice.signIn")}</a></p>`,
      scripts: RULES_SCRIPT,
    }),
    status,
  );
}

function formOf(r: LoginRequest): Form {
  const v = (name: Field) => (r.param(name) ?? "").trim().slice(0, MAX_TEXT + 1);
  return { givenName: v("givenName"), familyName: v("familyName"), email: v("email"), username: v("username") };
}

/** A refused registration's message, on the field it concerns when there is one. */
function registerError(r: LoginRequest, err: unknown): Errors | undefined {
  const d = asDomainError(err);
  if (!d) return undefined;
  const password = newPasswordError(r.t, err);
  if (password) return { password };
  if (d.id === "Errors.User.AlreadyExists") return { username: r.t("selfservice.register.taken") };
  const name = FORM_FIELD[d.metadata.field ?? ""];
  if (name) return { [name]: r.t(d.id.endsWith(".Missing") ? "selfservice.register.required" : `selfservice.register.invalid.${name}`) };
  if (d.kind === "ResourceExhausted") return { alert: r.t("common.tooManyAttempts") };
  return undefined;
}

async function postRegister(r: LoginRequest): Promise<void> {
  const orgId = await registrationOrg(r);
  if (!orgId) return notAllowedPage(r);
  const form = formOf(r);
  const { password, errors } = readNewPassword(r);
  if (errors) return registerPage(r, orgId, form, errors, 400);
  await r.throttle("register");
  let userId: string;
  try {
    // Allowed to a login client by the organization's login settings alone (user-register.ts). The page's language
    // becomes the user's: its mails (and the locale claim) speak it from now on.
    const created = await createUser(r.ctx, {
      orgId,
      username: form.username || undefined,
      human: {
        givenName: form.givenName,
        familyName: form.familyName,
        preferredLanguage: r.lang,
        email: form.email,
        emailVerified: false,
        password: { password, changeRequired: false },
      },
    });
    userId = created.id;
  } catch (err) {
    const errors = registerError(r, err);
    if (errors) return registerPage(r, orgId, form, errors, 400);
    throw err;
  }
  const created = await createSession(r.ctx, {
    checks: { user: { userId }, password: { password } },
    challenges: {},
    metadata: {},
    userAgent: r.userAgent(),
    lifetimeSeconds: SESSION_LIFETIME_SECONDS,
  });
  const view = await getSession(r.ctx, created.sessionId, created.sessionToken);
  const s: BrowserSession = { id: created.sessionId, token: created.sessionToken, userId, loginName: view.factors.user?.loginName };
  r.setState(withSession(r.state, s));
  if (r.deps.mailer) {
    try {
      const base = r.url("/verify-email");
      await sendEmailCode(r.ctx, userId, { kind: "send", urlTemplate: `${base}?userId={{.UserID}}&code={{.Code}}` });
    } catch (err) {
      // The account exists and is signed in; the address can be verified later (a new code from the account).
      if (!asDomainError(err)) throw err;
      r.deps.log.warn({ requestId: r.req.headers["x-request-id"], err: asDomainError(err)?.id }, "e-mail verification code not sent");
    }
  }
  return continueSignIn(r, s, { proved: true });
}

/** The link of the e-mail shows a button: a mail scanner that opens links does not spend the single-use code. */
async function getVerifyEmail(r: LoginRequest): Promise<void> {
  const userId = r.idParam("userId");
  const code = (r.param("code") ?? "").slice(0, 200);
  if (!userId || !code) return verifyResult(r, false);
  await r.render((p) => ({
    title: p.t("selfservice.verify.title"),
    body: html`<p>${p.t("selfservice.verify.text")}</p><form method="post" action="${p.url("/verify-email")}">
${hidden(p, { userId, code })}
<button type="submit" class="button primary">${p.t("selfservice.verify.submit")}</button>
</form>`,
  }));
}

async function postVerifyEmail(r: LoginRequest): Promise<void> {
  const userId = r.idParam("userId");
  const code = (r.param("code") ?? "").slice(0, 200);
  let ok = false;
  if (userId && code) {
    try {
      await verifyEmail(r.ctx, userId, code);
      ok = true;
    } catch (err) {
      if (!asDomainError(err)) throw err;
    }
  }
  await verifyResult(r, ok);
}

async function verifyResult(r: LoginRequest, ok: boolean): Promise<void> {
  const key = ok ? "selfservice.verify.done" : "selfservice.verify.failed";
  await r.render((p) => ({ title: p.t(`${key}.title`), body: html`<p>${p.t(`${key}.text`)}</p>` }), ok ? 200 : 400);
}

export function registerPages(app: Express, deps: LoginDeps): void {
  app.get(
    "/ui/login/register",
    page(deps, async (r) => {
      const orgId = await registrationOrg(r);
      if (!orgId) return notAllowedPage(r);
      await registerPage(r, orgId, { givenName: "", familyName: "", email: "", username: "" });
    }),
  );
  app.post("/ui/login/register", page(deps, postRegister));
  app.get("/ui/login/verify-email", page(deps, getVerifyEmail));
  app.post("/ui/login/verify-email", page(deps, postVerifyEmail));
}
