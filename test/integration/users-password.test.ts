// SetPassword through the real server: administrators without the current
// password, users themselves with it (imported bcrypt/scrypt/PBKDF2/argon2
// hashes included, which leave as argon2id), the complexity policy, and every
// error and permission path.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import {
  auth,
  type Caller,
  caller,
  connectClient,
  createHuman,
  createMachine,
  createOrg,
  grpcClient,
  humanToken,
  PASSWORD,
  restError,
  rpcError,
  userCallers,
} from "../support/users.js";

let t: TestServer;
let orgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

const NEW_PASSWORD = "Brand-New-Passw0rd!";
// Made by independent tools for "Correct-Horse-7!" (see test/unit/passwords.test.ts).
const IMPORTED_PASSWORD = "Correct-Horse-7!";
const IMPORTED: Record<string, string> = {
  bcrypt: "$2y$05$OCfjVmrquiWTBwGarFiDi.c/EnwcP20XDjlQk/cSSgHTfocKNYo5C",
  scrypt: "$scrypt$ln=10,r=8,p=1$urc2hrDW+h9jjBECoDTmvA$nvx3uu4b9RvSaos/QqUTWnp1epsuaIpG9b5ewbMtOs8",
  pbkdf2: "$pbkdf2-sha256$1000$5LxXCoEwRgih9F5LiTFmrA$hDD21078e.TxwjJiOX16mCXHNPk4AVm5pn6.K5/hq8c",
  argon2i: "$argon2i$v=19$m=1024,t=2,p=1$c29tZXNhbHQxMjM$wClJaJtG8rvKo42EX2roHcpwfKZPV8IEph3CwycBksU",
};

const row = (id: string) => t.server.db.prisma.user.findUniqueOrThrow({ where: { id } });
const setPassword = (token: string, id: string, body: Record<string, unknown>) => rest(t.url, token, "POST", `/v2/users/${id}/password`, body);

