// A mail of the domain (ports.ts Mail) rendered into what is sent: the subject, a plain-text part and an HTML part that
// say the same thing. The texts are the instance's own (SetMailText) or the catalogue's, formatted with the mail's
// values; in HTML every value and text is escaped (a user named "<script>" is shown, never run). The HTML is light,
// table-based and inline-styled (what mail clients render), with the organization's logo or name and its primary
// colour, and a button whose text colour keeps a readable contrast against it.
import type { Mail } from "../domain/identity/authn/ports.js";
import { compileMailMessage, type MailText } from "../domain/mail/texts.js";
import { catalogueText, defaultMailText } from "./catalogue.js";

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

/** Relative luminance (WCAG 2) of #rrggbb. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** White where it reaches WCAG AA's 4.5:1 on the background (as buttons usually are), else whichever contrasts more. */
function textOn(background: string): string {
  const l = luminance(background);
  const white = 1.05 / (l + 0.05);
  const dark = (l + 0.05) / (luminance("#111111") + 0.05);
  return white >= 4.5 || white >= dark ? "#ffffff" : "#111111";
}

const COLOR = /^#[0-9a-fA-F]{6}$/;
const safeColor = (c: string, fallback: string) => (COLOR.test(c) ? c : fallback);

export function renderMail(mail: Mail): RenderedMail {
  const { language: lang, values } = mail;
  const own: MailText = mail.text ?? defaultMailText(mail.type, lang);
  const format = (source: string) => String(compileMailMessage(source, lang).format(values));
  const subject = format(own.subject)
    .replace(/[\r\n]+/g, " ")
    .trim();
  const title = format(own.title);
  const body = format(own.text);
  const t = (id: string) => catalogueText(lang, id, values);
  const link = values.link;
  const action = link ? t("mail.action.link") : t("mail.action.code");
  const ignore = t("mail.footer.ignore");
  const sender = t("mail.footer.sender");

  const text = [
    title,
    "",
    body,
    "",
    action,
    "",
    // The code indented by four spaces on a line of its own, the link alone on its line: easy to find and copy.
    link ? link : `    ${values.code}`,
    "",
    ignore,
    "",
    "-- ",
    sender,
    "",
  ].join("\n");

  const primary = safeColor(mail.branding.primaryColor, "#2f6feb");
  const background = safeColor(mail.branding.backgroundColor, "#ffffff");
  const font = safeColor(mail.branding.fontColor, "#1f2328");
  const e = escapeHtml;
  const paragraphs = body
    .split(/\n{2,}/)
    .map((p) => `<p style="margin:0 0 16px 0;">${e(p).replace(/\n/g, "<br>")}</p>`)
    .join("");
  const header = mail.branding.logoUrl
    ? `<img src="${e(mail.branding.logoUrl)}" alt="${e(values.organization)}" height="40" style="display:block;height:40px;max-width:240px;border:0;">`
    : `<span style="font-size:18px;font-weight:600;color:${primary};">${e(values.organization)}</span>`;
  const actionHtml = link
    ? `<p style="margin:0 0 16px 0;">${e(action)}</p>
<table role="presentation" cellspacing="0" cellpadding="0" border="0" style="margin:0 0 16px 0;"><tr><td style="border-radius:6px;background:${primary};">
<a href="${e(link)}" style="display:inline-block;padding:12px 20px;font-weight:600;color:${textOn(primary)};text-decoration:none;border-radius:6px;">${e(t(`mail.${mail.type}.button`))}</a>
</td></tr></table>
<p style="margin:0 0 16px 0;font-size:13px;">${e(t("mail.action.linkFallback"))}<br><a href="${e(link)}" style="color:${primary};word-break:break-all;">${e(link)}</a></p>`
    : `<p style="margin:0 0 8px 0;">${e(action)}</p>
<p style="margin:0 0 16px 0;"><span style="display:inline-block;padding:10px 16px;border:2px solid ${primary};border-radius:6px;font-family:Menlo,Consolas,monospace;font-size:24px;letter-spacing:3px;font-weight:600;">${e(values.code)}</span></p>`;

  const html = `<!doctype html>
<html lang="${lang}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light"><title>${e(subject)}</title></head>
<body style="margin:0;padding:0;background:#f3f4f6;">
<table role="presentation" width="100%" cellspacing="0" cellpadding="0" border="0" style="background:#f3f4f6;"><tr><td align="center" style="padding:24px 12px;">
<table role="presentation" width="100%" cellspacing="0" cellpadding="0" border="0" style="max-width:560px;background:${background};color:${font};border-top:4px solid ${primary};border-radius:8px;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;font-size:16px;line-height:1.5;">
<tr><td style="padding:24px 32px 0 32px;">${header}</td></tr>
<tr><td style="padding:16px 32px 8px 32px;">
<h1 style="margin:0 0 16px 0;font-size:22px;line-height:1.3;color:${font};">${e(title)}</h1>
${paragraphs}
${actionHtml}
<p style="margin:0 0 16px 0;font-size:14px;">${e(ignore)}</p>
</td></tr>
<tr><td style="padding:0 32px 24px 32px;font-size:13px;color:${font};opacity:0.8;">${e(sender)}</td></tr>
</table>
</td></tr></table>
</body>
</html>
`;
  return { subject, text, html };
}
