// The second factors in sessions, through the real server: a login client signs users in with password and then
// checks.totp (a generated code, accepted once; lockout), checks.webAuthN after challenges.webAuthN (the software
// authenticator; wrong origin, challenge and relying party refused; counter and user verification recorded), and
// checks.otpEmail after challenges.otpEmail (the code through the SMTP sink, or returned to the login client).
// And the rule that lets a login client register a factor of a role holder during its sign-in.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { loginClient, setLockout, setLogin, totpCode, withRoles } from "../support/authn.js";
import type { Machine } from "../support/fixtures.js";
import { admin, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { codeFrom, linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { createHuman, createOrg, defaultOrgId, humanToken, PASSWORD } from "../support/users.js";
import { SoftAuthenticator } from "../support/webauthn.js";

const EXTERNAL = "https://id.example.test";
let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let client: Machine;
let clock = 0;
const now = () => Date.now() + clock;
const advance = (ms: number) => {
  clock += ms;
  t.advanceClock(ms);
};

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({ SVC_EXTERNAL_URL: EXTERNAL, SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "no-reply@example.test" });
  orgId = await defaultOrgId(t);
  client = await loginClient(t, orgId, "login-ui");
});
afterAll(async () => {
  await t.stop();
  await smtp.close();
});

/** A session of the login client for `userId` after its password. */
async function signIn(
  userId: string,
  extra: Record<string, unknown> = {},
): Promise<{ sessionId: string; sessionToken: string; challenges?: Record<string, unknown> }> {
  return ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId }, password: { password: PASSWORD } }, ...extra });
}

const session = async (sessionId: string) => (await ok(t, "rest", client.pat, "GetSession", { sessionId })).session;
const userRow = (id: string) => t.server.db.prisma.user.findUniqueOrThrow({ where: { id } });

async function withTotp(username: string, org = orgId): Promise<{ id: string; secret: string }> {
  const id = await createHuman(t, org, username);
  const { secret } = await admin(t, "RegisterTOTP", { userId: id });
  await admin(t, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now()) });
  return { id, secret };
}

describe("checks.totp", () => {
  it.each(VIAS)("checks a generated code once (%s)", async (via) => {
    const { id, secret } = await withTotp(`s-totp-${via}`);
    const s = await signIn(id);
    // The registration spent the current step: the next one's code signs in.
    advance(30_000);
    const code = totpCode(secret, now());
    const set = await ok(t, via, client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code } } });
    const factors = (await session(s.sessionId)).factors;
    expect(Date.parse(factors.totp.verifiedAt)).toBeGreaterThan(now() - 60_000);
    // The same code again, in this session or another: refused as wrong.
    await fails(
      t,
      via,
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: set.sessionToken, checks: { totp: { code } } },
      "invalid_argument",
      "Errors.User.Code.Invalid",
    );
    const other = await signIn(id, { checks: { user: { userId: id }, password: { password: PASSWORD }, totp: { code } } }).catch((e: Error) => e);
    expect(String(other)).toContain("Errors.User.Code.Invalid");
    expect((await userRow(id)).failedOtpAttempts).toBe(2);
    advance(30_000);
    await ok(t, via, client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: set.sessionToken, checks: { totp: { code: totpCode(secret, now()) } } });
    expect((await userRow(id)).failedOtpAttempts).toBe(0);
  });

  it("locks the codes after maxOtpAttempts wrong ones; the session cannot go on", async () => {
    const org = await createOrg(t, "Session Lockout");
    await setLockout(t, org, 2);
    const { id, secret } = await withTotp("s-locked", org);
    const s = await signIn(id);
    const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(secret, now() + d)));
    const wrong = ["123456", "234567", "345678", "456789"].filter((c) => !right.has(c));
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code: wrong[0] } } },
      "invalid_argument",
      "Errors.User.Code.Invalid",
    );
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code: wrong[1] } } },
      "failed_precondition",
      "Errors.User.Locked",
    );
    // The codes are locked for the lock period; the user stays ACTIVE (a temporary back-off, as for passwords).
    expect(await userRow(id)).toMatchObject({ state: "ACTIVE", failedOtpAttempts: 2 });
    advance(30_000);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code: totpCode(secret, now()) } } },
      "failed_precondition",
      "Errors.User.Locked",
    );
  });

  it("is refused when the login settings leave TOTP out, or the user has none", async () => {
    const org = await createOrg(t, "Session No TOTP");
    const { id, secret } = await withTotp("s-not-allowed", org);
    await setLogin(t, org, { secondFactors: ["SECOND_FACTOR_TYPE_OTP_EMAIL"] });
    const s = await signIn(id);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code: totpCode(secret, now()) } } },
      "failed_precondition",
      "Errors.User.Factor.NotAllowed",
    );
    const plain = await createHuman(t, orgId, "s-no-totp");
    const p = await signIn(plain);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: p.sessionId, sessionToken: p.sessionToken, checks: { totp: { code: "123456" } } },
      "failed_precondition",
      "Errors.User.TOTP.NotReady",
    );
  });
});

