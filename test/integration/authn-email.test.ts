// E-mail through a real SMTP server (an in-process smtp-server sink): e-mail verification codes, password reset
// links and codes with SetPassword's verification_code, e-mail OTP as a factor; codes returned instead of sent, and
// to whom; what happens without a mail server or when it fails.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { loginClient, setLogin, withRoles } from "../support/authn.js";
import { admin, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { codeFrom, linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { type Caller, createHuman, createOrg, humanToken, PASSWORD, userCallers } from "../support/users.js";

let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;
const NEW_PASSWORD = "Reset-Passw0rd!";

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  ({ orgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(async () => {
  await t.stop();
  await smtp.close();
});

const email = (username: string) => `${username}@example.com`;
const userRow = (id: string) => t.server.db.prisma.user.findUniqueOrThrow({ where: { id } });

describe("e-mail verification", () => {
  it.each(VIAS)("sends a code to the address; VerifyEmail with it verifies the address once (%s)", async (via) => {
    const id = await createHuman(t, orgId, `verify-${via}`);
    const token = await humanToken(t, id);
    const sent = await ok(t, via, token, "SendEmailCode", { userId: id, sendCode: {} });
    expect(sent.verificationCode).toBeUndefined();
    const mail = await smtp.next(email(`verify-${via}`));
    expect(mail.from?.text).toBe('"svc" <no-reply@example.test>');
    expect(mail.subject).toBe("Verify your e-mail address for svc");
    const code = codeFrom(mail);
    expect(code).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
    // Only its hash is stored.
    const row = await t.server.db.prisma.userCode.findUniqueOrThrow({ where: { userId_kind: { userId: id, kind: "email_verification" } } });
    expect(Buffer.from(row.codeHash).toString("latin1")).not.toContain(code);
    await fails(t, via, token, "VerifyEmail", { userId: id, verificationCode: "WRONG234" }, "invalid_argument", "Errors.User.Code.Invalid");
    // Typed in lower case, it is the same code.
    await ok(t, via, token, "VerifyEmail", { userId: id, verificationCode: code.toLowerCase() });
    expect((await userRow(id)).emailVerified).toBe(true);
    const user = await ok(t, via, token, "GetUserByID", { userId: id });
    expect(user.user.human.email).toEqual({ email: email(`verify-${via}`), isVerified: true });
    await fails(t, via, token, "VerifyEmail", { userId: id, verificationCode: code }, "failed_precondition", "Errors.User.Code.NotFound");
    await fails(t, via, token, "SendEmailCode", { userId: id, sendCode: {} }, "failed_precondition", "Errors.User.Email.AlreadyVerified");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: { startsWith: "user.email" } }, orderBy: { createdAt: "asc" } });
    expect(events.map((e) => e.type)).toEqual(["user.email.code.added", "user.email.verified"]);
    expect(JSON.stringify(events)).not.toContain(code);
  });

  it("puts the code into the caller's link template", async () => {
    const id = await createHuman(t, orgId, "verify-link");
    await admin(t, "SendEmailCode", {
      userId: id,
      sendCode: { urlTemplate: "https://login.example.test/verify?user={{.UserID}}&code={{.Code}}&name={{.LoginName}}" },
    });
    const link = new URL(linkFrom(await smtp.next(email("verify-link"))));
    expect(link.searchParams.get("user")).toBe(id);
    expect(link.searchParams.get("name")).toBe("verify-link@default.localhost");
    await admin(t, "VerifyEmail", { userId: id, verificationCode: link.searchParams.get("code") });
    for (const urlTemplate of [
      "javascript:alert({{.Code}})",
      "/relative?c={{.Code}}",
      "https://x.test/{{.Secret}}",
      "https://user:pw@x.test/{{.Code}}",
      `https://x.test/${"a".repeat(2048)}`,
    ]) {
      await fails(
        t,
        "rest",
        t.pat,
        "SendEmailCode",
        { userId: await createHuman(t, orgId, `tpl-${smtp.messages.length}-${urlTemplate.length}`), sendCode: { urlTemplate } },
        "invalid_argument",
        "Errors.User.Code.UrlTemplateInvalid",
      );
    }
  });

  it("a code is for the address it was sent to, expires after an hour, and goes after five wrong guesses", async () => {
    const id = await createHuman(t, orgId, "verify-rules");
    await admin(t, "SendEmailCode", { userId: id });
    const first = codeFrom(await smtp.next(email("verify-rules")));
    await admin(t, "UpdateUser", { userId: id, human: { email: { email: "verify-rules-new@example.com" } } });
    await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: first }, "failed_precondition", "Errors.User.Email.Changed");
    expect((await userRow(id)).emailVerified).toBe(false);

    await admin(t, "SendEmailCode", { userId: id });
    const second = codeFrom(await smtp.next("verify-rules-new@example.com"));
    t.advanceClock(61 * 60_000);
    await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: second }, "failed_precondition", "Errors.User.Code.Expired");

    await admin(t, "SendEmailCode", { userId: id });
    const third = codeFrom(await smtp.next("verify-rules-new@example.com"));
    for (let i = 0; i < 5; i++)
      await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: `WRONG${i}23` }, "invalid_argument", "Errors.User.Code.Invalid");
    await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: third }, "failed_precondition", "Errors.User.Code.NotFound");
    await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: "" }, "invalid_argument", "Errors.User.Code.Missing");
    await fails(t, "rest", t.pat, "VerifyEmail", { userId: id, verificationCode: "x".repeat(10_000) }, "invalid_argument", "Errors.User.Code.Invalid");
  });
});

