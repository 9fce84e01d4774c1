// How a code reaches its user: sent by e-mail (as a code, or inside a link made from the caller's URL template),
// or returned to the caller for delivery (checked by the caller's rules in access.ts). The mail server is the
// Ctx's mailer; without one nothing can be sent.
import type { Ctx } from "../../context.js";
import { DomainError, failedPrecondition, invalidArgument } from "../../errors.js";
import type { Mail } from "./ports.js";

export type Delivery = { kind: "send"; urlTemplate?: string } | { kind: "return" };

/**
 * The access a password-setting code's delivery needs (access.ts): returned, or sent inside the caller's URL template
 * (the link takes the code to the caller's URL), it is the caller's to use, so both need "who may change an account".
 */
export const passwordCodeAction = (d: Delivery): "returnCode" | "sendToTemplate" | "send" =>
  d.kind === "return" ? "returnCode" : d.urlTemplate !== undefined ? "sendToTemplate" : "send";

/** Values a URL template may name: {{.Code}}, {{.UserID}}, {{.LoginName}} (and {{.SessionID}} for a session's code). */
export type TemplateValues = { Code: string; UserID: string; LoginName: string; SessionID?: string };

const PLACEHOLDER = /\{\{\s*\.(\w+)\s*\}\}/g;
const MAX_TEMPLATE = 2048;

/**
 * Refuses a delivery that cannot happen, before any code is made: a send without a mail server, or a URL template
 * that does not give an http(s) URL.
 */
export function checkDelivery(ctx: Ctx, d: Delivery, names: readonly (keyof TemplateValues)[] = ["Code", "UserID", "LoginName"]): void {
  if (d.kind !== "send") return;
  if (!ctx.mailer) throw failedPrecondition("Errors.Smtp.NotConfigured", "svc has no mail server (SVC_SMTP_URL) to send the code with");
  if (d.urlTemplate === undefined) return;
  const sample = Object.fromEntries(names.map((n) => [n, "x"])) as TemplateValues;
  renderLink(d.urlTemplate, sample, names);
}

/** The link of a template with each placeholder replaced by its (URL-encoded) value. */
export function renderLink(template: string, values: TemplateValues, names: readonly (keyof TemplateValues)[] = ["Code", "UserID", "LoginName"]): string {
  const invalid = (why: string) => invalidArgument("Errors.User.Code.UrlTemplateInvalid", `url_template ${why}`, { field: "url_template" });
  if (template.length > MAX_TEMPLATE) throw invalid(`must be at most ${MAX_TEMPLATE} characters`);
  const link = template.replace(PLACEHOLDER, (_m, name: string) => {
    const value = (names as readonly string[]).includes(name) ? values[name as keyof TemplateValues] : undefined;
    if (value === undefined) throw invalid(`names an unknown placeholder {{.${name}}}`);
    return encodeURIComponent(value);
  });
  let url: URL | undefined;
  try {
    url = new URL(link);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password) throw invalid("must give an absolute http(s) URL");
  return link;
}

/** Hands a message to the mail server; a server that refuses it or cannot be reached is Unavailable. */
export async function sendMail(ctx: Ctx, mail: Mail): Promise<void> {
  const mailer = ctx.mailer;
  if (!mailer) throw failedPrecondition("Errors.Smtp.NotConfigured", "svc has no mail server (SVC_SMTP_URL) to send the code with");
  try {
    await mailer.send(mail);
  } catch (err) {
    // The code itself is in the message, never in the log.
    ctx.log.warn({ requestId: ctx.requestId, err: { message: (err as Error).message, code: (err as { code?: string }).code } }, "could not send an e-mail");
    throw new DomainError("Unavailable", "Errors.Smtp.SendFailed", "the mail server did not accept the message: try again later");
  }
}
