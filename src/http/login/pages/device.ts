// The user code page of the Device Authorization Grant (RFC 8628 §3.3): the user types the code its device shows
// (verification_uri_complete fills it in, the user still confirms it, §5.4), then signs in through the hosted login
// for the auth request the code starts and allows the application on the consent page; the request's answer comes
// back to the done page, which tells the user to return to the device.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { NO_LIMITS } from "../../../domain/limits.js";
import { DeviceErrors, enterUserCode } from "../../../domain/oauth/device-entry.js";
import type { LoginDeps } from "../context.js";
import { html } from "../html.js";
import { field, hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

const MAX_TYPED = 40;

async function codeForm(r: LoginRequest, typed: string | undefined, error?: string): Promise<void> {
  await r.render(
    (p) => ({
      title: p.t("device.title"),
      subtitle: p.t("device.subtitle"),
      body: html`<form method="post" action="${p.url("/device")}">
${hidden(p, {})}
${field({ name: "user_code", label: p.t("device.code"), value: typed?.slice(0, MAX_TYPED), autocomplete: "one-time-code", required: true, autofocus: true, maxlength: MAX_TYPED, error })}
<button type="submit" class="button primary">${p.t("device.continue")}</button>
</form>`,
    }),
    error ? 400 : 200,
  );
}

async function postCode(r: LoginRequest): Promise<void> {
  const typed = r.param("user_code") ?? "";
  let authRequestId: string;
  try {
    authRequestId = await enterUserCode(r.ctx, r.deps.deviceCodeLimits ?? r.ctx.limits ?? NO_LIMITS, typed, r.url("/device/done"));
  } catch (err) {
    const id = asDomainError(err)?.id;
    if (id === DeviceErrors.UserCodeInvalid) return codeForm(r, typed, r.t("device.invalid"));
    if (id === DeviceErrors.UserCodeUsed) return codeForm(r, typed, r.t("device.used"));
    throw err;
  }
  r.redirect(r.url("/login", { authRequest: authRequestId }));
}

async function done(r: LoginRequest): Promise<void> {
  const denied = r.param("error") !== undefined;
  await r.render((p) => ({
    title: p.t(denied ? "device.denied.title" : "device.done.title"),
    body: html`<p>${p.t(denied ? "device.denied.text" : "device.done.text")}</p>`,
  }));
}

export function devicePages(app: Express, deps: LoginDeps): void {
  app.get(
    "/ui/login/device",
    page(deps, (r) => codeForm(r, r.param("user_code"))),
  );
  app.post("/ui/login/device", page(deps, postCode));
  app.get("/ui/login/device/done", page(deps, done));
}