describe("returning codes instead of sending them", () => {
  it("never to the user itself; to a login client or an administrator who could change the account", async () => {
    const id = await createHuman(t, orgId, "returned");
    const token = await humanToken(t, id);
    await fails(t, "rest", token, "SendEmailCode", { userId: id, returnCode: {} }, "permission_denied", "Errors.User.Code.ReturnDenied");
    await fails(t, "rest", token, "PasswordReset", { userId: id, returnCode: {} }, "permission_denied", "Errors.User.Code.ReturnDenied");
    const client = await loginClient(t, orgId, "login-ui-email");
    const { verificationCode } = await ok(t, "rest", client.pat, "SendEmailCode", { userId: id, returnCode: {} });
    expect(verificationCode).toMatch(/^[2-9A-Z]{8}$/);
    await ok(t, "rest", client.pat, "VerifyEmail", { userId: id, verificationCode });
    const reset = await ok(t, "connect", manager.pat, "PasswordReset", { userId: id, returnCode: {} });
    expect(reset.verificationCode).toMatch(/^[2-9A-Z]{8}$/);

    // Taking the reset code of an owner would be taking the account over.
    const owner = await withRoles(t, orgId, await createHuman(t, orgId, "returned-owner"), ["ORG_OWNER"]);
    await fails(t, "rest", client.pat, "PasswordReset", { userId: owner, returnCode: {} }, "permission_denied", "Errors.User.MorePrivileged");
    await fails(t, "rest", manager.pat, "PasswordReset", { userId: owner, returnCode: {} }, "permission_denied", "Errors.User.MorePrivileged");
    await fails(t, "rest", manager.pat, "SendEmailCode", { userId: owner, returnCode: {} }, "permission_denied", "Errors.User.MorePrivileged");
    // Sent to the owner's own address it is fine.
    await ok(t, "rest", client.pat, "PasswordReset", { userId: owner, sendLink: {} });
    await smtp.next(email("returned-owner"));
    expect((await admin(t, "PasswordReset", { userId: owner, returnCode: {} })).verificationCode).toBeDefined();
  });

  it("denies outsiders and the auditor", async () => {
    const id = await createHuman(t, orgId, "email-perms");
    for (const rpc of ["SendEmailCode", "PasswordReset", "VerifyEmail", "AddOTPEmail", "RemoveOTPEmail"] as const) {
      const req = rpc === "VerifyEmail" ? { userId: id, verificationCode: "ABCDEFGH" } : { userId: id };
      await fails(t, "rest", nobody.pat, rpc, req, "not_found", "Errors.User.NotFound");
      await fails(t, "rest", foreignManager.pat, rpc, req, "not_found", "Errors.User.NotFound");
      await fails(t, "rest", auditor.pat, rpc, req, "permission_denied", "Errors.Permission.Denied");
    }
    const plain = await humanToken(t, await createHuman(t, orgId, "email-plain"));
    await fails(t, "rest", plain, "PasswordReset", { userId: id }, "not_found", "Errors.User.NotFound");
    await fails(
      t,
      "rest",
      plain,
      "SetPassword",
      { userId: id, newPassword: { password: NEW_PASSWORD }, verificationCode: "ABCDEFGH" },
      "not_found",
      "Errors.User.NotFound",
    );
  });
});