describe("checks.webAuthN", () => {
  async function withPasskey(username: string, key: SoftAuthenticator, domain?: string): Promise<string> {
    const id = await createHuman(t, orgId, username);
    const start = await admin(t, "RegisterPasskey", { userId: id, ...(domain ? { domain } : {}) });
    await admin(t, "VerifyPasskeyRegistration", {
      userId: id,
      passkeyId: start.passkeyId,
      publicKeyCredential: key.register(start.publicKeyCredentialCreationOptions),
      passkeyName: "key",
    });
    return id;
  }
  const challenge = (userVerificationRequirement = "USER_VERIFICATION_REQUIREMENT_REQUIRED", domain = "id.example.test") => ({
    challenges: { webAuthN: { domain, userVerificationRequirement } },
  });

  it.each(VIAS)("signs in with the software authenticator; counter and user verification recorded (%s)", async (via) => {
    const key = new SoftAuthenticator();
    const id = await withPasskey(`s-passkey-${via}`, key);
    const created = await ok(t, via, client.pat, "CreateSession", { checks: { user: { userId: id } }, ...challenge() });
    const options = created.challenges.webAuthN.publicKeyCredentialRequestOptions;
    expect(options).toMatchObject({ rpId: "id.example.test", userVerification: "required", allowCredentials: [{ id: key.id, type: "public-key" }] });
    const assertion = key.authenticate(options);
    const set = await ok(t, via, client.pat, "SetSession", {
      sessionId: created.sessionId,
      sessionToken: created.sessionToken,
      checks: { webAuthN: { credentialAssertionData: assertion } },
    });
    const factors = (await session(created.sessionId)).factors;
    expect(factors.webAuthN).toEqual({ verifiedAt: expect.any(String), userVerified: true });
    const row = await t.server.db.prisma.passkey.findFirstOrThrow({ where: { userId: id } });
    expect(row.counter).toBe(2n);
    expect(row.lastUsedAt).not.toBeNull();
    // The challenge was spent: the same assertion again has nothing to answer.
    await fails(
      t,
      via,
      client.pat,
      "SetSession",
      { sessionId: created.sessionId, sessionToken: set.sessionToken, checks: { webAuthN: { credentialAssertionData: assertion } } },
      "failed_precondition",
      "Errors.Session.WebAuthN.NoChallenge",
    );
    const passkey = (await ok(t, via, client.pat, "ListPasskeys", { userId: id })).result[0];
    expect(passkey.lastUsedDate).toEqual(expect.any(String));
  });

  it("refuses a wrong origin, another challenge, another relying party and a replayed counter, saying only that it failed", async () => {
    const key = new SoftAuthenticator();
    const id = await withPasskey("s-passkey-refused", key);
    const created = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: id } }, ...challenge() });
    const options = created.challenges.webAuthN.publicKeyCredentialRequestOptions;
    const attempt = (credentialAssertionData: unknown) =>
      fails(
        t,
        "rest",
        client.pat,
        "SetSession",
        { sessionId: created.sessionId, sessionToken: created.sessionToken, checks: { webAuthN: { credentialAssertionData } } },
        "invalid_argument",
        "Errors.Session.WebAuthN.Invalid",
      );
    for (const o of [
      { origin: "https://evil.example.test" },
      { challenge: Buffer.from("other").toString("base64url") },
      { rpId: "example.test", origin: EXTERNAL },
    ]) {
      const reply = await attempt(key.authenticate(options, o));
      expect(reply.body.message).toBe("the passkey check failed");
    }
    // Another authenticator's signature under this credential id.
    const forged = new SoftAuthenticator().authenticate(options);
    await attempt({ ...forged, id: key.id, rawId: key.id });
    await attempt({});
    await attempt({ id: key.id, response: "junk" });
    // Required user verification missing.
    await attempt(key.authenticate(options, { userVerified: false }));
    // A counter that does not move forward (a cloned authenticator).
    const first = key.authenticate(options);
    const clone = Object.create(key) as SoftAuthenticator;
    await ok(t, "rest", client.pat, "SetSession", {
      sessionId: created.sessionId,
      sessionToken: created.sessionToken,
      checks: { webAuthN: { credentialAssertionData: first } },
    });
    const again = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: id } }, ...challenge() });
    (clone as unknown as { counter: number }).counter = 0;
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      {
        sessionId: again.sessionId,
        sessionToken: again.sessionToken,
        checks: { webAuthN: { credentialAssertionData: clone.authenticate(again.challenges.webAuthN.publicKeyCredentialRequestOptions) } },
      },
      "invalid_argument",
      "Errors.Session.WebAuthN.Invalid",
    );
  });

  it("records a passkey that did not verify the user; refuses domains without passkeys and expired challenges", async () => {
    const key = new SoftAuthenticator();
    const id = await withPasskey("s-passkey-uv", key);
    const created = await ok(t, "rest", client.pat, "CreateSession", {
      checks: { user: { userId: id } },
      ...challenge("USER_VERIFICATION_REQUIREMENT_PREFERRED"),
    });
    const assertion = key.authenticate(created.challenges.webAuthN.publicKeyCredentialRequestOptions, { userVerified: false });
    await ok(t, "rest", client.pat, "SetSession", {
      sessionId: created.sessionId,
      sessionToken: created.sessionToken,
      checks: { webAuthN: { credentialAssertionData: assertion } },
    });
    expect((await session(created.sessionId)).factors.webAuthN.userVerified).toBeUndefined();
    await fails(
      t,
      "rest",
      client.pat,
      "CreateSession",
      { checks: { user: { userId: id } }, ...challenge(undefined, "other.example.test") },
      "failed_precondition",
      "Errors.User.Passkey.NoneReady",
    );
    await fails(
      t,
      "rest",
      client.pat,
      "CreateSession",
      { checks: { user: { userId: id } }, ...challenge(undefined, "bad domain") },
      "invalid_argument",
      "Errors.User.Passkey.DomainInvalid",
    );
    const late = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: id } }, ...challenge() });
    advance(6 * 60_000);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      {
        sessionId: late.sessionId,
        sessionToken: late.sessionToken,
        checks: { webAuthN: { credentialAssertionData: key.authenticate(late.challenges.webAuthN.publicKeyCredentialRequestOptions) } },
      },
      "failed_precondition",
      "Errors.Session.WebAuthN.ChallengeExpired",
    );
  });
});

