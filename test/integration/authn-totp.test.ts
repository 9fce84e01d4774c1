// TOTP through the real server: RegisterTOTP → an otpauth:// URI whose secret an authenticator (otpauth, as the
// test's app) turns into codes; VerifyTOTPRegistration with such a code, the ±1 step window, wrong codes counted
// towards the lockout, RemoveTOTP; the secret sealed at rest; the login settings; and who may do it.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { loginClient, setLockout, setLogin, signInSession, totpCode, withRoles } from "../support/authn.js";
import { admin, call, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { type Caller, caller, createHuman, createMachine, createOrg, humanToken, sessionProof, userCallers } from "../support/users.js";

let t: TestServer;
let orgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

const userRow = (id: string) => t.server.db.prisma.user.findUniqueOrThrow({ where: { id } });
const now = () => Date.now() + clockOffset;
let clockOffset = 0;
const advance = (ms: number) => {
  clockOffset += ms;
  t.advanceClock(ms);
};

beforeAll(async () => {
  t = await startTestServer();
  ({ orgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

/** A human with its own token, and a ready TOTP registered by itself; returns the secret. */
async function withTotp(username: string, org = orgId): Promise<{ id: string; token: string; secret: string }> {
  const id = await createHuman(t, org, username);
  const token = await humanToken(t, id, { signedIn: true, at: new Date(now()) });
  const { secret } = await ok(t, "rest", token, "RegisterTOTP", { userId: id });
  await ok(t, "rest", token, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now()) });
  return { id, token, secret };
}

describe("registering TOTP", () => {
  it.each(VIAS)("registers, verifies with a generated code and lists it (%s)", async (via) => {
    const id = await createHuman(t, orgId, `totp-${via}`);
    const token = await humanToken(t, id, { signedIn: true, at: new Date(now()) });
    const reg = await ok(t, via, token, "RegisterTOTP", { userId: id });
    expect(reg.uri).toMatch(new RegExp(`^otpauth://totp/svc:totp-${via}%40default\\.localhost\\?`));
    const uri = new URL(reg.uri);
    expect(uri.searchParams.get("secret")).toBe(reg.secret);
    expect(uri.searchParams.get("issuer")).toBe("svc");
    expect(uri.searchParams.get("algorithm")).toBe("SHA1");
    expect(uri.searchParams.get("digits")).toBe("6");
    expect(uri.searchParams.get("period")).toBe("30");
    expect(reg.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(reg.details.resourceOwner).toBe(orgId);
    // Not ready yet: not a method.
    expect((await ok(t, via, token, "ListAuthenticationMethodTypes", { userId: id })).authMethodTypes).toEqual(["AUTHENTICATION_METHOD_TYPE_PASSWORD"]);

    await fails(
      t,
      via,
      token,
      "VerifyTOTPRegistration",
      { userId: id, code: "000000" === totpCode(reg.secret, now()) ? "111111" : "000000" },
      "invalid_argument",
      "Errors.User.Code.Invalid",
    );
    await ok(t, via, token, "VerifyTOTPRegistration", { userId: id, code: totpCode(reg.secret, now()) });
    expect((await ok(t, via, token, "ListAuthenticationMethodTypes", { userId: id })).authMethodTypes).toEqual([
      "AUTHENTICATION_METHOD_TYPE_PASSWORD",
      "AUTHENTICATION_METHOD_TYPE_TOTP",
    ]);
    // A right code reset the count of the wrong one.
    expect((await userRow(id)).failedOtpAttempts).toBe(0);
    // The sign-in behind `token` had a password only: now that the account has a TOTP, it binds nothing more.
    await fails(t, via, token, "RegisterTOTP", { userId: id }, "permission_denied", "Errors.Session.SignInIncomplete");
    const both = await humanToken(t, id, { signedIn: true, at: new Date(now()), factors: ["password", "totp"] });
    await fails(
      t,
      via,
      both,
      "VerifyTOTPRegistration",
      { userId: id, code: totpCode(reg.secret, now()) },
      "failed_precondition",
      "Errors.User.TOTP.AlreadyReady",
    );
    await fails(t, via, both, "RegisterTOTP", { userId: id }, "already_exists", "Errors.User.TOTP.AlreadyReady");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: { startsWith: "user.totp" } }, orderBy: { createdAt: "asc" } });
    expect(events.map((e) => e.type)).toEqual(["user.totp.added", "user.totp.verified"]);
    expect(JSON.stringify(events)).not.toContain(reg.secret);
  });

  it("keeps the secret sealed: the row holds neither the secret nor its bytes", async () => {
    const { id, secret } = await withTotp("sealed");
    const row = await t.server.db.prisma.userTotp.findUniqueOrThrow({ where: { userId: id } });
    const raw = Buffer.from(row.secretEnc);
    expect(raw.length).toBe(1 + 12 + 20 + 16);
    expect(raw.toString("latin1")).not.toContain(secret);
    const { Secret } = await import("otpauth");
    expect(raw.includes(Buffer.from(Secret.fromBase32(secret).bytes))).toBe(false);
  });

  it("a new registration replaces one not yet verified; the old secret's codes no longer work", async () => {
    const id = await createHuman(t, orgId, "replaced");
    const first = await admin(t, "RegisterTOTP", { userId: id });
    const second = await admin(t, "RegisterTOTP", { userId: id });
    expect(second.secret).not.toBe(first.secret);
    const code = totpCode(first.secret, now());
    if (code !== totpCode(second.secret, now()))
      await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code }, "invalid_argument", "Errors.User.Code.Invalid");
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(second.secret, now()) });
  });

  it("accepts the codes of one step either side and refuses older or later ones", async () => {
    const id = await createHuman(t, orgId, "window");
    const { secret } = await admin(t, "RegisterTOTP", { userId: id });
    for (const offset of [-60_000, 60_000, 90_000]) {
      const code = totpCode(secret, now() + offset);
      if ([-30_000, 0, 30_000].some((d) => totpCode(secret, now() + d) === code)) continue;
      await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code }, "invalid_argument", "Errors.User.Code.Invalid");
    }
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now() - 30_000) });
  });

  it("refuses malformed input with InvalidArgument, and machine users", async () => {
    const id = await createHuman(t, orgId, "malformed");
    await admin(t, "RegisterTOTP", { userId: id });
    for (const code of ["", "12345", "1234567", "abcdef", "12 456", "１２３４５６"]) {
      await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code }, "invalid_argument", "Errors.User.Code.Invalid");
    }
    // Malformed codes are not guesses: nothing was counted.
    expect((await userRow(id)).failedOtpAttempts).toBe(0);
    await fails(t, "connect", t.pat, "VerifyTOTPRegistration", { userId: id, code: 123456 }, "invalid_argument");
    await fails(t, "connect", t.pat, "RegisterTOTP", { userId: "" }, "invalid_argument", "Errors.User.Id.Missing");
    await fails(t, "rest", t.pat, "RegisterTOTP", { userId: "nope" }, "not_found", "Errors.User.NotFound");
    const robot = await createMachine(t, orgId, "totp-robot");
    await fails(t, "rest", t.pat, "RegisterTOTP", { userId: robot }, "failed_precondition", "Errors.User.NotHuman");
    const fresh = await createHuman(t, orgId, "no-registration");
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: fresh, code: "123456" }, "failed_precondition", "Errors.User.TOTP.NotRegistered");
    await fails(t, "rest", t.pat, "RemoveTOTP", { userId: fresh }, "not_found", "Errors.User.TOTP.NotFound");
  });

  it("removes it (RemoveTOTP), after which it is no method and can be registered anew", async () => {
    const { id } = await withTotp("remover");
    // Removing a factor takes a sign-in that satisfied the account: its password and its TOTP.
    const token = await humanToken(t, id, { signedIn: true, at: new Date(now()), factors: ["password", "totp"] });
    await ok(t, "connect", token, "RemoveTOTP", { userId: id });
    expect((await ok(t, "rest", token, "ListAuthenticationMethodTypes", { userId: id })).authMethodTypes).toEqual(["AUTHENTICATION_METHOD_TYPE_PASSWORD"]);
    await ok(t, "rest", token, "RegisterTOTP", { userId: id });
  });
});

