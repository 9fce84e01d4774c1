// Issue 23, findings 7, 8 and 9: the lockout policy under attack.
// 8: concurrent guesses cannot outrun the lock (each attempt is reserved in the database before its hash is
//    verified, so at most maxPasswordAttempts verifications ever run), and a right password on a locked account
//    gets exactly the answer of a wrong one.
// 9: by default the lock is a temporary back-off (doubling per further lock period), not a permanent denial of service
//    anybody can cause; a completed e-mail password reset lifts it; the permanent lock stays an option.
// 7: the decoy check for an unknown login name counts against the same limits as a real one (per name, per address).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { loginClient, totpCode } from "../support/authn.js";
import { createHuman, createOrg, defaultOrgId, type Machine, PASSWORD } from "../support/fixtures.js";
import { admin, call, fails, ok, type Reply, type Via } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";

const WRONG = "Wrong-Passw0rd!";
const NEW_PASSWORD = "Brand-New-Passw0rd!";
const MINUTE = 60_000;

const byPassword = (loginName: string, password: string) => ({ checks: { user: { loginName }, password: { password } } });

/** An error answer without what legitimately differs per request (none of svc's error bodies carry a request id). */
const answer = (r: Reply) => ({ status: r.status, code: r.code, reason: r.reason, body: r.body });