describe("checks.otpEmail", () => {
  async function withOtpEmail(username: string): Promise<string> {
    const id = await createHuman(t, orgId, username);
    await admin(t, "UpdateUser", { userId: id, human: { email: { email: `${username}@example.com`, isVerified: true } } });
    await admin(t, "AddOTPEmail", { userId: id });
    return id;
  }

  it.each(VIAS)("sends a code through SMTP and checks it once (%s)", async (via) => {
    const id = await withOtpEmail(`s-mail-${via}`);
    const s = await signIn(id, {
      challenges: { otpEmail: { sendCode: { urlTemplate: "https://login.example.test/otp?session={{.SessionID}}&code={{.Code}}" } } },
    });
    const mail = await smtp.next(`s-mail-${via}@example.com`);
    expect(mail.subject).toBe("Your sign-in code for svc");
    const link = new URL(linkFrom(mail));
    expect(link.searchParams.get("session")).toBe(s.sessionId);
    const code = link.searchParams.get("code") as string;
    expect(code).toMatch(/^\d{6}$/);
    const row = await t.server.db.prisma.session.findUniqueOrThrow({ where: { id: s.sessionId } });
    expect(Buffer.from(row.otpEmailCodeHash as Uint8Array).toString("latin1")).not.toContain(code);
    const set = await ok(t, via, client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { otpEmail: { code } } });
    expect((await session(s.sessionId)).factors.otpEmail.verifiedAt).toEqual(expect.any(String));
    await fails(
      t,
      via,
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: set.sessionToken, checks: { otpEmail: { code } } },
      "failed_precondition",
      "Errors.Session.OTPEmail.NoChallenge",
    );
  });

  it("returns the code to a login client, never to the user itself; wrong and expired codes refused", async () => {
    const id = await withOtpEmail("s-mail-return");
    const s = await signIn(id, { challenges: { otpEmail: { returnCode: {} } } });
    const code = (s.challenges as { otpEmail: string }).otpEmail;
    expect(code).toMatch(/^\d{6}$/);
    const wrong = code === "000000" ? "000001" : "000000";
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { otpEmail: { code: wrong } } },
      "invalid_argument",
      "Errors.User.Code.Invalid",
    );
    await ok(t, "rest", client.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { otpEmail: { code } } });

    // A user's own token creates no sessions at all (only a login client does), so it never gets a code returned.
    const token = await humanToken(t, id);
    await fails(
      t,
      "rest",
      token,
      "CreateSession",
      { checks: { user: { userId: id }, password: { password: PASSWORD } }, challenges: { otpEmail: { returnCode: {} } } },
      "permission_denied",
      "Errors.Permission.Denied",
    );
    // The code sent to the user expires.
    const own = await ok(t, "rest", client.pat, "CreateSession", {
      checks: { user: { userId: id }, password: { password: PASSWORD } },
      challenges: { otpEmail: { sendCode: {} } },
    });
    const sent = codeFrom(await smtp.next("s-mail-return@example.com"));
    advance(6 * 60_000);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: own.sessionId, sessionToken: own.sessionToken, checks: { otpEmail: { code: sent } } },
      "failed_precondition",
      "Errors.User.Code.Expired",
    );
  });

  it("needs the factor set up and allowed", async () => {
    const plain = await createHuman(t, orgId, "s-mail-none");
    await fails(
      t,
      "rest",
      client.pat,
      "CreateSession",
      { checks: { user: { userId: plain } }, challenges: { otpEmail: { returnCode: {} } } },
      "failed_precondition",
      "Errors.User.OTPEmail.NotFound",
    );
    const s = await signIn(plain);
    await fails(
      t,
      "rest",
      client.pat,
      "SetSession",
      { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { otpEmail: { code: "123456" } } },
      "failed_precondition",
      "Errors.Session.OTPEmail.NoChallenge",
    );
    const org = await createOrg(t, "Session No Mail");
    await setLogin(t, org, { secondFactors: ["SECOND_FACTOR_TYPE_OTP"] });
    const other = await createHuman(t, org, "s-mail-org");
    await fails(
      t,
      "rest",
      client.pat,
      "CreateSession",
      { checks: { user: { userId: other } }, challenges: { otpEmail: { returnCode: {} } } },
      "failed_precondition",
      "Errors.User.Factor.NotAllowed",
    );
  });
});