describe("password reset", () => {
  it.each(VIAS)("sends a link; SetPassword with its code sets the password, once (%s)", async (via) => {
    const username = `reset-${via}`;
    const id = await createHuman(t, orgId, username);
    const client = await loginClient(t, orgId, `login-ui-reset-${via}`);
    await ok(t, via, client.pat, "PasswordReset", {
      userId: id,
      sendLink: { urlTemplate: "https://login.example.test/password?userID={{.UserID}}&code={{.Code}}" },
    });
    const mail = await smtp.next(email(username));
    expect(mail.subject).toBe("Reset your password for svc");
    expect(mail.text).toContain("within 1 hour");
    const code = new URL(linkFrom(mail)).searchParams.get("code") as string;
    const set = (verificationCode: string, password = NEW_PASSWORD) => ({ userId: id, newPassword: { password }, verificationCode }) as Record<string, unknown>;
    await fails(t, via, client.pat, "SetPassword", set("WRONG234"), "invalid_argument", "Errors.User.Code.Invalid");
    // A password the policy refuses leaves the code usable.
    await fails(t, via, client.pat, "SetPassword", set(code, "weak"), "invalid_argument", "Errors.User.Password.Complexity");
    await ok(t, via, client.pat, "SetPassword", set(code));
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.password.changed" } });
    expect(events.map((e) => e.payload)).toEqual([{ changeRequired: false, verifiedBy: "verificationCode" }]);
    await fails(t, via, client.pat, "SetPassword", set(code, `${NEW_PASSWORD}2`), "failed_precondition", "Errors.User.Code.NotFound");
    // The user proves the new password.
    const token = await humanToken(t, id);
    await ok(t, via, token, "SetPassword", { userId: id, newPassword: { password: `${NEW_PASSWORD}3` }, currentPassword: NEW_PASSWORD });
  });

  it("sends the code itself without a template; the user may use it; it expires after an hour", async () => {
    const id = await createHuman(t, orgId, "reset-code");
    const token = await humanToken(t, id);
    await ok(t, "rest", token, "PasswordReset", { userId: id });
    const code = codeFrom(await smtp.next(email("reset-code")));
    await ok(t, "rest", token, "SetPassword", { userId: id, newPassword: { password: NEW_PASSWORD }, verificationCode: code });
    await ok(t, "rest", token, "PasswordReset", { userId: id, sendLink: {} });
    const late = codeFrom(await smtp.next(email("reset-code")));
    t.advanceClock(61 * 60_000);
    await fails(
      t,
      "rest",
      token,
      "SetPassword",
      { userId: id, newPassword: { password: `${NEW_PASSWORD}x` }, verificationCode: late },
      "failed_precondition",
      "Errors.User.Code.Expired",
    );
    // A new code replaces the old one.
    await ok(t, "rest", token, "PasswordReset", { userId: id });
    const a = codeFrom(await smtp.next(email("reset-code")));
    await ok(t, "rest", token, "PasswordReset", { userId: id });
    const b = codeFrom(await smtp.next(email("reset-code")));
    if (a !== b) {
      await fails(
        t,
        "rest",
        token,
        "SetPassword",
        { userId: id, newPassword: { password: `${NEW_PASSWORD}y` }, verificationCode: a },
        "invalid_argument",
        "Errors.User.Code.Invalid",
      );
    }
    await ok(t, "rest", token, "SetPassword", { userId: id, newPassword: { password: `${NEW_PASSWORD}y` }, verificationCode: b });
  });

  it("with no code requested: NotFound; without a new password: InvalidArgument", async () => {
    const id = await createHuman(t, orgId, "reset-none");
    await fails(
      t,
      "rest",
      t.pat,
      "SetPassword",
      { userId: id, newPassword: { password: NEW_PASSWORD }, verificationCode: "ABCDEFGH" },
      "failed_precondition",
      "Errors.User.Code.NotFound",
    );
    await fails(t, "rest", t.pat, "SetPassword", { userId: id, verificationCode: "ABCDEFGH" }, "invalid_argument", "Errors.User.Password.Missing");
  });
});