beforeAll(async () => {
  t = await startTestServer();
  ({ orgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

describe("SetPassword by an administrator", () => {
  it("sets an argon2id password with change-required and activates an initial user (REST)", async () => {
    const id = await createHuman(t, orgId, "ivy", {});
    expect((await row(id)).state).toBe("INITIAL");
    const res = await setPassword(t.pat, id, { newPassword: { password: NEW_PASSWORD, changeRequired: true } });
    expect(res.status).toBe(200);
    const after = await row(id);
    expect(after.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(after).toMatchObject({ state: "ACTIVE", passwordChangeRequired: true });
    const user = (await (await rest(t.url, t.pat, "GET", `/v2/users/${id}`)).json()) as { user: { human: { passwordChangeRequired: boolean } } };
    expect(user.user.human.passwordChangeRequired).toBe(true);
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.password.changed" } });
    expect(events.map((e) => e.payload)).toEqual([{ changeRequired: true, verifiedBy: "administrator" }]);
    expect(JSON.stringify(events)).not.toContain(NEW_PASSWORD);
  });

  it("does not change the state of an inactive user (Connect, gRPC)", async () => {
    const id = await createHuman(t, orgId, "jack");
    await rest(t.url, t.pat, "POST", `/v2/users/${id}/deactivate`, {});
    await connectClient(t).setPassword({ userId: id, newPassword: { password: NEW_PASSWORD } }, auth(t.pat));
    expect((await row(id)).state).toBe("INACTIVE");
    await grpcClient(t).setPassword({ userId: id, newPassword: { password: `${NEW_PASSWORD}2` } }, auth(t.pat));
    expect((await row(id)).passwordChangeRequired).toBe(false);
  });

  it("checks the password complexity and refuses machine users", async () => {
    const id = await createHuman(t, orgId, "kim");
    expect(await restError(await setPassword(t.pat, id, { newPassword: { password: "short" } }))).toEqual({
      status: 400,
      reason: "Errors.User.Password.Complexity",
    });
    expect(await restError(await setPassword(t.pat, id, { newPassword: { password: "alllowercase-but-long-1" } }))).toEqual({
      status: 400,
      reason: "Errors.User.Password.Complexity",
    });
    expect(await restError(await setPassword(t.pat, id, {}))).toEqual({ status: 400, reason: "Errors.User.Password.Missing" });
    const machine = await createMachine(t, orgId, "robot-password");
    expect(await restError(await setPassword(t.pat, machine, { newPassword: { password: NEW_PASSWORD } }))).toEqual({
      status: 400,
      reason: "Errors.User.NotHuman",
    });
    expect(await restError(await setPassword(t.pat, "no-such-user", { newPassword: { password: NEW_PASSWORD } }))).toEqual({
      status: 404,
      reason: "Errors.User.NotFound",
    });
  });

  it("allows a user manager and denies others, with or without a current password", async () => {
    const id = await createHuman(t, orgId, "lea");
    for (const body of [{ newPassword: { password: NEW_PASSWORD } }, { newPassword: { password: NEW_PASSWORD }, currentPassword: PASSWORD }]) {
      expect(await restError(await setPassword(nobody.pat, id, body))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect(await restError(await setPassword(auditor.pat, id, body))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
      expect(await restError(await setPassword(foreignManager.pat, id, body))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
    }
    expect((await setPassword(manager.pat, id, { newPassword: { password: NEW_PASSWORD } })).status).toBe(200);
  });
});

describe("SetPassword by the user itself", () => {
  it("needs the current password, and no role (Connect)", async () => {
    const id = await createHuman(t, orgId, "max");
    const token = await humanToken(t, id);
    const client = connectClient(t);
    expect(await rpcError(client.setPassword({ userId: id, newPassword: { password: NEW_PASSWORD } }, auth(token)))).toEqual({
      code: Code.PermissionDenied,
      reason: "Errors.Permission.Denied",
    });
    await client.setPassword({ userId: id, newPassword: { password: NEW_PASSWORD }, verification: { case: "currentPassword", value: PASSWORD } }, auth(token));
    // The new one is now the current one.
    expect(
      await rpcError(
        client.setPassword({ userId: id, newPassword: { password: PASSWORD }, verification: { case: "currentPassword", value: PASSWORD } }, auth(token)),
      ),
    ).toEqual({ code: Code.InvalidArgument, reason: "Errors.User.Password.Invalid" });
    await client.setPassword({ userId: id, newPassword: { password: PASSWORD }, verification: { case: "currentPassword", value: NEW_PASSWORD } }, auth(token));
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.password.changed" } });
    expect(events.map((e) => e.payload)).toEqual([
      { changeRequired: false, verifiedBy: "currentPassword" },
      { changeRequired: false, verifiedBy: "currentPassword" },
    ]);
  });

  it("counts a wrong current password as a failed attempt and resets the count on success (REST)", async () => {
    const id = await createHuman(t, orgId, "nia");
    const token = await humanToken(t, id);
    for (let i = 0; i < 2; i++) {
      expect(await restError(await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, currentPassword: "Wrong-Passw0rd!" }))).toEqual({
        status: 400,
        reason: "Errors.User.Password.Invalid",
      });
    }
    expect((await row(id)).failedPasswordAttempts).toBe(2);
    expect(await t.server.db.prisma.event.count({ where: { aggregateId: id, type: "user.password.check.failed" } })).toBe(2);
    expect((await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, currentPassword: PASSWORD })).status).toBe(200);
    expect((await row(id)).failedPasswordAttempts).toBe(0);
  });

  it("refuses a current password for a user that has none, and a verification code nobody issued", async () => {
    // An initial user cannot authenticate itself: an administrator asks on its behalf.
    const id = await createHuman(t, orgId, "otto", {});
    const token = t.pat;
    expect(await restError(await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, currentPassword: "" }))).toEqual({
      status: 400,
      reason: "Errors.User.Password.Invalid",
    });
    expect(await restError(await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, verificationCode: "123456" }))).toEqual({
      status: 400,
      reason: "Errors.User.Code.NotFound",
    });
  });

  it.each(Object.keys(IMPORTED))("verifies an imported %s hash and replaces it with argon2id", async (format) => {
    const id = await createHuman(t, orgId, `imported-${format}`, { hashedPassword: IMPORTED[format] });
    const token = await humanToken(t, id);
    expect(await restError(await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, currentPassword: "Correct-Horse-7?" }))).toEqual({
      status: 400,
      reason: "Errors.User.Password.Invalid",
    });
    expect((await row(id)).passwordHash).toBe(IMPORTED[format]);
    expect((await setPassword(token, id, { newPassword: { password: NEW_PASSWORD }, currentPassword: IMPORTED_PASSWORD })).status).toBe(200);
    expect((await row(id)).passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });
});