describe("registering during sign-in", () => {
  it("a login client binds a factor only with the session it presents, after that session's first factor, and only recently", async () => {
    const owner = await withRoles(t, orgId, await createHuman(t, orgId, "s-owner"), ["ORG_OWNER"]);
    await fails(t, "rest", client.pat, "RegisterTOTP", { userId: owner }, "permission_denied", "Errors.Session.ProofRequired");
    // A session with the user check only proves nothing.
    const made = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: owner } } });
    const named = { sessionId: made.sessionId, sessionToken: made.sessionToken };
    await fails(t, "rest", client.pat, "RegisterTOTP", { userId: owner, session: named }, "permission_denied", "Errors.Session.SignInIncomplete");
    // Another session's password does not count for the one presented.
    const signedIn = await signIn(owner);
    const s = { sessionId: signedIn.sessionId, sessionToken: signedIn.sessionToken };
    await fails(t, "rest", client.pat, "RegisterTOTP", { userId: owner, session: named }, "permission_denied", "Errors.Session.SignInIncomplete");
    const reg = await ok(t, "rest", client.pat, "RegisterTOTP", { userId: owner, session: s });
    await ok(t, "rest", client.pat, "VerifyTOTPRegistration", { userId: owner, code: totpCode(reg.secret, now()), session: s });
    // With TOTP set up, a passkey needs the second factor in the session too.
    await fails(t, "rest", client.pat, "RegisterPasskey", { userId: owner, session: s }, "permission_denied", "Errors.Session.SignInIncomplete");
    advance(30_000);
    const both = await ok(t, "rest", client.pat, "SetSession", {
      sessionId: s.sessionId,
      sessionToken: s.sessionToken,
      checks: { totp: { code: totpCode(reg.secret, now()) } },
    });
    const proof = { sessionId: s.sessionId, sessionToken: both.sessionToken };
    // The token SetSession replaced proves nothing any more.
    await fails(t, "rest", client.pat, "RegisterPasskey", { userId: owner, session: s }, "permission_denied", "Errors.Session.Token.Invalid");
    await ok(t, "rest", client.pat, "RegisterPasskey", { userId: owner, session: proof });
    advance(11 * 60_000);
    await fails(t, "rest", client.pat, "RegisterPasskey", { userId: owner, session: proof }, "failed_precondition", "Errors.Session.RecentProofRequired");
  });
});