describe("lockout", () => {
  it("locks the user after maxOtpAttempts wrong codes; a right code in between starts the count again", async () => {
    const org = await createOrg(t, "OTP Lockout");
    await setLockout(t, org, 3);
    const id = await createHuman(t, org, "guesser");
    const { secret } = await admin(t, "RegisterTOTP", { userId: id });
    const wrong = () => {
      const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(secret, now() + d)));
      let c = 100000;
      while (right.has(String(c))) c++;
      return String(c);
    };
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: wrong() }, "invalid_argument", "Errors.User.Code.Invalid");
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: wrong() }, "invalid_argument", "Errors.User.Code.Invalid");
    expect((await userRow(id)).failedOtpAttempts).toBe(2);
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now()) });
    expect((await userRow(id)).failedOtpAttempts).toBe(0);

    await ok(t, "rest", t.pat, "RemoveTOTP", { userId: id });
    const again = await admin(t, "RegisterTOTP", { userId: id });
    const wrong2 = () => {
      const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(again.secret, now() + d)));
      let c = 200000;
      while (right.has(String(c))) c++;
      return String(c);
    };
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: wrong2() }, "invalid_argument", "Errors.User.Code.Invalid");
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: wrong2() }, "invalid_argument", "Errors.User.Code.Invalid");
    // The third wrong code locks the codes for the lock period (the default: a temporary back-off, the user stays
    // ACTIVE, as for passwords): the answer says so.
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: wrong2() }, "failed_precondition", "Errors.User.Locked");
    expect(await userRow(id)).toMatchObject({ state: "ACTIVE", failedOtpAttempts: 3 });
    // Locked: even the right code is refused, without saying whether it was right.
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(again.secret, now()) }, "failed_precondition", "Errors.User.Locked");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.otp.locked" } });
    expect(events.map((e) => e.payload)).toEqual([{ reason: "lockout policy", failedOtpAttempts: 3, until: expect.any(String) }]);
    // After the period (300 s by default) the right code works, and the count starts afresh.
    advance(301_000);
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(again.secret, now()) });
    expect(await userRow(id)).toMatchObject({ failedOtpAttempts: 0, otpLockedAt: null });
  });

  it("with permanentLockout locks the user (LOCKED) until an administrator unlocks it", async () => {
    const org = await createOrg(t, "OTP Lockout Permanent");
    await admin(t, "SetLockoutSettings", { organizationId: org, settings: { maxPasswordAttempts: 10, maxOtpAttempts: 2, permanentLockout: true } });
    const id = await createHuman(t, org, "perma-guesser");
    const { secret } = await admin(t, "RegisterTOTP", { userId: id });
    const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(secret, now() + d)));
    const [w1, w2] = ["111111", "222222", "333333", "444444"].filter((c) => !right.has(c));
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: w1 }, "invalid_argument", "Errors.User.Code.Invalid");
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: w2 }, "failed_precondition", "Errors.User.Locked");
    expect(await userRow(id)).toMatchObject({ state: "LOCKED", failedOtpAttempts: 2 });
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.locked" } });
    expect(events.map((e) => e.payload)).toEqual([{ reason: "lockout policy (one-time codes)", failedOtpAttempts: 2 }]);
    advance(2 * 3_600_000);
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now()) }, "failed_precondition", "Errors.User.Locked");
    // Unlocking starts afresh.
    await ok(t, "rest", t.pat, "UnlockUser", { userId: id });
    expect(await userRow(id)).toMatchObject({ failedOtpAttempts: 0, otpLockedAt: null });
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, now()) });
  });

  it("never locks the last owner of an organization: only its codes are refused for a while", async () => {
    const org = await createOrg(t, "OTP Owner");
    await admin(t, "SetLockoutSettings", { organizationId: org, settings: { maxPasswordAttempts: 10, maxOtpAttempts: 1, permanentLockout: true } });
    const owner = await withRoles(t, org, await createHuman(t, org, "only-owner"), ["ORG_OWNER"]);
    const { secret } = await admin(t, "RegisterTOTP", { userId: owner });
    const right = new Set([-30_000, 0, 30_000].map((d) => totpCode(secret, now() + d)));
    const code = ["111111", "222222", "333333"].find((c) => !right.has(c)) as string;
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: owner, code }, "failed_precondition", "Errors.User.Locked");
    expect((await userRow(owner)).state).toBe("ACTIVE");
    await fails(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: owner, code: totpCode(secret, now()) }, "failed_precondition", "Errors.User.Locked");
    advance(16 * 60_000);
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: owner, code: totpCode(secret, now()) });
  });
});