describe("password history", () => {
  it("refuses the last N passwords (the current one included) and keeps at most 24 old hashes", async () => {
    const org = await createOrg(t, "History");
    await admin(t, "SetPasswordComplexitySettings", {
      organizationId: org,
      settings: { minLength: 8, requiresUppercase: true, requiresLowercase: true, requiresNumber: true, requiresSymbol: true, historyCount: 3 },
    });
    const id = await createHuman(t, org, "history");
    const token = await humanToken(t, id);
    const pw = (n: number) => `History-Passw0rd-${n}!`;
    let current = PASSWORD;
    const change = async (next: string) => {
      await ok(t, "rest", token, "SetPassword", { userId: id, newPassword: { password: next }, currentPassword: current });
      current = next;
    };
    await change(pw(1));
    await change(pw(2));
    // Current (2) and the two before it (1, the initial one) are refused, by the user and by an administrator.
    for (const again of [pw(2), pw(1), PASSWORD]) {
      await fails(
        t,
        "rest",
        token,
        "SetPassword",
        { userId: id, newPassword: { password: again }, currentPassword: current },
        "invalid_argument",
        "Errors.User.Password.InHistory",
      );
      await fails(t, "rest", t.pat, "SetPassword", { userId: id, newPassword: { password: again } }, "invalid_argument", "Errors.User.Password.InHistory");
    }
    await change(pw(3));
    // The initial password is now the fourth: allowed again.
    await change(PASSWORD);
    const { verificationCode } = await admin(t, "PasswordReset", { userId: id, returnCode: {} });
    await fails(
      t,
      "rest",
      t.pat,
      "SetPassword",
      { userId: id, newPassword: { password: pw(3) }, verificationCode },
      "invalid_argument",
      "Errors.User.Password.InHistory",
    );
    expect(await t.server.db.prisma.passwordHistory.count({ where: { userId: id } })).toBe(4);
    for (let i = 10; i < 32; i++) await ok(t, "rest", t.pat, "SetPassword", { userId: id, newPassword: { password: pw(i) } });
    expect(await t.server.db.prisma.passwordHistory.count({ where: { userId: id } })).toBe(24);
  });
});

