// Invitations (issue 26, mail templates: "verification, reset, e-mail OTP, invitation"): an administrator creates a
// user without a password and CreateInviteCode sends it a link to the hosted login's invitation page in the user's
// language, read from a real SMTP server; choosing a password there verifies the e-mail address and the password
// signs in; the link works once. Over the API: the code returned and spent by SetPassword; refused for a user who can
// sign in already; wrong guesses spend the invitation like any code (five, then it is gone), also while the user has
// no password reset code to guess against.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { loginClient } from "../support/authn.js";
import type { Machine } from "../support/fixtures.js";
import { admin, call, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { createOrg, PASSWORD } from "../support/users.js";
import { Visitor } from "../support/visitor.js";

let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let client: Machine;

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  orgId = await createOrg(t, "Invite Org");
  client = await loginClient(t, orgId, "invite-login-client");
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

/** A human user without a password (an invitation's subject). */
async function invitee(username: string, lang = "en"): Promise<string> {
  const { id } = await admin(t, "CreateUser", {
    organizationId: orgId,
    username,
    human: { profile: { givenName: "Ina", familyName: "Vited", preferredLanguage: lang }, email: { email: `${username}@example.com` } },
  });
  return id;
}

const emailVerified = async (userId: string) => (await admin(t, "GetUserByID", { userId })).user.human.email.isVerified === true;

/** Whether `password` signs the user in (a session's password check). */
async function signsIn(userId: string, password: string): Promise<boolean> {
  const s = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId } } });
  const r = await call(t, "rest", client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { password: { password } } });
  return r.code === "ok";
}

const SUBJECT = { en: "You are invited to Invite Org on svc", de: "Einladung zu Invite Org bei svc" } as const;

describe("an invitation by e-mail", () => {
  it.each(["en", "de"] as const)("in the user's language (%s): the hosted login's page sets the first password and verifies the e-mail", async (lang) => {
    const userId = await invitee(`invite-mail-${lang}`, lang);
    expect(await emailVerified(userId)).toBe(false);
    await admin(t, "CreateInviteCode", { userId, sendCode: {} });
    const mail = await smtp.next(`invite-mail-${lang}@example.com`);
    expect(mail.subject).toBe(SUBJECT[lang]);
    expect(mail.text).toContain(lang === "de" ? "innerhalb von 72 Stunden" : "within 72 hours");
    expect(typeof mail.html === "string" && mail.html).toContain(lang === "de" ? "Einladung annehmen" : "Accept the invitation");
    const link = new URL(linkFrom(mail));
    // The hosted login's invitation page (at SVC_EXTERNAL_URL; the tests' servers listen on a port of their own).
    expect([link.pathname, link.searchParams.get("userId")]).toEqual(["/ui/login/invite", userId]);

    const browser = new Visitor(t, { "accept-language": lang });
    const page = await browser.get(`${link.pathname}${link.search}`);
    expect(page.res.status).toBe(200);
    expect(page.body).toContain('name="passwordRepeat"');
    const form = { userId, code: link.searchParams.get("code") as string, password: "Invited-Passw0rd!", passwordRepeat: "Invited-Passw0rd!" };
    const done = await browser.post("/ui/login/invite", form);
    expect(done.res.status).toBe(200);
    expect(done.body).toContain(lang === "de" ? "Ihr Konto ist bereit" : "Your account is ready");
    expect(await emailVerified(userId)).toBe(true);
    expect(await signsIn(userId, "Invited-Passw0rd!")).toBe(true);
    // The link works once.
    const again = await browser.post("/ui/login/invite", { ...form, password: "Another-Passw0rd!", passwordRepeat: "Another-Passw0rd!" });
    expect(again.res.status).toBe(400);
    expect(await signsIn(userId, "Another-Passw0rd!")).toBe(false);
  });

  it("to the caller's URL template, when it gives one", async () => {
    const userId = await invitee("invite-template");
    await admin(t, "CreateInviteCode", { userId, sendCode: { urlTemplate: "https://app.example.test/welcome?u={{.UserID}}&c={{.Code}}" } });
    const link = new URL(linkFrom(await smtp.next("invite-template@example.com")));
    expect([link.origin, link.pathname, link.searchParams.get("u")]).toEqual(["https://app.example.test", "/welcome", userId]);
  });
});

describe("over the API", () => {
  it.each(VIAS)("returns the code, which SetPassword spends once, verifying the e-mail (%s)", async (via) => {
    const userId = await invitee(`invite-return-${via}`);
    const { inviteCode } = await ok(t, via, t.pat, "CreateInviteCode", { userId, returnCode: {} });
    expect(inviteCode).toMatch(/^[2-9A-HJ-NP-Z]{8}$/);
    await ok(t, via, t.pat, "SetPassword", { userId, newPassword: { password: PASSWORD }, verificationCode: inviteCode.toLowerCase() });
    expect(await emailVerified(userId)).toBe(true);
    expect(await signsIn(userId, PASSWORD)).toBe(true);
    await fails(t, via, t.pat, "SetPassword", { userId, newPassword: { password: "Second-Passw0rd!" }, verificationCode: inviteCode }, "failed_precondition");
  });

  it("is refused for a user who can sign in already: that one needs a password reset", async () => {
    const userId = await invitee("invite-set-up");
    await admin(t, "SetPassword", { userId, newPassword: { password: PASSWORD } });
    await fails(t, "rest", t.pat, "CreateInviteCode", { userId, returnCode: {} }, "failed_precondition", "Errors.User.Invite.AlreadySetUp");
  });

  it("counts wrong guesses against the invitation: after five it is gone", async () => {
    const userId = await invitee("invite-guess");
    const { inviteCode } = await ok(t, "rest", t.pat, "CreateInviteCode", { userId, returnCode: {} });
    for (let i = 0; i < 5; i++) {
      const wrong = `WRONG${String(i).padStart(3, "2")}`;
      await fails(
        t,
        "rest",
        t.pat,
        "SetPassword",
        { userId, newPassword: { password: PASSWORD }, verificationCode: wrong },
        "invalid_argument",
        "Errors.User.Code.Invalid",
      );
    }
    await fails(
      t,
      "rest",
      t.pat,
      "SetPassword",
      { userId, newPassword: { password: PASSWORD }, verificationCode: inviteCode },
      "failed_precondition",
      "Errors.User.Code.NotFound",
    );
    expect(await signsIn(userId, PASSWORD)).toBe(false);
  });
});
