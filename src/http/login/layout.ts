// The page shell every login page shares: language, title, the organization's branding (its logo here, its colours
// in theme.css), the card with the page's content, and the scripts a page names (files, never inline: the CSP
// allows scripts from svc itself only).
import type { Branding } from "../../domain/settings/values.js";
import { type Html, html } from "./html.js";
import type { Language, Translate } from "./i18n.js";

export interface PageContext {
  lang: Language;
  t: Translate;
  /** The organization whose branding applies (from the auth request's scope or the user); undefined: the instance's. */
  orgId?: string;
  branding: Branding;
  /** This browser's CSRF token for forms. */
  csrf: string;
  /** Absolute URL of a login path, e.g. url("/password", {session}). */
  url(path: string, query?: Record<string, string | undefined>): string;
  /** An asset's URL (CSS, scripts). */
  asset(name: string): string;
  /** A login name as the branding shows it ("alice" for alice@acme.example with hideLoginNameSuffix). */
  shown(loginName: string): string;
}

export interface PageOptions {
  title: string;
  /** Shown under the title. */
  subtitle?: string | Html;
  body: Html;
  scripts?: string[];
}

/** The logo (decorative: the page's heading says what it is), in the theme's variant. */
function logoOf(b: Branding): Html | string {
  const light = b.logoUrl;
  const dark = b.darkLogoUrl || b.logoUrl;
  if (b.themeMode === "dark") return dark ? html`<img class="logo" src="${dark}" alt="" />` : "";
  if (b.themeMode === "light" || !dark || dark === light) return light ? html`<img class="logo" src="${light}" alt="" />` : "";
  return html`<picture><source srcset="${dark}" media="(prefers-color-scheme: dark)" />${light ? html`<img class="logo" src="${light}" alt="" />` : html`<img class="logo" src="${dark}" alt="" />`}</picture>`;
}

export function renderPage(p: PageContext, o: PageOptions): string {
  const theme = p.url("/theme.css", { org: p.orgId });
  const logo = logoOf(p.branding);
  const watermark = p.branding.disableWatermark ? "" : html`<p class="watermark">${p.t("layout.poweredBy")}</p>`;
  const page = html`<!doctype html>
<html lang="${p.lang}">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<meta name="referrer" content="no-referrer" />
<title>${o.title}</title>
<link rel="stylesheet" href="${p.asset("login.css")}" />
<link rel="stylesheet" href="${theme}" />
</head>
<body>
<main class="card" id="main">
${logo}
<h1>${o.title}</h1>
${o.subtitle ? html`<p class="subtitle">${o.subtitle}</p>` : ""}
${o.body}
</main>
<footer>${watermark}</footer>
${(o.scripts ?? []).map((s) => html`<script src="${p.asset(s)}" defer></script>`)}
</body>
</html>
`;
  return page.value;
}

/** A form field with its label and, when there is one, its error tied to it (aria-describedby). */
export function field(o: {
  name: string;
  label: string;
  type?: string;
  value?: string;
  autocomplete?: string;
  error?: string;
  required?: boolean;
  autofocus?: boolean;
  inputmode?: string;
  describedBy?: string;
  pattern?: string;
  maxlength?: number;
}): Html {
  const id = `f-${o.name}`;
  const errorId = `${id}-error`;
  const described = [o.error ? errorId : undefined, o.describedBy].filter(Boolean).join(" ");
  return html`<div class="field">
<label for="${id}">${o.label}</label>
<input id="${id}" name="${o.name}" type="${o.type ?? "text"}"${o.value !== undefined ? html` value="${o.value}"` : ""}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ""}${o.required ? html` required` : ""}${o.autofocus ? html` autofocus` : ""}${o.inputmode ? html` inputmode="${o.inputmode}"` : ""}${o.pattern ? html` pattern="${o.pattern}"` : ""}${o.maxlength ? html` maxlength="${String(o.maxlength)}"` : ""}${o.error ? html` aria-invalid="true"` : ""}${described ? html` aria-describedby="${described}"` : ""} />
${o.error ? html`<p class="error" id="${errorId}" role="alert">${o.error}</p>` : ""}
</div>`;
}

/** The hidden inputs every form carries: the CSRF token and the flow's references. */
export function hidden(p: PageContext, values: Record<string, string | undefined>): Html {
  return html`<input type="hidden" name="_csrf" value="${p.csrf}" />${Object.entries(values)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}`;
}

/** A message above the form (an error not tied to one field, or a notice). */
export function alert(text: string | undefined, kind: "error" | "info" = "error"): Html | string {
  if (!text) return "";
  return html`<div class="alert alert-${kind}" role="${kind === "error" ? "alert" : "status"}">${text}</div>`;
}
