// The mails' default texts: ICU messages per language in messages/<lang>.json, like the hosted login's catalogue
// (src/http/login/messages), compiled by intl-messageformat the way an instance's own texts are (tags are text).
import { readFileSync } from "node:fs";
import type { IntlMessageFormat } from "intl-messageformat";
import { compileMailMessage, MAIL_LANGUAGES, type MailLanguage, type MailText, type MailType } from "../domain/mail/texts.js";

const DIR = new URL("./messages/", import.meta.url);

const MESSAGES = Object.fromEntries(
  MAIL_LANGUAGES.map((lang) => [lang, JSON.parse(readFileSync(new URL(`${lang}.json`, DIR), "utf8")) as Record<string, string>]),
) as Record<MailLanguage, Record<string, string>>;

const compiled = new Map<string, IntlMessageFormat>();

/** A message of the catalogue, formatted (English where the language lacks it). */
export function catalogueText(lang: MailLanguage, id: string, values: Record<string, string>): string {
  const key = `${lang}\u0000${id}`;
  let f = compiled.get(key);
  if (!f) {
    const source = MESSAGES[lang][id] ?? MESSAGES.en[id];
    if (source === undefined) throw new Error(`the mail catalogue has no message ${id}`);
    f = compileMailMessage(source, lang);
    compiled.set(key, f);
  }
  return String(f.format(values));
}

/** The catalogue's subject, title and text of a mail, as written (GetMailText shows them while no own texts exist). */
export function defaultMailText(type: MailType, lang: MailLanguage): MailText {
  const of = (field: string) => MESSAGES[lang][`mail.${type}.${field}`] ?? MESSAGES.en[`mail.${type}.${field}`] ?? "";
  return { subject: of("subject"), title: of("title"), text: of("text") };
}

/** Every message id of a language (the tests check that both languages have all). */
export function mailMessageIds(lang: MailLanguage): string[] {
  return Object.keys(MESSAGES[lang]);
}
