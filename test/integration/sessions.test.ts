// SessionService through the real server: a login client (IAM_LOGIN_CLIENT) signs users in with user and password
// checks over REST and Connect; session tokens are replaced on every change; the caller rules; the states and
// settings a check enforces (lockout, password expiry, deactivated users and organizations, login settings).
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { purgeExpiredTokens } from "../../src/domain/oauth/tokens.js";
import { type Machine, machine } from "../support/fixtures.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { createHuman, createMachine, createOrg, defaultOrgId, humanToken, PASSWORD } from "../support/users.js";

let t: TestServer;
let orgId: string;
let domain: string;
let login: Machine;
let aliceId: string;

async function loginClient(name: string): Promise<Machine> {
  const m = await machine(t, orgId, name);
  await admin(t, "AddInstanceMember", { userId: m.userId, roles: ["IAM_LOGIN_CLIENT"] });
  return m;
}

const byPassword = (loginName: string, password = PASSWORD) => ({ checks: { user: { loginName }, password: { password } } });

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient("login-ui");
  aliceId = await createHuman(t, orgId, "alice");
}, 120_000);

afterAll(() => t?.stop());

describe("CreateSession and GetSession", () => {
  it("signs a user in with login name and password, over REST and Connect", async () => {
    for (const via of ["rest", "connect"] as const) {
      const out = await ok(t, via, login.pat, "CreateSession", byPassword(`alice@${domain}`));
      expect(out.sessionId).toEqual(expect.any(String));
      expect(out.sessionToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(out.details.resourceOwner).toBe(orgId);
      const { session } = await ok(t, via, login.pat, "GetSession", { sessionId: out.sessionId });
      expect(session.id).toBe(out.sessionId);
      expect(session.factors.user).toMatchObject({ id: aliceId, loginName: `alice@${domain}`, displayName: "Given Family", organizationId: orgId });
      expect(Date.parse(session.factors.user.verifiedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(session.factors.password.verifiedAt).toEqual(expect.any(String));
      expect(session.factors.password.changeRequired).toBeUndefined();
      expect(session.factors.totp).toBeUndefined();
      expect(session.expirationDate).toBeUndefined();
    }
  });

  it("finds the user by id, by login name in any case, and by a username unique in the instance", async () => {
    for (const user of [{ userId: aliceId }, { loginName: `ALICE@${domain.toUpperCase()}` }, { loginName: "alice" }]) {
      const out = await ok(t, "rest", login.pat, "CreateSession", { checks: { user } });
      const { session } = await ok(t, "rest", login.pat, "GetSession", { sessionId: out.sessionId });
      expect(session.factors.user.id).toBe(aliceId);
      expect(session.factors.password).toBeUndefined();
    }
  });

  it("needs the login name when a username exists in several organizations", async () => {
    const other = await createOrg(t, "Sessions Other Org");
    const twinId = await createHuman(t, other, "twin");
    await createHuman(t, orgId, "twin");
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: "twin" } } }, "not_found", "Errors.User.NotFound");
    const otherDomain = (await admin(t, "GetOrganizationByID", { organizationId: other })).organization.primaryDomain;
    const out = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: `twin@${otherDomain}` } } });
    expect((await ok(t, "rest", login.pat, "GetSession", { sessionId: out.sessionId })).session.factors.user.id).toBe(twinId);
  });

  it("refuses a wrong password without creating a session, and an unknown user", async () => {
    const before = (await ok(t, "rest", login.pat, "ListSessions", { queries: [{ userIdQuery: { id: aliceId } }] })).details.totalResult;
    await fails(t, "rest", login.pat, "CreateSession", byPassword("alice", "Wrong-Passw0rd!"), "invalid_argument", "Errors.User.Password.Invalid");
    const after = (await ok(t, "rest", login.pat, "ListSessions", { queries: [{ userIdQuery: { id: aliceId } }] })).details.totalResult;
    expect(after).toBe(before);
    await fails(t, "rest", login.pat, "CreateSession", byPassword(`nobody@${domain}`), "not_found", "Errors.User.NotFound");
    await fails(t, "connect", login.pat, "CreateSession", { checks: { user: { userId: "no-such-user" } } }, "not_found", "Errors.User.NotFound");
  });

  it("keeps only the SHA-256 of the session token", async () => {
    const out = await ok(t, "rest", login.pat, "CreateSession", byPassword("alice"));
    const row = await t.server.db.prisma.session.findUniqueOrThrow({ where: { id: out.sessionId } });
    expect(Buffer.from(row.tokenHash).equals(createHash("sha256").update(out.sessionToken).digest())).toBe(true);
    expect(JSON.stringify(row)).not.toContain(out.sessionToken);
  });

  it("refuses bad input with InvalidArgument", async () => {
    await fails(t, "rest", login.pat, "CreateSession", {}, "invalid_argument", "Errors.Session.User.Missing");
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: {} } }, "invalid_argument", "Errors.Session.User.Missing");
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: "" } } }, "invalid_argument", "Errors.Session.User.Missing");
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: aliceId }, password: { password: "" } } }, "invalid_argument");
    await fails(
      t,
      "rest",
      login.pat,
      "CreateSession",
      { checks: { user: { userId: aliceId } }, lifetime: "-5s" },
      "invalid_argument",
      "Errors.Session.Lifetime.Invalid",
    );
    await fails(
      t,
      "rest",
      login.pat,
      "CreateSession",
      { checks: { user: { userId: aliceId } }, lifetime: "0s" },
      "invalid_argument",
      "Errors.Session.Lifetime.Invalid",
    );
    const big = Buffer.alloc(70 * 1024, 1).toString("base64");
    await fails(
      t,
      "rest",
      login.pat,
      "CreateSession",
      { checks: { user: { userId: aliceId } }, metadata: { k: big } },
      "invalid_argument",
      "Errors.Session.Metadata.LimitReached",
    );
    await fails(
      t,
      "rest",
      login.pat,
      "CreateSession",
      { checks: { user: { userId: aliceId } }, userAgent: { description: "x".repeat(2000) } },
      "invalid_argument",
      "Errors.Session.UserAgent.TooLong",
    );
  });

  it("stores metadata and the user agent, and reports the lifetime", async () => {
    const out = await ok(t, "rest", login.pat, "CreateSession", {
      checks: { user: { userId: aliceId } },
      metadata: { device: Buffer.from("laptop").toString("base64") },
      userAgent: { fingerprintId: "fp-1", ip: "192.0.2.7", description: "Firefox on Linux", header: { "accept-language": { values: ["de", "en"] } } },
      lifetime: "3600s",
    });
    const { session } = await ok(t, "rest", login.pat, "GetSession", { sessionId: out.sessionId });
    expect(Buffer.from(session.metadata.device, "base64").toString()).toBe("laptop");
    expect(session.userAgent).toEqual({
      fingerprintId: "fp-1",
      ip: "192.0.2.7",
      description: "Firefox on Linux",
      header: { "accept-language": { values: ["de", "en"] } },
    });
    const expires = Date.parse(session.expirationDate) - Date.parse(session.creationDate);
    expect(expires).toBe(3_600_000);
  });
});