describe("e-mail OTP", () => {
  it("needs a verified address; is a method once added; is removed", async () => {
    const id = await createHuman(t, orgId, "otp-email");
    const token = await humanToken(t, id, { signedIn: true });
    await fails(t, "rest", token, "AddOTPEmail", { userId: id }, "failed_precondition", "Errors.User.Email.NotVerified");
    await ok(t, "rest", token, "SendEmailCode", { userId: id });
    await ok(t, "rest", token, "VerifyEmail", { userId: id, verificationCode: codeFrom(await smtp.next(email("otp-email"))) });
    await ok(t, "connect", token, "AddOTPEmail", { userId: id });
    expect((await ok(t, "rest", token, "ListAuthenticationMethodTypes", { userId: id })).authMethodTypes).toEqual([
      "AUTHENTICATION_METHOD_TYPE_PASSWORD",
      "AUTHENTICATION_METHOD_TYPE_OTP_EMAIL",
    ]);
    // Now a second factor of the account: the password-only sign-in behind `token` no longer changes factors.
    await fails(t, "rest", token, "RemoveOTPEmail", { userId: id }, "permission_denied", "Errors.Session.SignInIncomplete");
    const both = await humanToken(t, id, { signedIn: true, factors: ["password", "otpEmail"] });
    await fails(t, "rest", both, "AddOTPEmail", { userId: id }, "already_exists", "Errors.User.OTPEmail.AlreadyAdded");
    await ok(t, "rest", both, "RemoveOTPEmail", { userId: id });
    await fails(t, "rest", both, "RemoveOTPEmail", { userId: id }, "not_found", "Errors.User.OTPEmail.NotFound");
  });

  it("follows the login settings and who may change an account", async () => {
    const org = await createOrg(t, "No Email OTP");
    await setLogin(t, org, { secondFactors: ["SECOND_FACTOR_TYPE_OTP"] });
    const id = await createHuman(t, org, "no-otp-email");
    await admin(t, "UpdateUser", { userId: id, human: { email: { email: email("no-otp-email"), isVerified: true } } });
    await fails(t, "rest", t.pat, "AddOTPEmail", { userId: id }, "failed_precondition", "Errors.User.Factor.NotAllowed");

    const owner = await withRoles(t, orgId, await createHuman(t, orgId, "otp-owner"), ["ORG_OWNER"]);
    await admin(t, "UpdateUser", { userId: owner, human: { email: { email: email("otp-owner"), isVerified: true } } });
    await fails(t, "rest", manager.pat, "AddOTPEmail", { userId: owner }, "permission_denied", "Errors.User.MorePrivileged");
    await admin(t, "AddOTPEmail", { userId: owner });
    await fails(t, "rest", manager.pat, "RemoveOTPEmail", { userId: owner }, "permission_denied", "Errors.User.MorePrivileged");
  });
});

describe("the mail server", () => {
  it("without SVC_SMTP_URL nothing is sent: FailedPrecondition, and returned codes still work", async () => {
    const bare = await startTestServer();
    try {
      const id = (
        await ok(bare, "rest", bare.pat, "CreateUser", {
          organizationId: (await ok(bare, "rest", bare.pat, "GetInstance")).instance.defaultOrganizationId,
          username: "bare",
          human: { profile: { givenName: "B", familyName: "C" }, email: { email: "bare@example.com" } },
        })
      ).id;
      for (const rpc of ["SendEmailCode", "PasswordReset"] as const) {
        await fails(bare, "rest", bare.pat, rpc, { userId: id }, "failed_precondition", "Errors.Smtp.NotConfigured");
        expect((await ok(bare, "rest", bare.pat, rpc, { userId: id, returnCode: {} })).verificationCode).toBeDefined();
      }
    } finally {
      await bare.stop();
    }
  });

  it("a mail server that cannot be reached is Unavailable, not a 500", async () => {
    const id = await createHuman(t, orgId, "smtp-down");
    await smtp.close();
    await fails(t, "rest", t.pat, "SendEmailCode", { userId: id }, "unavailable", undefined);
    const reply = await fails(t, "connect", t.pat, "PasswordReset", { userId: id }, "unavailable", "Errors.Smtp.SendFailed");
    expect(reply.status).toBe(503);
  });
});