describe("the lockout policy (no rate limits, to see the lock alone)", () => {
  let t: TestServer;
  let login: Machine;

  beforeAll(async () => {
    t = await startTestServer({ SVC_RATE_LIMIT_CLIENT_FAILURES: "0", SVC_RATE_LIMIT_ADDRESS_FAILURES: "0" });
    login = await loginClient(t, await defaultOrgId(t), "lockout-login-ui");
  }, 120_000);
  afterAll(() => t?.stop());

  async function userIn(orgName: string, username: string, lockout: Record<string, unknown>): Promise<{ id: string; loginName: string; orgId: string }> {
    const orgId = await createOrg(t, orgName);
    await admin(t, "SetLockoutSettings", { organizationId: orgId, settings: { maxOtpAttempts: "5", ...lockout } });
    const id = await createHuman(t, orgId, username);
    const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
    return { id, loginName: `${username}@${domain}`, orgId };
  }

  const failedChecks = (userId: string) => t.server.db.prisma.event.count({ where: { aggregateId: userId, type: "user.password.check.failed" } });

  it("finding 8: 40 concurrent wrong passwords run at most maxPasswordAttempts verifications", async () => {
    const u = await userIn("Race Org", "race-rita", { maxPasswordAttempts: "10" });
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(t, i % 2 ? "connect" : "rest", login.pat, "CreateSession", byPassword(u.loginName, `${WRONG}${i}`))),
    );
    expect(replies.every((r) => r.status >= 400 && r.status < 500)).toBe(true);
    expect(await failedChecks(u.id)).toBeLessThanOrEqual(10);
    expect(replies.filter((r) => r.reason === "Errors.User.Password.Invalid").length).toBeLessThanOrEqual(10);
    // Locked now: the right password gets exactly the answer of a wrong one, over both protocols.
    for (const via of ["rest", "connect"] as Via[]) {
      const wrong = await call(t, via, login.pat, "CreateSession", byPassword(u.loginName, WRONG));
      const right = await call(t, via, login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
      expect(wrong.reason).toBe("Errors.User.Locked");
      expect(answer(right)).toEqual(answer(wrong));
    }
    // And none of those attempts ran a verification.
    expect(await failedChecks(u.id)).toBeLessThanOrEqual(10);
  });

  it("a burst of right passwords of one account beyond maxPasswordAttempts all sign in (the reservations in flight are no lock)", async () => {
    const u = await userIn("Burst Org", "burst-bea", { maxPasswordAttempts: "3" });
    // Twice the limit at once: the second half waits for the first (one round of checks), on a loaded machine too.
    const replies = await Promise.all(Array.from({ length: 6 }, () => call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD))));
    expect(replies.map((r) => r.reason ?? r.status)).toEqual(Array.from({ length: 6 }, () => 200));
    expect(await failedChecks(u.id)).toBe(0);
  });

  // The lock that a reservation reaching the limit starts is pending until its check's password proves right or wrong;
  // a check refused meanwhile waits for that outcome however long the verification takes (another replica, a loaded
  // machine), and is refused at once when the lock holds. The row is set as a check in flight elsewhere leaves it.
  const pendingLock = (userId: string, agoMs: number) =>
    t.server.db.prisma.user.update({
      where: { id: userId },
      data: { failedPasswordAttempts: 3, lockedAt: new Date(Date.now() - agoMs), passwordLockPending: true },
    });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("a check refused by a pending lock waits for the check in flight; that one's right password lets it in", async () => {
    const u = await userIn("Pending Org", "pending-pia", { maxPasswordAttempts: "3" });
    await pendingLock(u.id, 5_000);
    const started = Date.now();
    const signIn = call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
    await sleep(600);
    // The check in flight signs in: its session's insert starts the count again.
    await t.server.db.prisma.user.update({ where: { id: u.id }, data: { failedPasswordAttempts: 0, lockedAt: null, passwordLockPending: false } });
    const reply = await signIn;
    expect(reply.reason ?? reply.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(await failedChecks(u.id)).toBe(0);
  });

  it("a check waiting on a pending lock is refused, unverified, once the check in flight proves wrong", async () => {
    const u = await userIn("Pending Wrong Org", "pending-pete", { maxPasswordAttempts: "3" });
    await pendingLock(u.id, 0);
    const signIn = call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
    await sleep(400);
    // The check in flight had a wrong password: the lock holds (recordFailedPasswordCheck confirms it).
    await t.server.db.prisma.user.update({ where: { id: u.id }, data: { passwordLockPending: false } });
    expect((await signIn).reason).toBe("Errors.User.Locked");
    expect(await failedChecks(u.id)).toBe(0);
    // A confirmed lock refuses at once.
    const started = Date.now();
    expect((await call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD))).reason).toBe("Errors.User.Locked");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("a pending lock whose check was abandoned (older than any verification) holds", async () => {
    const u = await userIn("Pending Stale Org", "pending-paul", { maxPasswordAttempts: "3" });
    await pendingLock(u.id, 20_000);
    const started = Date.now();
    expect((await call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD))).reason).toBe("Errors.User.Locked");
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("a wrong password reaching the limit confirms its lock", async () => {
    const u = await userIn("Confirm Org", "confirm-carl", { maxPasswordAttempts: "2" });
    for (const password of [WRONG, WRONG]) await call(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, password));
    const row = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: u.id } });
    expect(row).toMatchObject({ failedPasswordAttempts: 2, passwordLockPending: false });
    expect(row.lockedAt).not.toBeNull();
  });

  it("finding 8: SetSession's password check on a session is bound by the same reservation", async () => {
    const u = await userIn("Race Set Org", "race-sam", { maxPasswordAttempts: "5" });
    const sessions = await Promise.all(
      Array.from({ length: 20 }, () => ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: u.loginName } } })),
    );
    const replies = await Promise.all(
      sessions.map((s, i) =>
        call(t, "connect", login.pat, "SetSession", {
          sessionId: s.sessionId,
          sessionToken: s.sessionToken,
          checks: { password: { password: `${WRONG}${i}` } },
        }),
      ),
    );
    expect(replies.every((r) => r.status >= 400 && r.status < 500)).toBe(true);
    expect(await failedChecks(u.id)).toBeLessThanOrEqual(5);
  });

  it("finding 9: the default lock is temporary and doubles per further lock period; the user stays ACTIVE", async () => {
    const u = await userIn("Backoff Org", "backoff-ben", { maxPasswordAttempts: "3" });
    for (let i = 0; i < 2; i++)
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "invalid_argument", "Errors.User.Password.Invalid");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD), "failed_precondition", "Errors.User.Locked");
    // Not a state anybody can put the user in: tokens and sessions are kept, only passwords wait.
    expect((await admin(t, "GetUserByID", { userId: u.id })).user.state).toBe("USER_STATE_ACTIVE");
    let offset = 0;
    const advance = (ms: number) => {
      offset += ms;
      t.advanceClock(ms);
    };
    try {
      // The first period (5 minutes by default) ends: one more try; wrong, it starts a period twice as long.
      advance(5 * MINUTE + 1000);
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
      advance(5 * MINUTE + 1000);
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD), "failed_precondition", "Errors.User.Locked");
      advance(5 * MINUTE + 1000);
      await ok(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
      // The right password starts everything again: the full count of attempts before the next lock.
      for (let i = 0; i < 2; i++)
        await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "invalid_argument", "Errors.User.Password.Invalid");
    } finally {
      t.advanceClock(-offset);
    }
  });

  it("finding 9: the lock periods follow the settings (first period, longest period)", async () => {
    const u = await userIn("Backoff Settings Org", "backoff-bea", { maxPasswordAttempts: "1", lockoutDurationSeconds: "60", maxLockoutDurationSeconds: "90" });
    const got = await admin(t, "GetLockoutSettings", { organizationId: u.orgId });
    expect(got.settings).toMatchObject({ maxPasswordAttempts: "1", lockoutDurationSeconds: "60", maxLockoutDurationSeconds: "90" });
    expect(got.settings.permanentLockout ?? false).toBe(false);
    let offset = 0;
    const advance = (ms: number) => {
      offset += ms;
      t.advanceClock(ms);
    };
    try {
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
      advance(61_000);
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
      // 120 s would be the double; the longest period is 90 s.
      advance(91_000);
      await ok(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
    } finally {
      t.advanceClock(-offset);
    }
  });

  it("finding 9: a completed e-mail password reset lifts the lock (temporary and, from the policy, permanent)", async () => {
    for (const permanentLockout of [false, true]) {
      const u = await userIn(`Reset Unlocks Org ${permanentLockout}`, `reset-rosa-${permanentLockout}`, { maxPasswordAttempts: "2", permanentLockout });
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "invalid_argument", "Errors.User.Password.Invalid");
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
      const state = (await admin(t, "GetUserByID", { userId: u.id })).user.state;
      expect(state).toBe(permanentLockout ? "USER_STATE_LOCKED" : "USER_STATE_ACTIVE");
      // The login client asks for the reset (as the hosted login's form does); the code proves the mailbox.
      const { verificationCode } = await ok(t, "rest", login.pat, "PasswordReset", { userId: u.id, returnCode: {} });
      await ok(t, "connect", login.pat, "SetPassword", { userId: u.id, newPassword: { password: NEW_PASSWORD }, verificationCode });
      expect((await admin(t, "GetUserByID", { userId: u.id })).user.state).toBe("USER_STATE_ACTIVE");
      await ok(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, NEW_PASSWORD));
      const unlocked = await t.server.db.prisma.event.count({ where: { aggregateId: u.id, type: "user.unlocked" } });
      expect(unlocked).toBe(permanentLockout ? 1 : 0);
    }
  });

  it("finding 9: a user an administrator locked stays locked through a password reset", async () => {
    const u = await userIn("Admin Lock Org", "admin-locked-al", { maxPasswordAttempts: "3" });
    await admin(t, "LockUser", { userId: u.id });
    const { verificationCode } = await admin(t, "PasswordReset", { userId: u.id, returnCode: {} });
    await ok(t, "rest", login.pat, "SetPassword", { userId: u.id, newPassword: { password: NEW_PASSWORD }, verificationCode });
    expect((await admin(t, "GetUserByID", { userId: u.id })).user.state).toBe("USER_STATE_LOCKED");
  });

  it("finding 9: permanent lockout stays available for administrators who want it", async () => {
    const u = await userIn("Permanent Org", "perm-paul", { maxPasswordAttempts: "2", permanentLockout: true });
    await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "invalid_argument", "Errors.User.Password.Invalid");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, WRONG), "failed_precondition", "Errors.User.Locked");
    t.advanceClock(48 * 3_600_000);
    try {
      await fails(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD), "failed_precondition", "Errors.User.Locked");
      expect((await admin(t, "GetUserByID", { userId: u.id })).user.state).toBe("USER_STATE_LOCKED");
    } finally {
      t.advanceClock(-48 * 3_600_000);
    }
  });

  // The same race class for one-time codes: each check is reserved before the code is verified.
  const failedCodes = (userId: string) => t.server.db.prisma.event.count({ where: { aggregateId: userId, type: "user.otp.check.failed" } });
  const serverNow = () => t.server.tokens.clock().getTime();
  const wrongCodes = (secret: string, n: number) => {
    const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(secret, serverNow() + d)));
    return Array.from({ length: n + 3 }, (_, i) => String(100_000 + i * 7919))
      .filter((c) => !right.has(c))
      .slice(0, n);
  };

  it("one-time codes: 30 concurrent wrong codes run at most maxOtpAttempts checks", async () => {
    const u = await userIn("OTP Race Org", "otp-race-olga", { maxOtpAttempts: "5" });
    const { secret } = await admin(t, "RegisterTOTP", { userId: u.id });
    const replies = await Promise.all(
      wrongCodes(secret, 30).map((code, i) => call(t, i % 2 ? "connect" : "rest", t.pat, "VerifyTOTPRegistration", { userId: u.id, code })),
    );
    expect(replies.every((r) => r.status >= 400 && r.status < 500)).toBe(true);
    expect(await failedCodes(u.id)).toBeLessThanOrEqual(5);
    expect(replies.filter((r) => r.reason === "Errors.User.Code.Invalid").length).toBeLessThanOrEqual(5);
    // Locked now: the right code gets the lock's answer, and no code is verified.
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: u.id, code: totpCode(secret, serverNow()) }, "failed_precondition", "Errors.User.Locked");
    expect(await failedCodes(u.id)).toBeLessThanOrEqual(5);
  });

  it("one-time codes: the codes' lock is the second factor's own; a right password does not end it", async () => {
    const u = await userIn("OTP Own Lock Org", "otp-own-otto", { maxOtpAttempts: "2" });
    const { secret } = await admin(t, "RegisterTOTP", { userId: u.id });
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: u.id, code: totpCode(secret, serverNow()) });
    const first = await ok(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
    const [w1, w2] = wrongCodes(secret, 2);
    const check = (s: { sessionId: string; sessionToken: string }, code: string) =>
      call(t, "rest", login.pat, "SetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken, checks: { totp: { code } } });
    expect((await check(first, w1 as string)).reason).toBe("Errors.User.Code.Invalid");
    expect((await check(first, w2 as string)).reason).toBe("Errors.User.Locked");
    // The password still works (the user is not locked out of everything by whoever knows it) ...
    const second = await ok(t, "rest", login.pat, "CreateSession", byPassword(u.loginName, PASSWORD));
    expect((await admin(t, "GetUserByID", { userId: u.id })).user.state).toBe("USER_STATE_ACTIVE");
    // ... and does not lift the codes' lock: the right code is refused on the new session too.
    expect((await check(second, totpCode(secret, serverNow()))).reason).toBe("Errors.User.Locked");
  });
});

