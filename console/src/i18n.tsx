// Message catalogues as the hosted login keeps them (ICU MessageFormat, one JSON file per language). English is in
// the first bundle; German is loaded when chosen.
import { IntlMessageFormat } from "intl-messageformat";
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import en from "./messages/en.json";

export type MessageKey = keyof typeof en;
export type Lang = "en" | "de";
type Catalogue = Record<MessageKey, string>;

const loaders: Record<Lang, () => Promise<Catalogue>> = {
  en: async () => en,
  de: async () => (await import("./messages/de.json")).default,
};

const STORED = "svc-console.lang";

export function initialLang(): Lang {
  const stored = localStorage.getItem(STORED);
  if (stored === "en" || stored === "de") return stored;
  return navigator.language.toLowerCase().startsWith("de") ? "de" : "en";
}

interface I18n {
  lang: Lang;
  setLang(lang: Lang): void;
  t(key: MessageKey, values?: Record<string, string | number>): string;
}

const I18nContext = createContext<I18n | null>(null);

export function I18nProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<{ lang: Lang; catalogue: Catalogue }>({ lang: "en", catalogue: en });
  const setLang = useCallback((lang: Lang) => {
    localStorage.setItem(STORED, lang);
    void loaders[lang]().then((catalogue) => setState({ lang, catalogue }));
  }, []);
  useEffect(() => {
    const lang = initialLang();
    if (lang !== "en") void loaders[lang]().then((catalogue) => setState({ lang, catalogue }));
  }, []);
  useEffect(() => {
    document.documentElement.lang = state.lang;
  }, [state.lang]);
  const value = useMemo<I18n>(() => {
    const compiled = new Map<string, IntlMessageFormat>();
    return {
      lang: state.lang,
      setLang,
      t(key, values) {
        const source = state.catalogue[key] ?? en[key] ?? key;
        if (!values) return source;
        let f = compiled.get(key);
        if (!f) {
          f = new IntlMessageFormat(source, state.lang);
          compiled.set(key, f);
        }
        return String(f.format(values));
      },
    };
  }, [state, setLang]);
  return <I18nContext.Provider value={value}>{children}</I18nContext.Provider>;
}

export function useI18n(): I18n {
  const i = useContext(I18nContext);
  if (!i) throw new Error("useI18n outside I18nProvider");
  return i;
}