describe("SetSession", () => {
  it("adds checks, answers a new token and retires the previous one", async () => {
    const created = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: "alice" } } });
    const set = await ok(t, "rest", login.pat, "SetSession", {
      sessionId: created.sessionId,
      sessionToken: created.sessionToken,
      checks: { password: { password: PASSWORD } },
    });
    expect(set.sessionToken).not.toBe(created.sessionToken);
    const { session } = await ok(t, "rest", login.pat, "GetSession", { sessionId: created.sessionId });
    expect(session.sequence).toBe("1");
    expect(session.factors.password.verifiedAt).toEqual(expect.any(String));
    await fails(
      t,
      "rest",
      login.pat,
      "SetSession",
      { sessionId: created.sessionId, sessionToken: created.sessionToken },
      "permission_denied",
      "Errors.Session.Token.Invalid",
    );
    await fails(
      t,
      "rest",
      login.pat,
      "SetSession",
      { sessionId: created.sessionId, sessionToken: "forged" },
      "permission_denied",
      "Errors.Session.Token.Invalid",
    );
    await ok(t, "connect", login.pat, "SetSession", { sessionId: created.sessionId, sessionToken: set.sessionToken });
  });

  it("changes nothing, the token included, when a check fails", async () => {
    const created = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: "alice" } } });
    await fails(
      t,
      "rest",
      login.pat,
      "SetSession",
      { sessionId: created.sessionId, sessionToken: created.sessionToken, checks: { password: { password: "nope" } } },
      "invalid_argument",
      "Errors.User.Password.Invalid",
    );
    const { session } = await ok(t, "rest", login.pat, "GetSession", { sessionId: created.sessionId });
    // proto3 JSON leaves zero values out.
    expect(session.sequence).toBeUndefined();
    expect(session.factors.password).toBeUndefined();
    await ok(t, "rest", login.pat, "SetSession", {
      sessionId: created.sessionId,
      sessionToken: created.sessionToken,
      checks: { password: { password: PASSWORD } },
    });
  });

  it("lets exactly one of two requests with the same token through", async () => {
    const created = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName: "alice" } } });
    const replies = await Promise.all(
      [0, 1, 2, 3].map(() =>
        call(t, "rest", login.pat, "SetSession", { sessionId: created.sessionId, sessionToken: created.sessionToken, metadata: { a: "YQ==" } }),
      ),
    );
    expect(replies.filter((r) => r.code === "ok")).toHaveLength(1);
    for (const r of replies.filter((r) => r.code !== "ok")) expect(r.reason).toBe("Errors.Session.Token.Invalid");
  });

  it("keeps the session with its user", async () => {
    const bobId = await createHuman(t, orgId, "bob");
    const created = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: aliceId } } });
    await fails(
      t,
      "rest",
      login.pat,
      "SetSession",
      { sessionId: created.sessionId, sessionToken: created.sessionToken, checks: { user: { userId: bobId } } },
      "invalid_argument",
      "Errors.Session.User.Changed",
    );
  });

  it("ends with its lifetime", async () => {
    const created = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: aliceId } }, lifetime: "60s" });
    const set = await ok(t, "rest", login.pat, "SetSession", { sessionId: created.sessionId, sessionToken: created.sessionToken, lifetime: "120s" });
    t.advanceClock(90_000);
    try {
      await ok(t, "rest", login.pat, "GetSession", { sessionId: created.sessionId });
      t.advanceClock(40_000);
      await fails(t, "rest", login.pat, "GetSession", { sessionId: created.sessionId }, "not_found", "Errors.Session.NotFound");
      await fails(t, "rest", login.pat, "SetSession", { sessionId: created.sessionId, sessionToken: set.sessionToken }, "not_found", "Errors.Session.NotFound");
    } finally {
      t.advanceClock(-130_000);
    }
  });
});

