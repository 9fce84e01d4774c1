// The mails as a user receives them, read from a real SMTP server (the in-process sink): each mail (e-mail
// verification, password reset, e-mail OTP) in English and in German, as text and HTML parts that carry the same
// code or link, in the organization's branding, a user's name escaped in HTML; the language chosen from the user's
// preferred language, else the hosted login page's, else the language settings' default; and the instance's own texts through MailTextService (set, used
// by the next mail, reset; invalid texts refused with the field; IAM_OWNER only).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ParsedMail } from "mailparser";
import { loginClient, setLogin } from "../support/authn.js";
import { type Machine, project } from "../support/fixtures.js";
import { authorizeGet, authRequestOf, oidcApp } from "../support/oidc.js";
import { admin, call, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { codeFrom, linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { createOrg, defaultOrgId, PASSWORD, userCallers } from "../support/users.js";
import { Visitor } from "../support/visitor.js";

let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let domain: string;
let client: Machine;
let orgOwner: Machine;

const ORG = "Acme & Söhne";
const PRIMARY = "#8a2be2";
const LOGO = "https://cdn.example.test/acme-logo.png";
const EVIL = `Eve <script>alert("x")</script>`;

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  orgId = await createOrg(t, ORG);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  await admin(t, "SetBrandingSettings", {
    organizationId: orgId,
    settings: { primaryColor: PRIMARY, backgroundColor: "#ffffff", warnColor: "#d93025", fontColor: "#1f2328", logoUrl: LOGO },
  });
  client = await loginClient(t, orgId, "mail-login-client");
  const { manager } = await userCallers(t);
  orgOwner = manager as Machine;
  await admin(t, "AddOrganizationMember", { organizationId: orgId, userId: orgOwner.userId, roles: ["ORG_OWNER"] });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

const LANGS = ["en", "de"] as const;
type Lang = (typeof LANGS)[number];

async function human(username: string, o: { lang?: string; verified?: boolean; displayName?: string } = {}): Promise<string> {
  const { id } = await admin(t, "CreateUser", {
    organizationId: orgId,
    username,
    human: {
      profile: { givenName: "Eve", familyName: "Muster", displayName: o.displayName ?? EVIL, ...(o.lang ? { preferredLanguage: o.lang } : {}) },
      email: { email: `${username}@example.com`, ...(o.verified ? { isVerified: true } : {}) },
      password: { password: PASSWORD },
    },
  });
  return id;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** What every mail shows: both parts, the value in both, the branding in HTML, the name escaped there. */
function expectBranded(mail: ParsedMail, lang: Lang, value: string): { text: string; html: string } {
  const text = mail.text ?? "";
  const html = typeof mail.html === "string" ? mail.html : "";
  expect(html).not.toBe("");
  expect(mail.headers.get("content-language")).toBe(lang);
  expect(html).toContain(`<html lang="${lang}">`);
  expect(text).toContain(value);
  expect(html).toContain(esc(value));
  expect(html).toContain(PRIMARY);
  expect(html).toContain(`src="${LOGO}"`);
  expect(html).toContain(`alt="${esc(ORG)}"`);
  expect(text).toContain(ORG);
  // The name is shown as text in HTML, never as markup; the plain-text part has it as it is.
  expect(html).not.toContain("<script");
  expect(html).toContain(esc(EVIL));
  expect(text).toContain(EVIL);
  return { text, html };
}

const SUBJECTS: Record<string, Record<Lang, string>> = {
  verify: { en: "Verify your e-mail address for svc", de: "Bestätigen Sie Ihre E-Mail-Adresse für svc" },
  reset: { en: "Reset your password for svc", de: "Setzen Sie Ihr Passwort für svc zurück" },
  otp: { en: "Your sign-in code for svc", de: "Ihr Anmeldecode für svc" },
};

describe("each mail in the user's language", () => {
  it.each(LANGS)("e-mail verification code (%s): the code in both parts, and it verifies", async (lang) => {
    const id = await human(`mt-verify-${lang}`, { lang: lang === "de" ? "de-CH" : "en" });
    await admin(t, "SendEmailCode", { userId: id, sendCode: {} });
    const mail = await smtp.next(`mt-verify-${lang}@example.com`);
    expect(mail.subject).toBe(SUBJECTS.verify?.[lang]);
    const code = codeFrom(mail);
    const { text, html } = expectBranded(mail, lang, code);
    expect(text).toContain(lang === "de" ? "Ihr Code, gültig für 1 Stunde:" : "Your code, valid for 1 hour:");
    expect(html).toContain(lang === "de" ? "E-Mail-Adresse bestätigen" : "Verify your e-mail address");
    await admin(t, "VerifyEmail", { userId: id, verificationCode: code });
  });

  it.each(LANGS)("password reset link (%s): the link in both parts, the button's href escaped", async (lang) => {
    const id = await human(`mt-reset-${lang}`, { lang });
    await admin(t, "PasswordReset", {
      userId: id,
      sendLink: { urlTemplate: "https://login.example.test/set?user={{.UserID}}&code={{.Code}}" },
    });
    const mail = await smtp.next(`mt-reset-${lang}@example.com`);
    expect(mail.subject).toBe(SUBJECTS.reset?.[lang]);
    const link = linkFrom(mail);
    expect(new URL(link).searchParams.get("user")).toBe(id);
    const { text, html } = expectBranded(mail, lang, link);
    expect(html).toContain(`href="${esc(link)}"`);
    expect(text).toContain(lang === "de" ? "innerhalb von 1 Stunde" : "within 1 hour");
    expect(html).toContain(lang === "de" ? "Neues Passwort wählen" : "Choose a new password");
    const code = new URL(link).searchParams.get("code") as string;
    await admin(t, "SetPassword", { userId: id, newPassword: { password: "Reset-Passw0rd!" }, verificationCode: code });
  });

  it.each(LANGS)("e-mail OTP of a sign-in (%s): the code in both parts, and it checks", async (lang) => {
    const id = await human(`mt-otp-${lang}`, { lang, verified: true });
    await admin(t, "AddOTPEmail", { userId: id });
    const s = await ok(t, "rest", client.pat, "CreateSession", {
      checks: { user: { userId: id }, password: { password: PASSWORD } },
      challenges: { otpEmail: { sendCode: {} } },
    });
    const mail = await smtp.next(`mt-otp-${lang}@example.com`);
    expect(mail.subject).toBe(SUBJECTS.otp?.[lang]);
    const code = codeFrom(mail);
    expect(code).toMatch(/^\d{6}$/);
    const { text } = expectBranded(mail, lang, code);
    expect(text).toContain(lang === "de" ? "gültig für 5 Minuten" : "valid for 5 minutes");
    await ok(t, "rest", client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { otpEmail: { code } } });
  });

  it("without a preferred language: the hosted login page's (Accept-Language); the user's own language wins over it", async () => {
    await human("mt-page-none");
    await human("mt-page-en", { lang: "en" });
    const browser = new Visitor(t, { "accept-language": "de-DE,de;q=0.9,en;q=0.5" });
    for (const name of ["mt-page-none", "mt-page-en"]) {
      await browser.get("/ui/login/password/reset");
      const { res } = await browser.post("/ui/login/password/reset", { loginName: `${name}@${domain}` });
      expect(res.status).toBe(200);
    }
    const german = await smtp.next("mt-page-none@example.com");
    expect(german.subject).toBe(SUBJECTS.reset?.de);
    expect(german.text).toContain("Öffnen Sie diesen Link innerhalb von 1 Stunde:");
    expect(new URL(linkFrom(german)).pathname).toBe("/ui/login/password/set");
    const english = await smtp.next("mt-page-en@example.com");
    expect(english.subject).toBe(SUBJECTS.reset?.en);
  });

  it("the auth request's ui_locales before the browser's Accept-Language", async () => {
    await human("mt-locales");
    const app = await oidcApp(t, await project(t, orgId, "mail-rp"), "mail-rp");
    const authRequest = authRequestOf(
      await authorizeGet(t, {
        client_id: app.clientId,
        redirect_uri: "https://rp.example.com/cb",
        response_type: "code",
        scope: "openid",
        ui_locales: "fr de",
      }),
    );
    const browser = new Visitor(t, { "accept-language": "en" });
    await browser.get(`/ui/login/password/reset?authRequest=${authRequest}`);
    const { res } = await browser.post("/ui/login/password/reset", { authRequest, loginName: `mt-locales@${domain}` });
    expect(res.status).toBe(200);
    const mail = await smtp.next("mt-locales@example.com");
    expect(mail.subject).toBe(SUBJECTS.reset?.de);
    expect(new URL(linkFrom(mail)).searchParams.get("authRequest")).toBe(authRequest);
  });

  it("a registration through the hosted login in German: a German verification mail, and German is the user's language", async () => {
    await setLogin(t, await defaultOrgId(t), { allowRegister: true });
    const browser = new Visitor(t, { "accept-language": "de" });
    await browser.get("/ui/login/register");
    const { res } = await browser.post("/ui/login/register", {
      givenName: "Grete",
      familyName: "Neu",
      email: "mt-register@example.com",
      password: "Registered-Passw0rd!",
      passwordRepeat: "Registered-Passw0rd!",
    });
    expect(res.status).toBe(303);
    const mail = await smtp.next("mt-register@example.com");
    expect(mail.subject).toBe(SUBJECTS.verify?.de);
    expect(new URL(linkFrom(mail)).pathname).toBe("/ui/login/verify-email");
    const user = await t.server.db.prisma.user.findFirstOrThrow({ where: { email: "mt-register@example.com" } });
    expect(user.preferredLanguage).toBe("de");
    // A later mail through the API (no page language) is German too.
    await admin(t, "PasswordReset", { userId: user.id, sendLink: {} });
    expect((await smtp.next("mt-register@example.com")).subject).toBe(SUBJECTS.reset?.de);
  });

  it("without either: English", async () => {
    const id = await human("mt-plain");
    await admin(t, "SendEmailCode", { userId: id, sendCode: {} });
    const mail = await smtp.next("mt-plain@example.com");
    expect(mail.subject).toBe(SUBJECTS.verify?.en);
  });

  it("the language settings' default: the organization's, else the instance's, for mails and for pages the browser does not decide", async () => {
    const id = await human("mt-default");
    const verifyMail = async () => {
      await admin(t, "SendEmailCode", { userId: id, sendCode: {} });
      return (await smtp.next("mt-default@example.com")).subject;
    };
    await admin(t, "SetLanguageSettings", { settings: { defaultLanguage: "de" } });
    try {
      expect(await verifyMail()).toBe(SUBJECTS.verify?.de);
      // The organization's override decides for its users; after a reset the instance's applies again.
      await admin(t, "SetLanguageSettings", { organizationId: orgId, settings: { defaultLanguage: "en-GB" } });
      expect((await admin(t, "GetLanguageSettings", { organizationId: orgId })).settings.defaultLanguage).toBe("en");
      expect(await verifyMail()).toBe(SUBJECTS.verify?.en);
      await admin(t, "ResetLanguageSettings", { organizationId: orgId });
      expect(await verifyMail()).toBe(SUBJECTS.verify?.de);
      // A browser asking only for languages svc has no texts for gets the default, and so does the mail it triggers;
      // one asking for English gets English.
      const french = new Visitor(t, { "accept-language": "fr-FR,fr;q=0.9,it;q=0.5" });
      expect((await french.get("/ui/login/password/reset")).body).toContain('<html lang="de">');
      expect((await french.post("/ui/login/password/reset", { loginName: `mt-default@${domain}` })).res.status).toBe(200);
      expect((await smtp.next("mt-default@example.com")).subject).toBe(SUBJECTS.reset?.de);
      expect((await new Visitor(t, { "accept-language": "en" }).get("/ui/login/password/reset")).body).toContain('<html lang="en">');
      // Only languages svc has texts for.
      await fails(t, "rest", t.pat, "SetLanguageSettings", { settings: { defaultLanguage: "fr" } }, "invalid_argument", "Errors.Settings.Language.Unsupported");
    } finally {
      await admin(t, "SetLanguageSettings", { settings: { defaultLanguage: "en" } });
    }
  });
});

/** The `field` of an InvalidArgument answer (REST: google.rpc.ErrorInfo's metadata). */
async function refusedField(req: Record<string, unknown>, reason: string): Promise<string | undefined> {
  const reply = await fails(t, "rest", t.pat, "SetMailText", req as never, "invalid_argument", reason);
  return reply.body.details?.[0]?.metadata?.field;
}

describe("the instance's own texts (MailTextService)", () => {
  const own = {
    subject: "Willkommen bei {organization}, {name}",
    title: "Fast geschafft, {name}",
    text: "Bitte bestätigen Sie {loginName}.\n\nDer Code gilt {expiry}: {code}",
  };

  it.each(VIAS)("Get shows the defaults, Set replaces them for the next mail of that language only, Reset restores them (%s)", async (via) => {
    const req = { type: "verify_email", language: "de" };
    const before = await ok(t, via, t.pat, "GetMailText", req);
    expect(before.isDefault).toBe(true);
    expect(before.text.subject).toBe("Bestätigen Sie Ihre E-Mail-Adresse für {instance}");
    expect(before.variables).toEqual(["code", "link", "name", "loginName", "organization", "instance", "expiry"]);

    const set = await ok(t, via, t.pat, "SetMailText", { ...req, text: own });
    expect(set.details.resourceOwner).toEqual(expect.any(String));
    const after = await ok(t, via, t.pat, "GetMailText", req);
    // proto3 JSON leaves a false out.
    expect(after.isDefault ?? false).toBe(false);
    expect(after.text).toEqual(own);

    const de = await human(`mt-own-de-${via}`, { lang: "de" });
    await admin(t, "SendEmailCode", { userId: de, sendCode: {} });
    const mail = await smtp.next(`mt-own-de-${via}@example.com`);
    expect(mail.subject).toBe(`Willkommen bei ${ORG}, ${EVIL}`);
    const code = codeFrom(mail);
    const { text, html } = expectBranded(mail, "de", code);
    expect(text).toContain(`Fast geschafft, ${EVIL}`);
    expect(text).toContain(`Der Code gilt 1 Stunde: ${code}`);
    expect(html).toContain(`Fast geschafft, ${esc(EVIL)}</h1>`);
    // Two paragraphs in HTML from the blank line.
    expect(html).toContain(`Bitte bestätigen Sie mt-own-de-${via}@${domain}.</p><p`);

    // English is untouched.
    const en = await human(`mt-own-en-${via}`, { lang: "en" });
    await admin(t, "SendEmailCode", { userId: en, sendCode: {} });
    expect((await smtp.next(`mt-own-en-${via}@example.com`)).subject).toBe(SUBJECTS.verify?.en);

    const events = await t.server.db.prisma.event.findMany({ where: { type: { startsWith: "settings.mail_text." } }, orderBy: { createdAt: "asc" } });
    expect(events.at(-1)).toMatchObject({ type: "settings.mail_text.set", payload: { type: "verify_email", language: "de", ...own } });

    await ok(t, via, t.pat, "ResetMailText", req);
    expect((await ok(t, via, t.pat, "GetMailText", req)).isDefault).toBe(true);
    const again = await human(`mt-own-again-${via}`, { lang: "de" });
    await admin(t, "SendEmailCode", { userId: again, sendCode: {} });
    expect((await smtp.next(`mt-own-again-${via}@example.com`)).subject).toBe(SUBJECTS.verify?.de);
    await fails(t, via, t.pat, "ResetMailText", req, "not_found", "Errors.MailText.NotFound");
    const reset = await t.server.db.prisma.event.findFirst({ where: { type: "settings.mail_text.reset" }, orderBy: { createdAt: "desc" } });
    expect(reset?.payload).toEqual({ type: "verify_email", language: "de" });
  });

  it("refuses unparseable texts and unknown variables, naming the field; unknown types and languages", async () => {
    const base = { type: "password_reset", language: "en", text: { subject: "Reset", title: "Reset", text: "Go: {link}" } };
    expect(await refusedField({ ...base, text: { ...base.text, subject: "Hi {password}" } }, "Errors.MailText.UnknownVariable")).toBe("text.subject");
    expect(await refusedField({ ...base, text: { ...base.text, text: "Code: {code" } }, "Errors.MailText.Unparseable")).toBe("text.text");
    expect(await refusedField({ ...base, text: { ...base.text, title: "{n, plural, one {x} other {y}}" } }, "Errors.MailText.UnknownVariable")).toBe(
      "text.title",
    );
    expect(await refusedField({ ...base, text: { ...base.text, title: "" } }, "Errors.MailText.Missing")).toBe("text.title");
    expect(await refusedField({ ...base, text: { ...base.text, subject: "a\nb" } }, "Errors.MailText.LineBreak")).toBe("text.subject");
    expect(await refusedField({ ...base, type: "welcome" }, "Errors.MailText.TypeInvalid")).toBe("type");
    expect(await refusedField({ ...base, language: "fr" }, "Errors.MailText.LanguageInvalid")).toBe("language");
    await fails(t, "connect", t.pat, "SetMailText", { type: "password_reset", language: "en" }, "invalid_argument", "Errors.MailText.Missing");
    await fails(t, "connect", t.pat, "GetMailText", { type: "", language: "en" }, "invalid_argument", "Errors.MailText.TypeInvalid");
    // Nothing was stored.
    expect((await admin(t, "GetMailText", { type: "password_reset", language: "en" })).isDefault).toBe(true);
  });

  it.each(VIAS)("is the instance's: an organization's owner can neither read nor change it (%s)", async (via) => {
    const req = { type: "otp_email", language: "en" };
    await fails(t, via, orgOwner.pat, "GetMailText", req, "permission_denied");
    await fails(t, via, orgOwner.pat, "SetMailText", { ...req, text: { subject: "x", title: "y", text: "{code}" } }, "permission_denied");
    await fails(t, via, orgOwner.pat, "ResetMailText", req, "permission_denied");
    await fails(t, via, client.pat, "SetMailText", { ...req, text: { subject: "x", title: "y", text: "{code}" } }, "permission_denied");
    const anonymous = await call(t, via, undefined, "GetMailText", req);
    expect(anonymous.code).toBe("unauthenticated");
  });
});
