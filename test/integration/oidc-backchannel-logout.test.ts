// OIDC Back-Channel Logout 1.0 (issue 29): when a session ends, each OIDC application it signed into that registered a
// backchannel_logout_uri is POSTed a logout token from the outbox. A loopback receiver stands in for the applications
// (SVC_ACTIONS_ALLOW_PRIVATE=true lets svc call it); the tokens are checked by jose against the JWKS, independently
// of svc's own code. mod_auth_openidc ending its session on one is oidc-mod-auth-openidc.test.ts.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { createHuman, createOrg, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { codeFlow, discover, issuerOf, loginClient, type OidcApp, oidcApp, signIn } from "../support/oidc.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const EVENT = "http://schemas.openid.net/event/backchannel-logout";

interface Received {
  path: string;
  contentType: string | undefined;
  token: string;
}

/** A relying party's back-channel logout endpoint on loopback: records what it is sent; `down` closes it. */
class Receiver {
  received: Received[] = [];
  private server: http.Server | undefined;
  port = 0;

  async up(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      req.on("end", () => {
        this.received.push({
          path: req.url ?? "",
          contentType: req.headers["content-type"],
          token: new URLSearchParams(body).get("logout_token") ?? "",
        });
        res.writeHead(200, { "cache-control": "no-store" }).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  of(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }
}

let t: TestServer;
let login: Machine;
let projectId: string;
let orgId: string;
let domain: string;
const receiver = new Receiver();
const db = () => t.server.db.prisma;

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An app whose back-channel logout endpoint is the receiver's `path` (dev mode: http on loopback). */
const rpWithLogout = (name: string, path: string, extra: Record<string, unknown> = {}) =>
  oidcApp(t, projectId, name, { devMode: true, backchannelLogoutUri: receiver.url(path), backchannelLogoutSessionRequired: true, ...extra });

async function user(name: string): Promise<{ id: string; loginName: string }> {
  const id = await createHuman(t, orgId, name);
  return { id, loginName: `${name}@${domain}` };
}

async function signInto(app: OidcApp, loginName: string, password?: string) {
  const config = await discover(t, app.clientId, app.clientSecret);
  return codeFlow(t, config, login, loginName, password ? { session: await signIn(t, login, loginName, password) } : {});
}

async function verified(token: string, clientId: string) {
  const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
  return jwtVerify(token, jwks, { issuer: issuerOf(t), audience: clientId, typ: "logout+jwt", maxTokenAge: "5 minutes" });
}

beforeAll(async () => {
  await receiver.up();
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true", SVC_ACTIONS_DELIVERY_BACKOFF_MS: "250" });
  orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "bcl-login-ui");
  projectId = await project(t, orgId, "Back-channel logout");
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await receiver.down();
});

describe("OIDC back-channel logout", () => {
  it("is advertised, and the URI is validated like a redirect URI (https, http only in dev mode, no fragment)", async () => {
    const meta = await (await fetch(`${t.url}/.well-known/openid-configuration`)).json();
    expect(meta).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
    const create = (name: string, oidc: Record<string, unknown>) =>
      fails(t, "rest", t.pat, "CreateApplication", { projectId, name, oidc: { redirectUris: ["https://rp.example.com/cb"], ...oidc } }, "invalid_argument");
    expect((await create("bcl-http", { backchannelLogoutUri: "http://rp.example.com/logout" })).reason).toBe("Errors.App.Uri.HttpsRequired");
    expect((await create("bcl-fragment", { backchannelLogoutUri: "https://rp.example.com/logout#x" })).reason).toBe("Errors.App.Uri.Fragment");
    expect((await create("bcl-relative", { backchannelLogoutUri: "/logout" })).reason).toBe("Errors.App.Uri.Invalid");
    const app = await oidcApp(t, projectId, "bcl-shown", { backchannelLogoutUri: "https://rp.example.com/logout", backchannelLogoutSessionRequired: true });
    const got = await admin(t, "GetApplication", { projectId, appId: app.appId });
    expect(got.app.oidc).toMatchObject({ backchannelLogoutUri: "https://rp.example.com/logout", backchannelLogoutSessionRequired: true });
  });

  it("DeleteSession sends each participant with a URI a logout token (typ logout+jwt, events, sub, sid, no nonce) verified against the JWKS", async () => {
    const alice = await user("bcl-alice");
    const rp = await rpWithLogout("bcl-rp", "/rp/logout");
    const es = await rpWithLogout("bcl-rp-es256", "/es/logout", { idTokenSignedResponseAlg: "ES256" });
    const silent = await oidcApp(t, projectId, "bcl-silent");
    const flow = await signInto(rp, alice.loginName);
    const sid = flow.tokens.claims()?.sid;
    expect(sid).toBe(flow.session.sessionId);
    const config = await discover(t, es.clientId, es.clientSecret);
    await codeFlow(t, config, login, alice.loginName, { session: flow.session });
    await codeFlow(t, await discover(t, silent.clientId, silent.clientSecret), login, alice.loginName, { session: flow.session });
    expect(receiver.of("/rp/logout")).toHaveLength(0);

    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: flow.session.sessionId, sessionToken: flow.session.sessionToken });
    const [got] = await until("the logout token", () => (receiver.of("/rp/logout").length ? receiver.of("/rp/logout") : undefined));
    expect(got?.contentType).toBe("application/x-www-form-urlencoded");
    const { payload, protectedHeader } = await verified(got?.token ?? "", rp.clientId);
    expect(protectedHeader).toMatchObject({ typ: "logout+jwt", alg: "RS256" });
    expect(payload).toMatchObject({ iss: issuerOf(t), aud: rp.clientId, sub: alice.id, sid, events: { [EVENT]: {} } });
    expect(payload).not.toHaveProperty("nonce");
    expect(typeof payload.jti).toBe("string");
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeLessThanOrEqual(300);

    // The ES256 application's token is signed with its ID token algorithm.
    const [esGot] = await until("the ES256 logout token", () => (receiver.of("/es/logout").length ? receiver.of("/es/logout") : undefined));
    expect(decodeProtectedHeader(esGot?.token ?? "")).toMatchObject({ alg: "ES256", typ: "logout+jwt" });
    expect((await verified(esGot?.token ?? "", es.clientId)).payload).toMatchObject({ sid, sub: alice.id });
    // A token for one client is not one for another (wrong audience).
    await expect(verified(got?.token ?? "", es.clientId)).rejects.toThrow(/aud/);

    // The application without a URI is sent nothing: no delivery is written for it.
    expect(await db().delivery.count({ where: { targetId: silent.appId } })).toBe(0);
    expect(await db().delivery.count({ where: { targetId: rp.appId, state: "delivered" } })).toBe(1);
  });

  it("ending one user's session tells nothing about another user's sessions of the same application", async () => {
    const bob = await user("bcl-bob");
    const carol = await user("bcl-carol");
    const rp = await rpWithLogout("bcl-shared", "/shared/logout");
    const bobs = await signInto(rp, bob.loginName);
    const carols = await signInto(rp, carol.loginName);
    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: carols.session.sessionId, sessionToken: carols.session.sessionToken });
    const [got] = await until("carol's logout token", () => (receiver.of("/shared/logout").length ? receiver.of("/shared/logout") : undefined));
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: carol.id, sid: carols.session.sessionId });
    // Bob's session lives on, and nothing was queued for it.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receiver.of("/shared/logout")).toHaveLength(1);
    expect(await db().session.count({ where: { id: bobs.session.sessionId } })).toBe(1);
    expect(await db().delivery.count({ where: { targetId: rp.appId } })).toBe(1);
  });

  it("end_session (RP-initiated logout with id_token_hint) sends the logout token", async () => {
    const dave = await user("bcl-dave");
    const rp = await rpWithLogout("bcl-end-session", "/end-session/logout");
    const flow = await signInto(rp, dave.loginName);
    const res = await fetch(`${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: flow.tokens.id_token ?? "" })}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const [got] = await until("the logout token", () => (receiver.of("/end-session/logout").length ? receiver.of("/end-session/logout") : undefined));
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: dave.id, sid: flow.session.sessionId });
  });

  it("deactivating or locking a user ends its sessions and sends their logout tokens", async () => {
    const erin = await user("bcl-erin");
    const rp = await rpWithLogout("bcl-deactivate", "/deactivate/logout");
    const one = await signInto(rp, erin.loginName);
    await admin(t, "DeactivateUser", { userId: erin.id });
    const [got] = await until("the logout token", () => (receiver.of("/deactivate/logout").length ? receiver.of("/deactivate/logout") : undefined));
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: erin.id, sid: one.session.sessionId });
    expect(await db().session.count({ where: { id: one.session.sessionId } })).toBe(0);

    await admin(t, "ReactivateUser", { userId: erin.id });
    const two = await signInto(rp, erin.loginName);
    await admin(t, "LockUser", { userId: erin.id });
    await until("the second logout token", () => (receiver.of("/deactivate/logout").length === 2 ? true : undefined));
    const second = receiver.of("/deactivate/logout")[1];
    expect((await verified(second?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: erin.id, sid: two.session.sessionId });
  });

  it("a lock by the lockout policy (permanentLockout) ends the user's sessions, sends their logout tokens and revokes the tokens", async () => {
    const lockOrg = await createOrg(t, "BCL Lockout Org");
    await admin(t, "SetLockoutSettings", { organizationId: lockOrg, settings: { maxPasswordAttempts: "2", permanentLockout: true } });
    const id = await createHuman(t, lockOrg, "bcl-lola");
    const loginName = `bcl-lola@${(await admin(t, "GetOrganizationByID", { organizationId: lockOrg })).organization.primaryDomain}`;
    const rp = await rpWithLogout("bcl-lockout", "/lockout/logout");
    const flow = await signInto(rp, loginName);
    // Someone guesses the password: the second wrong one locks the user.
    for (let i = 0; i < 2; i++) {
      await call(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName }, password: { password: `Wrong-Passw0rd-${i}` } } });
    }
    expect((await admin(t, "GetUserByID", { userId: id })).user.state).toBe("USER_STATE_LOCKED");
    const [got] = await until("the logout token", () => (receiver.of("/lockout/logout").length ? receiver.of("/lockout/logout") : undefined));
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: id, sid: flow.session.sessionId });
    expect(await db().session.count({ where: { id: flow.session.sessionId } })).toBe(0);
    // Revoked, not only unusable while locked: an unlock does not revive them.
    expect(await db().oAuthToken.count({ where: { userId: id, revokedAt: null } })).toBe(0);
    expect(await db().refreshToken.count({ where: { userId: id, revokedAt: null } })).toBe(0);
    const locked = await db().event.findFirst({ where: { aggregateId: id, type: "user.locked" } });
    expect(locked?.payload).toMatchObject({ reason: "lockout policy", endedSessions: 1 });
  });

  it("a password change (its other sessions) and DeleteUser send the logout tokens of the sessions they end", async () => {
    const gina = await user("bcl-gina");
    const rp = await rpWithLogout("bcl-password", "/password/logout");
    const one = await signInto(rp, gina.loginName);
    await admin(t, "SetPassword", { userId: gina.id, newPassword: { password: "Gina-Passw0rd-2!", changeRequired: false } });
    const [got] = await until("the password change's logout token", () =>
      receiver.of("/password/logout").length ? receiver.of("/password/logout") : undefined,
    );
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: gina.id, sid: one.session.sessionId });

    const two = await signInto(rp, gina.loginName, "Gina-Passw0rd-2!");
    await admin(t, "DeleteUser", { userId: gina.id });
    await until("DeleteUser's logout token", () => (receiver.of("/password/logout").length === 2 ? true : undefined));
    const second = receiver.of("/password/logout")[1];
    expect((await verified(second?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: gina.id, sid: two.session.sessionId });
    expect(await db().session.count({ where: { id: two.session.sessionId } })).toBe(0);
  });

  it("a receiver that is down gets the logout token once it is back (the outbox retries)", async () => {
    const frank = await user("bcl-frank");
    const rp = await rpWithLogout("bcl-retry", "/retry/logout");
    const flow = await signInto(rp, frank.loginName);
    await receiver.down();
    try {
      await ok(t, "rest", login.pat, "DeleteSession", { sessionId: flow.session.sessionId, sessionToken: flow.session.sessionToken });
      // The first attempt fails (connection refused) and a retry is scheduled.
      await until("a failed attempt", async () => {
        const row = await db().delivery.findFirst({ where: { targetId: rp.appId } });
        return row && row.attempts >= 1 && row.lastError ? row : undefined;
      });
    } finally {
      await receiver.up();
    }
    const [got] = await until("the retried logout token", () => (receiver.of("/retry/logout").length ? receiver.of("/retry/logout") : undefined), 60_000);
    expect((await verified(got?.token ?? "", rp.clientId)).payload).toMatchObject({ sub: frank.id, sid: flow.session.sessionId });
    const row = await db().delivery.findFirst({ where: { targetId: rp.appId } });
    expect(row).toMatchObject({ state: "delivered" });
    expect(row?.attempts).toBeGreaterThanOrEqual(2);
  }, 90_000);
});