describe("what a check enforces", () => {
  it("refuses machines, deactivated users and users of deactivated organizations", async () => {
    const machineId = await createMachine(t, orgId, "session-bot");
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: machineId } } }, "failed_precondition", "Errors.User.NotHuman");
    const carolId = await createHuman(t, orgId, "carol");
    await admin(t, "DeactivateUser", { userId: carolId });
    await fails(t, "rest", login.pat, "CreateSession", byPassword("carol"), "failed_precondition", "Errors.User.NotActive");
    const closed = await createOrg(t, "Sessions Closed Org");
    const daveId = await createHuman(t, closed, "dave");
    const session = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: daveId } } });
    await admin(t, "DeactivateOrganization", { organizationId: closed });
    await fails(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: daveId } } }, "failed_precondition", "Errors.Org.NotActive");
    // Deactivating the organization ended its users' sessions (issue 29: their participants are told).
    await fails(
      t,
      "rest",
      login.pat,
      "SetSession",
      { sessionId: session.sessionId, sessionToken: session.sessionToken },
      "not_found",
      "Errors.Session.NotFound",
    );
  });

  it("locks a user after the lockout setting's wrong passwords and then answers Locked whatever the password", async () => {
    const org = await createOrg(t, "Sessions Lockout Org");
    await admin(t, "SetLockoutSettings", { organizationId: org, settings: { maxPasswordAttempts: "3", maxOtpAttempts: "3" } });
    await createHuman(t, org, "erin");
    const erin = `erin@${(await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain}`;
    // A right password starts the count again.
    for (let i = 0; i < 2; i++)
      await fails(t, "rest", login.pat, "CreateSession", byPassword(erin, "Wrong-Passw0rd!"), "invalid_argument", "Errors.User.Password.Invalid");
    await ok(t, "rest", login.pat, "CreateSession", byPassword(erin));
    for (let i = 0; i < 2; i++)
      await fails(t, "rest", login.pat, "CreateSession", byPassword(erin, "Wrong-Passw0rd!"), "invalid_argument", "Errors.User.Password.Invalid");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(erin, "Wrong-Passw0rd!"), "failed_precondition", "Errors.User.Locked");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(erin), "failed_precondition", "Errors.User.Locked");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(erin, "Wrong-Passw0rd!"), "failed_precondition", "Errors.User.Locked");
  });

  it("starts the count of wrong passwords again after a right one, even when a later check of the request fails", async () => {
    const org = await createOrg(t, "Sessions Lockout Later Check Org");
    await admin(t, "SetLockoutSettings", { organizationId: org, settings: { maxPasswordAttempts: "2", maxOtpAttempts: "3" } });
    await createHuman(t, org, "ivan");
    const ivan = `ivan@${(await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain}`;
    await fails(t, "rest", login.pat, "CreateSession", byPassword(ivan, "Wrong-Passw0rd!"), "invalid_argument", "Errors.User.Password.Invalid");
    // The password is right; the TOTP check after it fails (ivan has none), and the request with it.
    const rightThenTotp = { checks: { user: { loginName: ivan }, password: { password: PASSWORD }, totp: { code: "123456" } } };
    const refused = await call(t, "rest", login.pat, "CreateSession", rightThenTotp);
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    // Had the count not started again, this second wrong password would lock ivan.
    await fails(t, "rest", login.pat, "CreateSession", byPassword(ivan, "Wrong-Passw0rd!"), "invalid_argument", "Errors.User.Password.Invalid");
    await fails(t, "rest", login.pat, "CreateSession", byPassword(ivan, "Wrong-Passw0rd!"), "failed_precondition", "Errors.User.Locked");
  });

  it("flags a password older than the password expiry settings allow", async () => {
    const org = await createOrg(t, "Sessions Expiry Org");
    await createHuman(t, org, "frank");
    const frank = `frank@${(await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain}`;
    await admin(t, "SetPasswordExpirySettings", { organizationId: org, settings: { maxAgeDays: "30", expireWarnDays: "5" } });
    const fresh = await ok(t, "rest", login.pat, "CreateSession", byPassword(frank));
    expect((await ok(t, "rest", login.pat, "GetSession", { sessionId: fresh.sessionId })).session.factors.password.changeRequired).toBeUndefined();
    t.advanceClock(31 * 86_400_000);
    try {
      const old = await ok(t, "rest", login.pat, "CreateSession", byPassword(frank));
      expect((await ok(t, "rest", login.pat, "GetSession", { sessionId: old.sessionId })).session.factors.password.changeRequired).toBe(true);
    } finally {
      t.advanceClock(-31 * 86_400_000);
    }
  });

  it("refuses a password check when the login settings allow no passwords", async () => {
    const org = await createOrg(t, "Sessions Passkeys Only Org");
    await createHuman(t, org, "gina");
    const gina = `gina@${(await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain}`;
    const { settings } = await admin(t, "GetLoginSettings", { organizationId: org });
    await admin(t, "SetLoginSettings", { organizationId: org, settings: { ...settings, allowUsernamePassword: false, resourceOwnerType: undefined } });
    await fails(t, "rest", login.pat, "CreateSession", byPassword(gina), "failed_precondition", "Errors.Session.Password.NotAllowed");
  });
});