describe("login settings", () => {
  it("refuses TOTP when the organization's second factors leave it out", async () => {
    const org = await createOrg(t, "No TOTP");
    await setLogin(t, org, { secondFactors: ["SECOND_FACTOR_TYPE_OTP_EMAIL"] });
    const id = await createHuman(t, org, "no-totp");
    await fails(t, "rest", t.pat, "RegisterTOTP", { userId: id }, "failed_precondition", "Errors.User.Factor.NotAllowed");
  });
});

describe("permissions", () => {
  it("lets the user, its manager and a login client register; hides the user from others", async () => {
    const id = await createHuman(t, orgId, "perm-target");
    await fails(t, "rest", nobody.pat, "RegisterTOTP", { userId: id }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", foreignManager.pat, "RegisterTOTP", { userId: id }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", auditor.pat, "RegisterTOTP", { userId: id }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", auditor.pat, "RemoveTOTP", { userId: id }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", nobody.pat, "ListAuthenticationMethodTypes", { userId: id }, "not_found", "Errors.User.NotFound");
    // A plain user acting on someone else.
    const other = await humanToken(t, await createHuman(t, orgId, "perm-other"));
    await fails(t, "rest", other, "RegisterTOTP", { userId: id }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", other, "VerifyTOTPRegistration", { userId: id, code: "123456" }, "not_found", "Errors.User.NotFound");
    // The auditor reads the methods.
    await ok(t, "rest", auditor.pat, "ListAuthenticationMethodTypes", { userId: id });
    await ok(t, "rest", manager.pat, "RegisterTOTP", { userId: id });
    const client = await loginClient(t, orgId, "login-ui-totp");
    const session = await sessionProof(t, id, { at: new Date(now()) });
    const reg = await ok(t, "rest", client.pat, "RegisterTOTP", { userId: id, session });
    await ok(t, "rest", client.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(reg.secret, now()), session });
    await ok(t, "rest", manager.pat, "RemoveTOTP", { userId: id });
  });

  it("an ORG_USER_MANAGER cannot register or remove an ORG_OWNER's TOTP", async () => {
    const owner = await withRoles(t, orgId, await createHuman(t, orgId, "perm-owner"), ["ORG_OWNER"]);
    await fails(t, "rest", manager.pat, "RegisterTOTP", { userId: owner }, "permission_denied", "Errors.User.MorePrivileged");
    const { secret } = await admin(t, "RegisterTOTP", { userId: owner });
    await fails(
      t,
      "rest",
      manager.pat,
      "VerifyTOTPRegistration",
      { userId: owner, code: totpCode(secret, now()) },
      "permission_denied",
      "Errors.User.MorePrivileged",
    );
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId: owner, code: totpCode(secret, now()) });
    await fails(t, "connect", manager.pat, "RemoveTOTP", { userId: owner }, "permission_denied", "Errors.User.MorePrivileged");
    const ownerA = await caller(t, orgId, "perm-org-owner", ["ORG_OWNER"]);
    await ok(t, "rest", ownerA.pat, "RemoveTOTP", { userId: owner });
  });

  it("a login client binds a factor only with the user's session presented in the request, signed in as the account requires, recently", async () => {
    for (const roles of [[], ["ORG_OWNER"]]) {
      const created = await createHuman(t, orgId, `presented-${roles.length}`);
      const user = roles.length ? await withRoles(t, orgId, created, roles) : created;
      const client = await loginClient(t, orgId, `login-ui-presented-${roles.length}`);
      const at = new Date(now());
      // Without a session (however many of the user's sessions exist, of this client or another), nothing.
      await signInSession(t, { userId: user, orgId, creatorId: client.userId, at, factors: ["password"] });
      await fails(t, "rest", client.pat, "RegisterTOTP", { userId: user }, "permission_denied", "Errors.Session.ProofRequired");
      await fails(t, "connect", client.pat, "RegisterPasskey", { userId: user }, "permission_denied", "Errors.Session.ProofRequired");
      // A presented session must be proven by its token, be the user's, and hold a recent first factor.
      const session = await sessionProof(t, user, { at });
      await fails(
        t,
        "rest",
        client.pat,
        "RegisterTOTP",
        { userId: user, session: { ...session, sessionToken: "wrong" } },
        "permission_denied",
        "Errors.Session.Token.Invalid",
      );
      const someoneElse = await sessionProof(t, await createHuman(t, orgId, `presented-other-${roles.length}`), { at });
      await fails(t, "rest", client.pat, "RegisterTOTP", { userId: user, session: someoneElse }, "permission_denied", "Errors.Session.UserMismatch");
      const stale = await sessionProof(t, user, { at: new Date(now() - 11 * 60_000) });
      await fails(t, "rest", client.pat, "RegisterTOTP", { userId: user, session: stale }, "failed_precondition", "Errors.Session.RecentProofRequired");
      const reg = await ok(t, "rest", client.pat, "RegisterTOTP", { userId: user, session });
      await ok(t, "rest", client.pat, "VerifyTOTPRegistration", { userId: user, code: totpCode(reg.secret, now()), session });
      // With a second factor now, a password alone no longer satisfies the account: no more factors, none removed.
      await fails(t, "rest", client.pat, "RegisterPasskey", { userId: user, session }, "permission_denied", "Errors.Session.SignInIncomplete");
      await fails(t, "rest", client.pat, "RemoveTOTP", { userId: user, session }, "permission_denied", "Errors.Session.SignInIncomplete");
      const both = await sessionProof(t, user, { at: new Date(now()), factors: ["password", "totp"] });
      await ok(t, "rest", client.pat, "RegisterPasskey", { userId: user, session: both });
      await ok(t, "connect", client.pat, "RemoveTOTP", { userId: user, session: both });
    }
  });

  it("the user itself binds or removes a factor only through its sign-in's session, with a recent proof", async () => {
    const id = await createHuman(t, orgId, "self-proof");
    // A token with no session behind it proves no sign-in.
    await fails(t, "rest", await humanToken(t, id), "RegisterTOTP", { userId: id }, "permission_denied", "Errors.Session.ProofRequired");
    // An access token of a sign-in that is 11 minutes old: the first factor must be proven again.
    const old = await humanToken(t, id, { signedIn: true, at: new Date(now() - 11 * 60_000) });
    await fails(t, "rest", old, "RegisterTOTP", { userId: id }, "failed_precondition", "Errors.Session.RecentProofRequired");
    const fresh = await humanToken(t, id, { signedIn: true, at: new Date(now()) });
    const reg = await ok(t, "rest", fresh, "RegisterTOTP", { userId: id });
    await ok(t, "rest", fresh, "VerifyTOTPRegistration", { userId: id, code: totpCode(reg.secret, now()) });
    // Its sign-in had a password only; the account now has a second factor, so that session no longer suffices.
    await fails(t, "rest", fresh, "RemoveTOTP", { userId: id }, "permission_denied", "Errors.Session.SignInIncomplete");
  });

  it("answers no 5xx to any of it over either transport", async () => {
    const id = await createHuman(t, orgId, "no-5xx");
    for (const via of VIAS) {
      for (const rpc of ["RegisterTOTP", "VerifyTOTPRegistration", "RemoveTOTP", "ListAuthenticationMethodTypes"] as const) {
        for (const token of [nobody.pat, auditor.pat, manager.pat, t.pat, undefined]) {
          const reply = await call(t, via, token, rpc, { userId: id, code: "1" });
          expect(reply.status).toBeLessThan(500);
        }
      }
    }
  });
});