describe("lockout policy", () => {
  afterAll(async () => {
    // Back to the default (off) for the other tests of this file.
    await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { settings: { maxPasswordAttempts: 0 } });
  });

  it("is on by default: ten wrong passwords lock a user's password for a while (the user stays ACTIVE)", async () => {
    // Runs first: nothing has set a lockout policy yet.
    const id = await createHuman(t, orgId, "default-lockout");
    const wrong = { newPassword: { password: NEW_PASSWORD }, currentPassword: "Not-The-Passw0rd!" };
    for (let i = 0; i < 9; i++) expect((await restError(await setPassword(t.pat, id, wrong))).reason).toBe("Errors.User.Password.Invalid");
    expect((await restError(await setPassword(t.pat, id, wrong))).reason).toBe("Errors.User.Locked");
    const right = { newPassword: { password: NEW_PASSWORD }, currentPassword: PASSWORD };
    expect((await restError(await setPassword(t.pat, id, right))).reason).toBe("Errors.User.Locked");
    const locked = await row(id);
    expect([locked.state, locked.failedPasswordAttempts, locked.lockedAt === null]).toEqual(["ACTIVE", 10, false]);
  });

  it("locks a user after the configured number of wrong current passwords, on every check path", async () => {
    expect((await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { settings: { maxPasswordAttempts: 3, permanentLockout: true } })).status).toBe(200);
    const id = await createHuman(t, orgId, "lockme");
    const wrong = { newPassword: { password: NEW_PASSWORD }, currentPassword: "Not-The-Passw0rd!" };
    expect(await restError(await setPassword(t.pat, id, wrong))).toEqual({ status: 400, reason: "Errors.User.Password.Invalid" });
    expect(await restError(await setPassword(t.pat, id, wrong))).toEqual({ status: 400, reason: "Errors.User.Password.Invalid" });
    expect((await row(id)).failedPasswordAttempts).toBe(2);
    // The third wrong password reaches the limit: the user is locked in the same transaction.
    expect(await restError(await setPassword(t.pat, id, wrong))).toEqual({ status: 400, reason: "Errors.User.Locked" });
    const locked = await row(id);
    expect(locked.state).toBe("LOCKED");
    expect(locked.lockedAt).not.toBeNull();
    // Now even the right password proves nothing until an administrator unlocks the user.
    const right = { newPassword: { password: NEW_PASSWORD }, currentPassword: PASSWORD };
    expect(await restError(await setPassword(t.pat, id, right))).toEqual({ status: 400, reason: "Errors.User.Locked" });
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: { in: ["user.locked", "user.password.check.failed"] } } });
    expect(events.filter((e) => e.type === "user.password.check.failed")).toHaveLength(3);
    expect(events.filter((e) => e.type === "user.locked")).toHaveLength(1);

    expect((await rest(t.url, t.pat, "POST", `/v2/users/${id}/unlock`, {})).status).toBe(200);
    expect((await row(id)).failedPasswordAttempts).toBe(0);
    expect((await setPassword(t.pat, id, right)).status).toBe(200);
  });

  it("follows the organization's override, not the instance default", async () => {
    const other = await createOrg(t, "Strict");
    expect((await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { settings: { maxPasswordAttempts: 0 } })).status).toBe(200);
    expect(
      (await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { organizationId: other, settings: { maxPasswordAttempts: 1, permanentLockout: true } })).status,
    ).toBe(200);
    const relaxed = await createHuman(t, orgId, "relaxed");
    const strict = await createHuman(t, other, "strict");
    const wrong = { newPassword: { password: NEW_PASSWORD }, currentPassword: "Not-The-Passw0rd!" };
    for (let i = 0; i < 3; i++) expect((await restError(await setPassword(t.pat, relaxed, wrong))).reason).toBe("Errors.User.Password.Invalid");
    expect((await row(relaxed)).state).toBe("ACTIVE");
    expect((await restError(await setPassword(t.pat, strict, wrong))).reason).toBe("Errors.User.Locked");
    expect((await row(strict)).state).toBe("LOCKED");
  });

  it("never locks out the last owner of an organization: only its password, for fifteen minutes", async () => {
    const org = await createOrg(t, "Sole Owner Org");
    expect((await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { organizationId: org, settings: { maxPasswordAttempts: 2 } })).status).toBe(200);
    const owner = await createHuman(t, org, "sole-owner");
    expect((await rest(t.url, t.pat, "POST", `/v2/organizations/${org}/members`, { userId: owner, roles: ["ORG_OWNER"] })).status).toBe(200);
    const wrong = { newPassword: { password: NEW_PASSWORD }, currentPassword: "Not-The-Passw0rd!" };
    const right = { newPassword: { password: NEW_PASSWORD }, currentPassword: PASSWORD };
    expect((await restError(await setPassword(t.pat, owner, wrong))).reason).toBe("Errors.User.Password.Invalid");
    expect((await restError(await setPassword(t.pat, owner, wrong))).reason).toBe("Errors.User.Locked");
    // Still an active owner who can act (LockUser refuses the same user for the same reason) ...
    expect((await row(owner)).state).toBe("ACTIVE");
    const lockUser = await restError(await rest(t.url, t.pat, "POST", `/v2/users/${owner}/lock`, {}));
    expect(lockUser).toEqual({ status: 400, reason: "Errors.User.LastOrgOwner" });
    // ... whose password proves nothing, right or wrong, until the period ends.
    expect((await restError(await setPassword(t.pat, owner, right))).reason).toBe("Errors.User.Locked");
    expect((await restError(await setPassword(t.pat, owner, wrong))).reason).toBe("Errors.User.Locked");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: owner, type: { in: ["user.locked", "user.password.locked"] } } });
    expect(events.map((e) => e.type)).toEqual(["user.password.locked"]);
    t.advanceClock(15 * 60_000 + 1000);
    try {
      expect((await setPassword(t.pat, owner, right)).status).toBe(200);
      const after = await row(owner);
      expect([after.state, after.failedPasswordAttempts, after.lockedAt]).toEqual(["ACTIVE", 0, null]);
    } finally {
      t.advanceClock(-(15 * 60_000 + 1000));
    }
  });

  it("an ORG_USER_MANAGER cannot unlock an ORG_OWNER locked by the policy", async () => {
    const org = await createOrg(t, "Two Owners Org");
    expect(
      (await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { organizationId: org, settings: { maxPasswordAttempts: 1, permanentLockout: true } })).status,
    ).toBe(200);
    const [first, second] = [await createHuman(t, org, "owner-one"), await createHuman(t, org, "owner-two")];
    for (const id of [first, second]) {
      expect((await rest(t.url, t.pat, "POST", `/v2/organizations/${org}/members`, { userId: id, roles: ["ORG_OWNER"] })).status).toBe(200);
    }
    const manager = await caller(t, org, "unlocking-manager", ["ORG_USER_MANAGER"]);
    const wrong = { newPassword: { password: NEW_PASSWORD }, currentPassword: "Not-The-Passw0rd!" };
    expect((await restError(await setPassword(t.pat, first, wrong))).reason).toBe("Errors.User.Locked");
    expect((await row(first)).state).toBe("LOCKED");
    expect(await restError(await rest(t.url, manager.pat, "POST", `/v2/users/${first}/unlock`, {}))).toEqual({
      status: 403,
      reason: "Errors.User.MorePrivileged",
    });
    expect((await rest(t.url, t.pat, "POST", `/v2/users/${first}/unlock`, {})).status).toBe(200);
  });
});