describe("who may call", () => {
  it("lets only login clients sign in other users; administrators and others get 403", async () => {
    const owner = await machine(t, orgId, "sessions-org-owner", ["ORG_OWNER"]);
    for (const token of [t.pat, owner.pat]) {
      await fails(t, "rest", token, "CreateSession", byPassword("alice"), "permission_denied", "Errors.Permission.Denied");
      await fails(t, "connect", token, "CreateSession", byPassword("alice"), "permission_denied", "Errors.Permission.Denied");
    }
  });

  it("lets a user manage its own sessions, and hides the sessions of others", async () => {
    const hanaId = await createHuman(t, orgId, "hana");
    const hana = await humanToken(t, hanaId);
    // Her own token creates no session (a stolen token must not become one), for whichever name, known or not: the
    // same answer before any lookup.
    for (const name of ["hana", "alice", "nobody-by-this-name"]) {
      await fails(t, "rest", hana, "CreateSession", byPassword(name), "permission_denied", "Errors.Permission.Denied");
    }
    const own = await ok(t, "rest", login.pat, "CreateSession", byPassword("hana"));
    const set = await ok(t, "rest", hana, "SetSession", { sessionId: own.sessionId, sessionToken: own.sessionToken, metadata: { a: "YQ==" } });
    expect((await ok(t, "rest", hana, "GetSession", { sessionId: own.sessionId })).session.factors.user.id).toBe(hanaId);
    const list = await ok(t, "rest", hana, "ListSessions", {});
    expect(list.sessions.map((s: { factors: { user: { id: string } } }) => s.factors.user.id)).toEqual([hanaId]);
    // Another user's session does not exist for hana, whatever she asks.
    const alices = await ok(t, "rest", login.pat, "CreateSession", byPassword("alice"));
    await fails(t, "rest", hana, "GetSession", { sessionId: alices.sessionId }, "not_found", "Errors.Session.NotFound");
    await fails(t, "rest", hana, "SetSession", { sessionId: alices.sessionId, sessionToken: "x" }, "not_found", "Errors.Session.NotFound");
    await fails(t, "rest", hana, "DeleteSession", { sessionId: alices.sessionId }, "not_found", "Errors.Session.NotFound");
    expect((await ok(t, "rest", hana, "ListSessions", { queries: [{ userIdQuery: { id: aliceId } }] })).sessions).toBeUndefined();
    // ... unless she holds its token.
    expect((await ok(t, "rest", hana, "GetSession", { sessionId: alices.sessionId, sessionToken: alices.sessionToken })).session.id).toBe(alices.sessionId);
    await fails(t, "rest", hana, "GetSession", { sessionId: alices.sessionId, sessionToken: "wrong" }, "permission_denied", "Errors.Session.Token.Invalid");
    await ok(t, "rest", hana, "DeleteSession", { sessionId: own.sessionId });
    await fails(t, "rest", hana, "SetSession", { sessionId: own.sessionId, sessionToken: set.sessionToken }, "not_found", "Errors.Session.NotFound");
  });

  it("lets instance administrators read and end sessions", async () => {
    const s = await ok(t, "rest", login.pat, "CreateSession", byPassword("alice"));
    expect((await ok(t, "rest", t.pat, "GetSession", { sessionId: s.sessionId })).session.id).toBe(s.sessionId);
    await ok(t, "rest", t.pat, "DeleteSession", { sessionId: s.sessionId });
    await fails(t, "rest", login.pat, "GetSession", { sessionId: s.sessionId }, "not_found", "Errors.Session.NotFound");
  });

  it("answers 401 without a token", async () => {
    const reply = await call(t, "rest", undefined, "CreateSession", byPassword("alice"));
    expect(reply.status).toBe(401);
  });
});