describe("finding 7: the decoy check of an unknown login name counts like a failed check", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ SVC_RATE_LIMIT_CLIENT_FAILURES: "3", SVC_RATE_LIMIT_ADDRESS_FAILURES: "8" });
  }, 120_000);
  afterAll(() => t?.stop());

  /** The hosted login's password form for a login name without a session (what an unknown name gets). */
  async function postPassword(loginName: string): Promise<Response> {
    const page = await fetch(`${t.url}/ui/login/login`);
    const cookie = (page.headers.getSetCookie()[0] ?? "").split(";", 1)[0] as string;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
    return fetch(`${t.url}/ui/login/password`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ _csrf: csrf, loginName, password: WRONG }),
    });
  }

  it("per login name: past the limit the answer is 429 and no hash is computed", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await postPassword("nobody-at-all@example.com")).status);
    expect(statuses.slice(0, 3)).toEqual([400, 400, 400]);
    expect(statuses.slice(4)).toEqual([429]);
    const refused = await postPassword("NOBODY-at-all@example.com");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("per address: many unknown names from one address end in 429", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await postPassword(`ghost-${i}@example.com`)).status);
    expect(statuses).toContain(429);
  });
});

describe("finding 9 through the hosted login: the page's advice (reset the password) unlocks", () => {
  let t: TestServer;
  let smtp: SmtpSink;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    t = await startTestServer({
      SVC_SMTP_URL: smtp.url,
      SVC_SMTP_FROM: "svc <no-reply@example.com>",
      SVC_RATE_LIMIT_CLIENT_FAILURES: "0",
      SVC_RATE_LIMIT_ADDRESS_FAILURES: "0",
    });
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
    await smtp?.close();
  });

  /** A form post as a browser sends it: a page first (cookie and CSRF token), then the form. */
  async function post(path: string, form: Record<string, string>, from = "/ui/login/login"): Promise<Response> {
    const page = await fetch(from.startsWith("http") ? from : `${t.url}${from}`);
    const cookie = (page.headers.getSetCookie()[0] ?? "").split(";", 1)[0] as string;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
    return fetch(`${t.url}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ _csrf: csrf, ...form }),
    });
  }

  it("a user the policy locked for good (permanentLockout) signs in again after the e-mail reset", async () => {
    const orgId = await createOrg(t, "Hosted Reset Org");
    await admin(t, "SetLockoutSettings", { organizationId: orgId, settings: { maxPasswordAttempts: "2", maxOtpAttempts: "5", permanentLockout: true } });
    const userId = await createHuman(t, orgId, "hosted-hana");
    const loginName = `hosted-hana@${(await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain}`;
    for (let i = 0; i < 2; i++) expect((await post("/ui/login/password", { loginName, password: WRONG })).status).toBe(400);
    const locked = await post("/ui/login/password", { loginName, password: PASSWORD });
    expect(locked.status).toBe(400);
    expect(await locked.text()).toContain("Reset your password");
    expect((await admin(t, "GetUserByID", { userId })).user.state).toBe("USER_STATE_LOCKED");

    expect((await post("/ui/login/password/reset", { loginName })).status).toBe(200);
    const link = new URL(linkFrom(await smtp.next("hosted-hana@example.com")));
    const set = await post(
      "/ui/login/password/set",
      { userId: link.searchParams.get("userId") ?? "", code: link.searchParams.get("code") ?? "", password: NEW_PASSWORD, passwordRepeat: NEW_PASSWORD },
      link.toString().replace(/^https?:\/\/[^/]+/, t.url),
    );
    expect(set.status).toBe(200);
    expect((await admin(t, "GetUserByID", { userId })).user.state).toBe("USER_STATE_ACTIVE");
    const signedIn = await post("/ui/login/password", { loginName, password: NEW_PASSWORD });
    expect(signedIn.status).toBe(303);
  });
});
