// The hosted login's pure parts: every text in every language (and valid ICU), the language choice, the sealed
// browser cookie (tampering, another key, the size limit), the CSRF tokens and the escaping of page values.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { IntlMessageFormat } from "intl-messageformat";
import { masterKeySealer } from "../../src/crypto/sealer.js";
import { cookieJar, csrfToken, freshState, MAX_SESSIONS, validCsrf, withoutSession, withSession } from "../../src/http/login/cookie.js";
import { html, trusted } from "../../src/http/login/html.js";
import { chooseLanguage, LANGUAGES, matchLanguage, messageIds, messageSource, translator } from "../../src/http/login/i18n.js";

/** The argument names an ICU message uses (plural, select and nested ones included), sorted. */
function argumentsOf(source: string): string[] {
  const names = new Set<string>();
  const walk = (nodes: unknown): void => {
    if (!Array.isArray(nodes)) return;
    for (const n of nodes as { type: number; value?: unknown; options?: Record<string, { value: unknown }>; children?: unknown }[]) {
      if (n.type >= 1 && n.type <= 6 && typeof n.value === "string") names.add(n.value);
      if (n.options) for (const o of Object.values(n.options)) walk(o.value);
      if (n.children) walk(n.children);
    }
  };
  walk(new IntlMessageFormat(source, "en").getAst());
  return [...names].sort();
}

describe("texts", () => {
  it("has every English text in every other language, with the same arguments, and every text formats", () => {
    const english = messageIds("en").sort();
    for (const lang of LANGUAGES) {
      expect(messageIds(lang).sort()).toEqual(english);
      const t = translator(lang);
      for (const id of english) {
        const names = argumentsOf(messageSource(lang, id) as string);
        expect([id, names]).toEqual([id, argumentsOf(messageSource("en", id) as string)]);
        expect(t(id, Object.fromEntries(names.map((n) => [n, 1])))).not.toBe(id);
      }
    }
  });

  it("chooses ui_locales first, then Accept-Language by weight, else English", () => {
    expect(chooseLanguage(["fr", "de-CH"], "en")).toBe("de");
    expect(chooseLanguage([], "fr;q=1, de;q=0.8, en;q=0.5")).toBe("de");
    expect(chooseLanguage([], "en;q=0.2, de-AT;q=0.9")).toBe("de");
    expect(chooseLanguage([], "de;q=0, fr")).toBe("en");
    expect(chooseLanguage([], undefined)).toBe("en");
    expect(chooseLanguage(["xx"], "garbage;;;q=abc")).toBe("en");
    // No match at all: the language settings' default applies (the page reads it only then).
    expect(matchLanguage(["xx"], "fr, it;q=0.5")).toBeUndefined();
    expect(matchLanguage([], "fr, de-AT;q=0.1")).toBe("de");
  });
});

describe("the browser cookie", () => {
  const sealer = masterKeySealer(randomBytes(32));
  const jar = cookieJar(sealer, true);
  const value = (setCookie: string) => setCookie.slice(0, setCookie.indexOf(";"));

  it("is __Host-, Secure, HttpOnly and SameSite=Lax on https, and reads back what was written", () => {
    const state = withSession(freshState(), { id: "s1", token: "t1", userId: "u1", loginName: "a@example.com" });
    const set = jar.write(state);
    expect(set).toMatch(/^__Host-svc-login=/);
    expect(set).toContain("; Path=/; HttpOnly; SameSite=Lax; Secure");
    expect(jar.read(value(set))).toEqual(state);
    expect(cookieJar(sealer, false).write(state)).not.toContain("Secure");
  });

  it("is nothing when altered, sealed with another key, or not ours", () => {
    const set = value(jar.write(withSession(freshState(), { id: "s1", token: "t1" })));
    const [name, sealed] = set.split("=") as [string, string];
    const flipped = Buffer.from(sealed, "base64url");
    flipped[flipped.length - 1] ^= 1;
    expect(jar.read(`${name}=${flipped.toString("base64url")}`)).toBeUndefined();
    expect(cookieJar(masterKeySealer(randomBytes(32)), true).read(set)).toBeUndefined();
    expect(jar.read(`${name}=not-base64-at-all!!`)).toBeUndefined();
    expect(jar.read(`other=${sealed}`)).toBeUndefined();
    expect(jar.read(undefined)).toBeUndefined();
  });

  it("keeps the newest sessions, one per user", () => {
    let state = freshState();
    for (let i = 0; i < MAX_SESSIONS + 3; i++) state = withSession(state, { id: `s${i}`, token: "t", userId: `u${i}` });
    expect(state.sessions).toHaveLength(MAX_SESSIONS);
    expect(state.sessions[0]?.id).toBe(`s${MAX_SESSIONS + 2}`);
    state = withSession(state, { id: "again", token: "t", userId: `u${MAX_SESSIONS + 1}` });
    expect(state.sessions.filter((s) => s.userId === `u${MAX_SESSIONS + 1}`).map((s) => s.id)).toEqual(["again"]);
    expect(withoutSession(state, "again").sessions.some((s) => s.id === "again")).toBe(false);
  });
});

describe("CSRF tokens", () => {
  it("are this browser's only", () => {
    const a = freshState();
    const b = freshState();
    expect(validCsrf(a, csrfToken(a))).toBe(true);
    expect(validCsrf(b, csrfToken(a))).toBe(false);
    expect(validCsrf(undefined, csrfToken(a))).toBe(false);
    expect(validCsrf(a, undefined)).toBe(false);
    expect(validCsrf(a, ["x"])).toBe(false);
    expect(validCsrf(a, `${csrfToken(a)}x`)).toBe(false);
    // 43 characters, one of them not ASCII: more bytes than a token has, refused rather than thrown on.
    expect(validCsrf(a, `${csrfToken(a).slice(0, 42)}₷`)).toBe(false);
    expect(validCsrf(a, `${csrfToken(a).slice(0, 41)}é`)).toBe(false);
  });
});

describe("page values", () => {
  it("are escaped unless they are markup the page built", () => {
    const evil = `"><script>alert(1)</script>'&`;
    expect(html`<input value="${evil}">`.value).toBe('<input value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;&amp;">');
    expect(html`<p>${[evil, html`<b>${evil}</b>`]}</p>`.value).not.toContain("<script>");
    expect(html`${trusted("<svg></svg>")}`.value).toBe("<svg></svg>");
    expect(html`${undefined}${null}${false}${0}`.value).toBe("0");
  });
});