describe("ListSessions and DeleteSession", () => {
  it("filters by ids, user and creation date, newest first, paged", async () => {
    const ivyId = await createHuman(t, orgId, "ivy");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: ivyId } } })).sessionId);
    const all = await ok(t, "rest", login.pat, "ListSessions", { queries: [{ userIdQuery: { id: ivyId } }] });
    expect(all.details.totalResult).toBe("3");
    expect(all.sessions.map((s: { id: string }) => s.id)).toEqual([...ids].reverse());
    const page = await ok(t, "rest", login.pat, "ListSessions", { query: { limit: 1, offset: "1", asc: true }, queries: [{ userIdQuery: { id: ivyId } }] });
    expect(page.sessions.map((s: { id: string }) => s.id)).toEqual([ids[1]]);
    const two = await ok(t, "rest", login.pat, "ListSessions", { queries: [{ idsQuery: { ids: [ids[0], ids[2]] } }] });
    expect(two.sessions.map((s: { id: string }) => s.id).sort()).toEqual([ids[0], ids[2]].sort());
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = await ok(t, "rest", login.pat, "ListSessions", {
      queries: [{ userIdQuery: { id: ivyId } }, { creationDateQuery: { creationDate: future, method: "TIMESTAMP_QUERY_METHOD_GREATER" } }],
    });
    expect(none.details.totalResult).toBeUndefined();
    expect(none.sessions).toBeUndefined();
    const past = await ok(t, "rest", login.pat, "ListSessions", {
      queries: [{ userIdQuery: { id: ivyId } }, { creationDateQuery: { creationDate: future, method: "TIMESTAMP_QUERY_METHOD_LESS" } }],
    });
    expect(past.details.totalResult).toBe("3");
  });

  it("purges sessions an hour after they expired, and keeps the others", async () => {
    const short = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: aliceId } }, lifetime: "60s" });
    const lasting = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: aliceId } } });
    const rows = () => t.server.db.prisma.session.count({ where: { id: { in: [short.sessionId, lasting.sessionId] } } });
    await purgeExpiredTokens(t.server.tokens);
    expect(await rows()).toBe(2);
    t.advanceClock(2 * 3_600_000);
    try {
      await purgeExpiredTokens(t.server.tokens);
      expect(await rows()).toBe(1);
      expect((await ok(t, "rest", login.pat, "GetSession", { sessionId: lasting.sessionId })).session.id).toBe(lasting.sessionId);
    } finally {
      t.advanceClock(-2 * 3_600_000);
    }
  });

  it("ends a session, records the events, and says NotFound for one that is gone", async () => {
    const s = await ok(t, "rest", login.pat, "CreateSession", byPassword("alice"));
    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: s.sessionId });
    await fails(t, "rest", login.pat, "DeleteSession", { sessionId: s.sessionId }, "not_found", "Errors.Session.NotFound");
    await fails(t, "rest", login.pat, "GetSession", { sessionId: s.sessionId }, "not_found", "Errors.Session.NotFound");
    const events = await admin(t, "ListEvents", { aggregateType: "session", aggregateId: s.sessionId });
    expect(events.result.map((e: { type: string }) => e.type).sort()).toEqual(["session.added", "session.terminated"]);
  });
});
