// What every page that sets a new password shares: the rules of the organization's complexity policy (listed by the
// server, marked live by password-rules.js, enforced by the domain), the new password with its repeat, and the
// domain's refusals turned into an error on the field they concern.

import { asDomainError } from "../../../domain/errors.js";
import type { Effective } from "../../../domain/settings/values.js";
import { type Html, html } from "../html.js";
import type { Translate } from "../i18n.js";
import { field, type PageContext } from "../layout.js";

export const MAX_PASSWORD = 256;
export const RULES_SCRIPT = ["password-rules.js"];
export type Complexity = Effective<"password_complexity">;

/** The rule list password-rules.js reads: <ul id="password-rules" data-for="<input id>" data-min-length>. */
function rules(p: PageContext, c: Complexity): Html {
  const item = (rule: string, on: boolean, values?: Record<string, number>) =>
    on ? html`<li data-rule="${rule}">${p.t(`selfservice.rule.${rule}`, values)}</li>` : "";
  return html`<ul id="password-rules" class="rules" data-for="f-password" data-min-length="${String(c.minLength)}" aria-label="${p.t("selfservice.rules")}">
${item("length", true, { min: c.minLength })}${item("uppercase", c.requiresUppercase)}${item("lowercase", c.requiresLowercase)}${item("number", c.requiresNumber)}${item("symbol", c.requiresSymbol)}
</ul>`;
}

export interface NewPasswordErrors {
  password?: string;
  repeat?: string;
}

/**
 * The new password, its rules and its repeat (fields "password" and "passwordRepeat"). `focus`: the page's first
 * field is the new password; then the field with an error takes the focus.
 */
export function newPasswordFields(p: PageContext, c: Complexity, errors: NewPasswordErrors = {}, focus = false): Html {
  const autofocus = (focus && !errors.repeat) || errors.password !== undefined;
  return html`${field({ name: "password", label: p.t("selfservice.newPassword"), type: "password", autocomplete: "new-password", required: true, autofocus, error: errors.password, describedBy: "password-rules", maxlength: MAX_PASSWORD })}
${rules(p, c)}
${field({ name: "passwordRepeat", label: p.t("selfservice.repeatPassword"), type: "password", autocomplete: "new-password", required: true, autofocus: errors.repeat !== undefined && errors.password === undefined, error: errors.repeat, maxlength: MAX_PASSWORD })}`;
}

/**
 * The form's new password, and the error of the form before the domain is asked: too long for the form (never cut
 * short: a cut password would not be the one the user typed), or a repeat that differs.
 */
export function readNewPassword(r: { param(name: string): string | undefined; t: Translate }): { password: string; errors?: NewPasswordErrors } {
  const password = r.param("password") ?? "";
  if (password.length > MAX_PASSWORD) return { password: "", errors: { password: r.t("selfservice.password.tooLong") } };
  if (password !== (r.param("passwordRepeat") ?? "")) return { password, errors: { repeat: r.t("selfservice.repeatMismatch") } };
  return { password };
}

/** A refused new password's message for its field, or undefined for errors that are not about the new password. */
export function newPasswordError(t: Translate, err: unknown): string | undefined {
  switch (asDomainError(err)?.id) {
    case "Errors.User.Password.Complexity":
      return t("selfservice.password.complexity");
    case "Errors.User.Password.InHistory":
      return t("selfservice.password.inHistory");
    case "Errors.User.Password.TooLong":
      return t("selfservice.password.tooLong");
    case "Errors.User.Password.Missing":
      return t("selfservice.password.missing");
  }
  return undefined;
}
