// Issue 11, finding 9: a token dies with the credential it was issued under
// (a client secret replaced or removed, a machine or application key removed),
// and what was issued before a deactivation or an administrator's lock (OAuth
// tokens and PATs) never comes back with a reactivation or an unlock.
import { createPrivateKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { SignJWT } from "jose";
import { world } from "../support/fixtures.js";
import { admin, fails, ok } from "../support/rpc.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { addMachineKeyFile, addMachineSecret, createMachine, createOrg, defaultOrgId, json, type KeyFile } from "../support/users.js";

let t: TestServer;
let orgId: string;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
}, 60_000);
afterAll(() => t?.stop());

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
// The management API takes tokens with its audience only.
const SCOPE = "openid urn:svc:iam:org:project:id:svc:aud";
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
const form = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(t.url + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body) });

async function bySecret(clientId: string, secret: string): Promise<string> {
  const res = await form("/oauth/v2/token", { grant_type: "client_credentials", scope: SCOPE }, basic(clientId, secret));
  expect(res.status).toBe(200);
  return (await json<{ access_token: string }>(res)).access_token;
}

async function byKey(kf: KeyFile): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ iss: kf.userId, sub: kf.userId, aud: t.server.tokens.issuer, iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: "RS256", kid: kf.keyId })
    .sign(createPrivateKey(kf.key));
  const res = await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion, scope: SCOPE });
  expect(res.status).toBe(200);
  return (await json<{ access_token: string }>(res)).access_token;
}

/** Whether the v2 API takes the token (any answer but 401: it authenticated). */
async function alive(token: string): Promise<boolean> {
  return (await rest(t.url, token, "POST", "/v2/organizations", {})).status !== 401;
}

/** RFC 7662 with the client's own credentials: whether the token is active. */
async function active(token: string, clientId: string, secret: string): Promise<boolean> {
  const res = await form("/oauth/v2/introspect", { token }, basic(clientId, secret));
  expect(res.status).toBe(200);
  return (await json<{ active: boolean }>(res)).active;
}

describe("a credential's tokens go with it", () => {
  it("a replaced or removed client secret revokes what it got; the same machine's key tokens stay", async () => {
    const userId = await createMachine(t, orgId, "rev-secret");
    const first = await addMachineSecret(t, userId);
    const kf = await addMachineKeyFile(t, userId);
    const [fromSecret, fromKey] = [await bySecret(userId, first), await byKey(kf)];
    expect(await alive(fromSecret)).toBe(true);
    const second = await addMachineSecret(t, userId); // replaces the first
    expect(await alive(fromSecret)).toBe(false);
    expect(await alive(fromKey)).toBe(true);
    const fromSecond = await bySecret(userId, second);
    expect(await active(fromSecret, userId, second)).toBe(false);
    expect(await active(fromSecond, userId, second)).toBe(true);
    await admin(t, "RemoveSecret", { userId });
    expect(await alive(fromSecond)).toBe(false);
    expect(await alive(fromKey)).toBe(true);
  });

  it("a removed machine key revokes the JWT-profile tokens it signed for, not another key's", async () => {
    const userId = await createMachine(t, orgId, "rev-key");
    const [k1, k2] = [await addMachineKeyFile(t, userId), await addMachineKeyFile(t, userId)];
    const [t1, t2] = [await byKey(k1), await byKey(k2)];
    await admin(t, "RemoveKey", { userId, keyId: k1.keyId });
    expect(await alive(t1)).toBe(false);
    expect(await alive(t2)).toBe(true);
  });

  it("an API application's regenerated secret revokes its tokens", async () => {
    const { projectId } = await admin(t, "CreateProject", { organizationId: orgId, name: "rev project" });
    const app = await admin(t, "CreateApplication", { projectId, name: "rev api", api: {} });
    const token = await bySecret(app.clientId, app.clientSecret);
    expect(await active(token, app.clientId, app.clientSecret)).toBe(true);
    const again = await admin(t, "RegenerateClientSecret", { projectId, appId: app.appId });
    expect(await active(token, app.clientId, again.clientSecret)).toBe(false);
    expect(await active(await bySecret(app.clientId, again.clientSecret), app.clientId, again.clientSecret)).toBe(true);
  });
});

