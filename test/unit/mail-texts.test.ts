// The mails' catalogue and rendering without a server: both languages have every text, the defaults pass the
// validation an instance's own texts get, the language choice, the escaping of every value in HTML, and a button
// text that stays readable on a light or dark primary colour.
import { describe, expect, it } from "@jest/globals";
import type { Mail } from "../../src/domain/identity/authn/ports.js";
import { firstSupportedLanguage, MAIL_LANGUAGES, MAIL_TYPES, validateMailText } from "../../src/domain/mail/texts.js";
import { defaultMailText, mailMessageIds } from "../../src/mail/catalogue.js";
import { renderMail } from "../../src/mail/render.js";

const mail = (over: Partial<Mail> = {}, values: Partial<Mail["values"]> = {}): Mail => ({
  to: "u@example.test",
  type: "password_reset",
  language: "en",
  values: { code: "ABCD2345", link: "", name: "Ann", loginName: "ann@acme.test", organization: "Acme", instance: "svc", expiry: "1 hour", ...values },
  branding: { primaryColor: "#2f6feb", backgroundColor: "#ffffff", fontColor: "#1f2328", logoUrl: "" },
  ...over,
});

describe("the catalogue", () => {
  it("has every message in every language", () => {
    const en = mailMessageIds("en").sort();
    for (const lang of MAIL_LANGUAGES) expect(mailMessageIds(lang).sort()).toEqual(en);
  });

  it("has defaults that pass the validation of an instance's own texts", () => {
    for (const type of MAIL_TYPES)
      for (const lang of MAIL_LANGUAGES) expect(validateMailText(defaultMailText(type, lang), lang)).toEqual(defaultMailText(type, lang));
  });
});

describe("the language of a mail", () => {
  it("is the first supported candidate, by its base language, else none", () => {
    expect(firstSupportedLanguage("de-CH", "en")).toBe("de");
    expect(firstSupportedLanguage(null, "fr", "DE_at")).toBe("de");
    // None svc has texts for: the organization's default language decides (codeMail).
    expect(firstSupportedLanguage("fr", undefined)).toBeUndefined();
    expect(firstSupportedLanguage()).toBeUndefined();
  });
});

describe("rendering", () => {
  it("escapes every value and own text in HTML, and says the same in both parts", () => {
    const evil = `<img src=x onerror="alert(1)">&'`;
    const r = renderMail(
      mail(
        { text: { subject: "Hi {name}", title: "<b>{organization}</b>", text: "{name} at {organization}" } },
        { name: evil, organization: evil, link: "https://x.test/set?a=1&b=<2>" },
      ),
    );
    expect(r.html).not.toContain("<img src=x");
    expect(r.html).not.toContain("<b>");
    expect(r.html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#39;");
    expect(r.html).toContain('href="https://x.test/set?a=1&amp;b=&lt;2&gt;"');
    expect(r.subject).toBe(`Hi ${evil}`);
    expect(r.text).toContain(`<b>${evil}</b>`);
    expect(r.text).toContain("https://x.test/set?a=1&b=<2>");
  });

  it("puts the code on its own indented line of the text part when there is no link", () => {
    const r = renderMail(mail());
    expect(r.text).toContain("\n    ABCD2345\n");
    expect(r.html).toContain(">ABCD2345</span>");
    expect(r.html).not.toContain("<a href");
  });

  it("keeps a subject on one line even when a value has a line break", () => {
    expect(renderMail(mail({}, { instance: "a\r\nBcc: x@evil.test" })).subject).toBe("Reset your password for a Bcc: x@evil.test");
  });

  it("writes the button's text white on a dark primary colour and dark on a light one", () => {
    const link = { link: "https://x.test/" };
    expect(renderMail(mail({}, link)).html).toMatch(/color:#ffffff;text-decoration:none/);
    const light = mail({ branding: { primaryColor: "#ffe066", backgroundColor: "#ffffff", fontColor: "#1f2328", logoUrl: "" } }, link);
    expect(renderMail(light).html).toMatch(/color:#111111;text-decoration:none/);
  });
});
