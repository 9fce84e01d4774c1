// The mails of codes and links as the domain decides them (language, values, branding, the instance's own texts),
// and the instance's own texts themselves: Get/Set/ResetMailText of MailTextService, one settings row per mail and
// language (kind `mail_text.<type>.<lang>`, owner the instance), so that two administrators changing different texts
// never overwrite each other. Instance-wide only: iam.read to read them, iam.write to change them (IAM_OWNER).
import { authorize } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import type { Mail } from "../identity/authn/ports.js";
import { effectiveSetting, type StoredSetting as StoredSettingRow } from "../settings/settings.js";
import { firstSupportedLanguage, type MailLanguage, type MailText, type MailType, validateMailText } from "./texts.js";

const kindOf = (type: MailType, lang: MailLanguage) => `mail_text.${type}.${lang}`;

function storedText(value: unknown): MailText | undefined {
  if (!value || typeof value !== "object") return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.subject !== "string" || typeof v.title !== "string" || typeof v.text !== "string") return undefined;
  return { subject: v.subject, title: v.title, text: v.text };
}

async function instanceText(ctx: Ctx, type: MailType, lang: MailLanguage): Promise<{ text: MailText } | undefined> {
  const [row] = await ctx.store.settings.values(ctx.instanceId, kindOf(type, lang), [ctx.instanceId]);
  const text = storedText(row?.value);
  return text ? { text } : undefined;
}

/** The user a mail goes to, as the authentication commands load it (store/authn.ts AuthnSubject). */
export interface MailRecipient {
  orgId: string;
  displayName: string;
  loginName: string;
  orgName: string;
  instanceName: string;
  preferredLanguage: string | null;
}

/** "1 hour", "5 Minuten": how long a code is valid, in the mail's language. */
function duration(minutes: number, lang: MailLanguage): string {
  const [value, unit] = minutes % 60 === 0 ? [minutes / 60, "hour"] : [minutes, "minute"];
  return new Intl.NumberFormat(lang, { style: "unit", unit, unitDisplay: "long" }).format(value);
}

/**
 * The mail of a code (or of the link made from it) to `to`: in the user's preferred language, else the language the
 * browser of the hosted login page it came from chose, else the default language of the user's organization (the
 * language settings); in the branding of the user's organization; with the instance's own texts of that mail and
 * language when it has them. Two or three reads, then the mailer.
 */
export async function codeMail(
  ctx: Ctx,
  user: MailRecipient,
  to: string,
  type: MailType,
  c: { code: string; link?: string; validMinutes: number },
): Promise<Mail> {
  const chosen = firstSupportedLanguage(user.preferredLanguage, ctx.uiLanguage?.());
  const [branding, language] = await Promise.all([
    effectiveSetting(ctx, "branding", user.orgId),
    chosen ?? effectiveSetting(ctx, "language", user.orgId).then((s) => s.defaultLanguage),
  ]);
  const own = await instanceText(ctx, type, language);
  return {
    to,
    type,
    language,
    values: {
      code: c.code,
      link: c.link ?? "",
      name: user.displayName,
      loginName: user.loginName,
      organization: user.orgName,
      instance: user.instanceName,
      expiry: duration(c.validMinutes, language),
    },
    branding: { primaryColor: branding.primaryColor, backgroundColor: branding.backgroundColor, fontColor: branding.fontColor, logoUrl: branding.logoUrl },
    ...(own ? { text: own.text } : {}),
  };
}

// ---------------------------------------------------------------- MailTextService

/** GetMailText: the instance's own texts of a mail and language, or undefined while the catalogue's apply. */
export async function getMailText(ctx: Ctx, type: MailType, lang: MailLanguage): Promise<MailText | undefined> {
  authorize(ctx, "iam.read", null);
  return (await instanceText(ctx, type, lang))?.text;
}

/** SetMailText: replaces the instance's texts of one mail and language (validated: ICU, known variables). */
export async function setMailText(ctx: Ctx, type: MailType, lang: MailLanguage, input: MailText | undefined): Promise<StoredSettingRow> {
  authorize(ctx, "iam.write", null);
  if (!input) throw invalidArgument("Errors.MailText.Missing", "text is required", { field: "text" });
  const text = validateMailText(input, lang);
  const now = ctx.clock();
  return ctx.store.transaction(async (tx) => {
    const row = await tx.settings.put(ctx.instanceId, ctx.instanceId, kindOf(type, lang), { ...text }, now);
    await recordEvent(ctx, tx, {
      aggregateType: "settings",
      aggregateId: ctx.instanceId,
      type: "settings.mail_text.set",
      payload: { type, language: lang, ...text },
    });
    return row;
  });
}

/** ResetMailText: the catalogue's texts apply again; NotFound when the instance has none of its own. */
export async function resetMailText(ctx: Ctx, type: MailType, lang: MailLanguage): Promise<{ changedAt: Date; ownerId: string }> {
  authorize(ctx, "iam.write", null);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    if (!(await tx.settings.remove(ctx.instanceId, ctx.instanceId, kindOf(type, lang)))) {
      throw notFound("Errors.MailText.NotFound", "the instance has no texts of its own for this mail and language");
    }
    await recordEvent(ctx, tx, { aggregateType: "settings", aggregateId: ctx.instanceId, type: "settings.mail_text.reset", payload: { type, language: lang } });
  });
  return { changedAt: now, ownerId: ctx.instanceId };
}