describe("deactivation and an administrator's lock end what was issued before", () => {
  async function machineWithEverything(name: string, org = orgId) {
    const userId = await createMachine(t, org, name);
    const secret = await addMachineSecret(t, userId);
    const { token: pat } = await admin(t, "AddPersonalAccessToken", { userId });
    return { userId, secret, pat: pat as string, oauth: await bySecret(userId, secret) };
  }

  for (const [off, on] of [
    ["DeactivateUser", "ReactivateUser"],
    ["LockUser", "UnlockUser"],
  ] as const) {
    it(`${off} then ${on}: old OAuth tokens and PATs stay dead, new ones work`, async () => {
      const m = await machineWithEverything(`rev-${off.toLowerCase()}`);
      expect([await alive(m.oauth), await alive(m.pat)]).toEqual([true, true]);
      await admin(t, off, { userId: m.userId });
      await admin(t, on, { userId: m.userId });
      expect([await alive(m.oauth), await alive(m.pat)]).toEqual([false, false]);
      expect(await active(m.oauth, m.userId, m.secret)).toBe(false);
      const pats = await admin(t, "ListPersonalAccessTokens", { userId: m.userId });
      expect(pats.result ?? []).toEqual([]);
      expect(await alive(await bySecret(m.userId, m.secret))).toBe(true);
    });
  }

  it("an organization deactivated and reactivated: its users' tokens and PATs stay dead", async () => {
    const org = await createOrg(t, "rev org");
    const m = await machineWithEverything("rev-org-user", org);
    const other = await machineWithEverything("rev-org-other");
    await admin(t, "DeactivateOrganization", { organizationId: org });
    await admin(t, "ReactivateOrganization", { organizationId: org });
    expect([await alive(m.oauth), await alive(m.pat)]).toEqual([false, false]);
    expect(await alive(await bySecret(m.userId, m.secret))).toBe(true);
    // Another organization's tokens are untouched.
    expect(await alive(other.oauth)).toBe(true);
  });
});

describe("ListUserTokens and RevokeUserTokens", () => {
  it("lists a user's valid tokens without their value and revokes all, some ids or one client's", async () => {
    const userId = await createMachine(t, orgId, "rev-list");
    const secret = await addMachineSecret(t, userId);
    const kf = await addMachineKeyFile(t, userId);
    const [a, b, c] = [await bySecret(userId, secret), await bySecret(userId, secret), await byKey(kf)];
    const listed = await admin(t, "ListUserTokens", { userId });
    expect(listed.details.totalResult).toBe("3");
    const raw = JSON.stringify(listed);
    for (const tok of [a, b, c]) expect(raw).not.toContain(tok);
    expect(listed.result.map((r: { credential: string }) => r.credential).sort()).toEqual([`key:${kf.keyId}`, "secret", "secret"]);
    const idOf = (i: number) => listed.result[i].id as string;
    // One id.
    expect((await admin(t, "RevokeUserTokens", { userId, tokenIds: [idOf(0)] })).revoked).toBe(1);
    expect((await admin(t, "ListUserTokens", { userId })).details.totalResult).toBe("2");
    // All the rest.
    expect((await admin(t, "RevokeUserTokens", { userId })).revoked).toBe(2);
    expect([await alive(a), await alive(b), await alive(c)]).toEqual([false, false, false]);
    expect((await admin(t, "ListUserTokens", { userId })).result ?? []).toEqual([]);
    // One client's: another client id of the same machine (its login name) keeps its token.
    const d = await bySecret(userId, secret);
    expect((await admin(t, "RevokeUserTokens", { userId, clientId: "someone-else" })).revoked ?? 0).toBe(0);
    expect(await alive(d)).toBe(true);
    expect((await admin(t, "RevokeUserTokens", { userId, clientId: userId })).revoked).toBe(1);
    expect(await alive(d)).toBe(false);
    const events = await t.server.db.prisma.event.count({ where: { aggregateId: userId, type: "user.tokens.revoked" } });
    expect(events).toBe(4);
  });

  it("who may: its own organization's managers within the role rule; others see nothing", async () => {
    const w = await world(t, "revw");
    const secret = await addMachineSecret(t, w.ownerA.userId);
    await bySecret(w.ownerA.userId, secret);
    // A user manager cannot revoke its ORG_OWNER's tokens; the owner's own organization owner can; B sees nothing.
    await fails(t, "rest", w.userManagerA.pat, "RevokeUserTokens", { userId: w.ownerA.userId }, "permission_denied", "Errors.User.MorePrivileged");
    await fails(t, "rest", w.ownerB.pat, "RevokeUserTokens", { userId: w.ownerA.userId }, "not_found");
    await fails(t, "rest", w.ownerB.pat, "ListUserTokens", { userId: w.ownerA.userId }, "not_found");
    // A member without a role there is not told the user exists, as for every user resource.
    await fails(t, "rest", w.plainA.pat, "ListUserTokens", { userId: w.ownerA.userId }, "not_found");
    // The auditor reads, cannot revoke; the user reads its own.
    expect((await ok(t, "rest", w.auditorA.pat, "ListUserTokens", { userId: w.ownerA.userId })).details.totalResult).toBe("1");
    await fails(t, "rest", w.auditorA.pat, "RevokeUserTokens", { userId: w.ownerA.userId }, "permission_denied");
    expect((await ok(t, "rest", w.ownerA.pat, "ListUserTokens", { userId: w.ownerA.userId })).details.totalResult).toBe("1");
    expect((await ok(t, "connect", t.pat, "RevokeUserTokens", { userId: w.ownerA.userId })).revoked).toBe(1);
  });
});
