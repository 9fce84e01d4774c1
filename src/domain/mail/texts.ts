// What the mails say and in which language: the kinds of mail, the variables their ICU messages may use, the
// languages svc has texts for, and the validation of an instance's own texts (Set MailText). Pure: the default texts
// are the catalogue of src/mail (messages/<lang>.json), the stored overrides are settings rows (mail-texts.ts).
import { IntlMessageFormat } from "intl-messageformat";
import { invalidArgument } from "../errors.js";

/** The mails svc sends; each carries a code or a link made from it. */
export const MAIL_TYPES = ["verify_email", "password_reset", "otp_email", "invite_user"] as const;
export type MailType = (typeof MAIL_TYPES)[number];

/** The languages of the default texts (the hosted login's): English, German. */
export const MAIL_LANGUAGES = ["en", "de"] as const;
export type MailLanguage = (typeof MAIL_LANGUAGES)[number];
export const FALLBACK_LANGUAGE: MailLanguage = "en";

/**
 * The values every mail's messages may name: the code, the link (empty when the caller gave no URL template), the
 * user's name and login name, the organization's and the instance's names, and how long the code is valid (a
 * localized duration such as "1 hour").
 */
export const MAIL_VARIABLES = ["code", "link", "name", "loginName", "organization", "instance", "expiry"] as const;
export type MailVariable = (typeof MAIL_VARIABLES)[number];
export type MailValues = Record<MailVariable, string>;

/** The three texts of a mail: its subject, the heading and the paragraph above the code or link. */
export interface MailText {
  subject: string;
  title: string;
  text: string;
}
export const MAIL_TEXT_FIELDS = ["subject", "title", "text"] as const;

const MAX_LENGTH: Record<keyof MailText, number> = { subject: 200, title: 200, text: 4000 };

/** The supported language of a BCP 47 tag ("de-CH" is German), if svc has texts for it. */
export function supportedLanguage(tag: string | null | undefined): MailLanguage | undefined {
  const base = (tag ?? "").trim().toLowerCase().split(/[-_]/, 1)[0] ?? "";
  return (MAIL_LANGUAGES as readonly string[]).includes(base) ? (base as MailLanguage) : undefined;
}

/** The first of the candidates svc has texts for (the user's preferred language, then the request's), if any. */
export function firstSupportedLanguage(...candidates: (string | null | undefined)[]): MailLanguage | undefined {
  for (const c of candidates) {
    const s = supportedLanguage(c);
    if (s) return s;
  }
  return undefined;
}

export function mailType(value: string, field = "type"): MailType {
  if (!(MAIL_TYPES as readonly string[]).includes(value)) {
    throw invalidArgument("Errors.MailText.TypeInvalid", `${field} must be one of ${MAIL_TYPES.join(", ")}`, { field });
  }
  return value as MailType;
}

export function mailTextLanguage(value: string, field = "language"): MailLanguage {
  if (!(MAIL_LANGUAGES as readonly string[]).includes(value)) {
    throw invalidArgument("Errors.MailText.LanguageInvalid", `${field} must be one of ${MAIL_LANGUAGES.join(", ")}`, { field });
  }
  return value as MailLanguage;
}

/**
 * An ICU message of a mail, compiled as the mails compile it: tags are plain text (the HTML part escapes what the
 * message gives), and only MAIL_VARIABLES may be named.
 */
export function compileMailMessage(source: string, lang: MailLanguage): IntlMessageFormat {
  return new IntlMessageFormat(source, lang, undefined, { ignoreTag: true });
}

type Element = { type: number; value?: unknown; options?: Record<string, { value: Element[] }>; children?: Element[] };

/** The argument names an ICU message uses (arguments, number/date/time/select/plural and their options). */
function argumentNames(elements: readonly Element[], out = new Set<string>()): Set<string> {
  for (const e of elements) {
    // 1 argument, 2 number, 3 date, 4 time, 5 select, 6 plural (the parser's TYPE enum).
    if (e.type >= 1 && e.type <= 6 && typeof e.value === "string") out.add(e.value);
    for (const option of Object.values(e.options ?? {})) argumentNames(option.value, out);
    if (e.children) argumentNames(e.children, out);
  }
  return out;
}

/** Checks an instance's texts of one mail: each present, parseable, within its length, naming known variables only. */
export function validateMailText(input: MailText, lang: MailLanguage): MailText {
  const out = {} as MailText;
  for (const field of MAIL_TEXT_FIELDS) {
    const value = (input[field] ?? "").trim();
    const path = `text.${field}`;
    if (!value) throw invalidArgument("Errors.MailText.Missing", `${path} is required`, { field: path });
    if (value.length > MAX_LENGTH[field]) {
      throw invalidArgument("Errors.MailText.TooLong", `${path} must be at most ${MAX_LENGTH[field]} characters`, { field: path });
    }
    if (field !== "text" && /[\r\n]/.test(value)) throw invalidArgument("Errors.MailText.LineBreak", `${path} must be one line`, { field: path });
    let format: IntlMessageFormat;
    try {
      format = compileMailMessage(value, lang);
    } catch (err) {
      throw invalidArgument("Errors.MailText.Unparseable", `${path} is not a valid ICU message: ${(err as Error).message}`, { field: path });
    }
    const unknown = [...argumentNames(format.getAst() as unknown as Element[])].filter((n) => !(MAIL_VARIABLES as readonly string[]).includes(n));
    if (unknown.length) {
      throw invalidArgument(
        "Errors.MailText.UnknownVariable",
        `${path} names unknown variables (${unknown.map((n) => `{${n}}`).join(", ")}); known: ${MAIL_VARIABLES.map((n) => `{${n}}`).join(", ")}`,
        { field: path },
      );
    }
    try {
      // Formats with sample values: a plural or number over a text value fails here, not when a mail is sent.
      format.format(Object.fromEntries(MAIL_VARIABLES.map((n) => [n, "x"])));
    } catch (err) {
      throw invalidArgument("Errors.MailText.Unparseable", `${path} cannot be formatted: ${(err as Error).message}`, { field: path });
    }
    out[field] = value;
  }
  return out;
}
