// The login pages' texts: ICU messages per language in messages/<lang>.json and messages/<lang>.<part>.json (one file
// per group of pages), none in templates. The language is the
// first of the auth request's ui_locales, then the browser's Accept-Language, that svc has texts for; English else.
import { readdirSync, readFileSync } from "node:fs";
import { IntlMessageFormat } from "intl-messageformat";

export const LANGUAGES = ["en", "de"] as const;
export type Language = (typeof LANGUAGES)[number];
const FALLBACK: Language = "en";

type Messages = Record<string, string>;

const DIR = new URL("./messages/", import.meta.url);

function load(lang: Language): Messages {
  const files = readdirSync(DIR).filter((f) => f === `${lang}.json` || (f.startsWith(`${lang}.`) && f.endsWith(".json")));
  return Object.assign({}, ...files.sort().map((f) => JSON.parse(readFileSync(new URL(f, DIR), "utf8")) as Messages)) as Messages;
}

const MESSAGES: Record<Language, Messages> = Object.fromEntries(LANGUAGES.map((l) => [l, load(l)])) as Record<Language, Messages>;
const compiled = new Map<string, IntlMessageFormat>();

export type Values = Record<string, string | number | Date>;
export type Translate = (id: string, values?: Values) => string;

/** The texts of one language; a message missing there comes from English, an unknown id is shown as itself. */
export function translator(lang: Language): Translate {
  return (id, values) => {
    const key = `${lang}\u0000${id}`;
    let f = compiled.get(key);
    if (!f) {
      const source = MESSAGES[lang][id] ?? MESSAGES[FALLBACK][id];
      if (source === undefined) return id;
      f = new IntlMessageFormat(source, lang);
      compiled.set(key, f);
    }
    return String(f.format(values));
  };
}

/** A message as written (tests check its arguments). */
export function messageSource(lang: Language, id: string): string | undefined {
  return MESSAGES[lang][id];
}

/** Every message id of every language (for the tests that all languages have all texts). */
export function messageIds(lang: Language): string[] {
  return Object.keys(MESSAGES[lang]);
}

const supported = (tag: string): Language | undefined => {
  const base = tag.trim().toLowerCase().split(/[-_]/, 1)[0];
  return (LANGUAGES as readonly string[]).includes(base ?? "") ? (base as Language) : undefined;
};

/** ui_locales (space-separated, in order of preference) first, then Accept-Language by its q-values. */
export function chooseLanguage(uiLocales: readonly string[], acceptLanguage: string | undefined): Language {
  return matchLanguage(uiLocales, acceptLanguage) ?? FALLBACK;
}

/** The first of the auth request's ui_locales, then of the browser's Accept-Language (by weight), svc has texts for. */
export function matchLanguage(uiLocales: readonly string[], acceptLanguage: string | undefined): Language | undefined {
  for (const l of uiLocales) {
    const s = supported(l);
    if (s) return s;
  }
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .slice(0, 20)
    .map((part, i) => {
      const [tag = "", ...params] = part.split(";");
      const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
      const weight = q ? Number(q.slice(2)) : 1;
      return { tag, weight: Number.isFinite(weight) ? weight : 0, i };
    })
    .filter((x) => x.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.i - b.i);
  for (const r of ranked) {
    const s = supported(r.tag);
    if (s) return s;
  }
  return undefined;
}
