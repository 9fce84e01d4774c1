// OAuth 2.0 / OIDC hardening: security and conformance defects found by
// probing the real server (RFC 6749, 7009, 7523, 7662,
// 8414, OIDC Core/Discovery). Each test names the rule it checks.
import { createPrivateKey, sign } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { decodeJwt, SignJWT } from "jose";
import { ok, project } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { addMachineKeyFile, addMachineSecret, createMachine, createOrg, defaultOrgId, json, type KeyFile } from "../support/users.js";

const MGMT = "urn:svc:iam:org:project:id:svc:aud";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

let t: TestServer;
let orgId: string;
let issuer: string;

interface App {
  appId: string;
  clientId: string;
  clientSecret: string;
  projectId: string;
}
type Body = Record<string, unknown>;

const addSecret = (userId: string) => addMachineSecret(t, userId);
const addKey = (userId: string) => addMachineKeyFile(t, userId);
async function createApp(projectId: string, name: string): Promise<App> {
  const out = await ok(t, "rest", t.pat, "CreateApplication", { projectId, name, api: {} });
  return { appId: out.appId, clientId: out.clientId, clientSecret: out.clientSecret, projectId };
}
async function form(path: string, body: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(t.url + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body) });
}
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
async function cc(clientId: string, secret: string, scope?: string): Promise<Body & { access_token: string }> {
  const res = await form("/oauth/v2/token", { grant_type: "client_credentials", ...(scope ? { scope } : {}) }, basic(clientId, secret));
  expect(res.status).toBe(200);
  return json(res);
}
async function introspect(token: string, clientId: string, secret: string): Promise<Body> {
  const res = await form("/oauth/v2/introspect", { token }, basic(clientId, secret));
  expect(res.status).toBe(200);
  return json(res);
}
/** An RS256 assertion without a jti (the spec's JWT profile assertion has none). */
async function assertion(kf: KeyFile, claims: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: kf.userId, sub: kf.userId, aud: issuer, iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: "RS256", kid: kf.keyId })
    .sign(createPrivateKey(kf.key));
}
/** The same JWS with other (ignored) padding bits in the last base64url character of the signature. */
function reencoded(jws: string): string {
  const last = jws.at(-1) as string;
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const i = alphabet.indexOf(last);
  // 256 signature bytes: the last of 342 characters carries 2 bits, the low 4 bits are padding.
  const other = alphabet[(i & ~0xf) | (~i & 0xf)] as string;
  return jws.slice(0, -1) + other;
}

/** A compact RS256 JWS built by hand (jose refuses to sign some of the headers tried here). */
function rawRs256(pem: string, header: object, claims: object): string {
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const input = `${enc(header)}.${enc(claims)}`;
  return `${input}.${sign("sha256", Buffer.from(input), createPrivateKey(pem)).toString("base64url")}`;
}

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  issuer = t.server.tokens.issuer as string;
  expect(issuer).toBeDefined();
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

describe("assertion replay (RFC 7523 §3 / §5.2: single use)", () => {
  it("a JWT profile assertion without jti cannot be replayed by re-encoding its signature", async () => {
    const u = await createMachine(t, orgId, "audit-replay");
    const kf = await addKey(u);
    const a = await assertion(kf);
    const again = reencoded(a);
    expect(again).not.toBe(a);
    const grant = (x: string) => form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: x, scope: "openid" });
    expect((await grant(a)).status).toBe(200);
    const replay = await grant(again);
    expect(replay.status).toBe(400);
    expect((await json<Body>(replay)).error).toBe("invalid_grant");
  });

  it("a private_key_jwt client assertion without jti cannot be replayed by re-encoding its signature", async () => {
    const id = await createMachine(t, orgId, "audit-pkj");
    const kf = await addKey(id);
    const a = await assertion(kf, { iss: "audit-pkj", sub: "audit-pkj" });
    const send = (x: string) =>
      form("/oauth/v2/token", {
        grant_type: "client_credentials",
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: x,
      });
    expect((await send(a)).status).toBe(200);
    const replay = await send(reencoded(a));
    expect(replay.status).toBe(401);
    expect((await json<Body>(replay)).error).toBe("invalid_client");
  });
});

describe("client identity is the registered client id (RFC 6749 §2.2, RFC 7662 §2.2, RFC 7009 §2.1)", () => {
  it("a machine user authenticating with its username in another case still owns its tokens", async () => {
    const u = await createMachine(t, orgId, "audit-case");
    const s = await addSecret(u);
    const tok = await cc("AUDIT-Case", s);
    expect(tok).toBeDefined();
    const intro = await introspect(tok.access_token, "audit-case", s);
    expect(intro).toMatchObject({ active: true, client_id: "audit-case", sub: u });
    expect((await form("/oauth/v2/revoke", { token: tok.access_token }, basic("audit-case", s))).status).toBe(200);
    expect(await introspect(tok.access_token, "audit-case", s)).toEqual({ active: false });
  });
});

describe("audience confusion across organizations (RFC 7662 §4, RFC 9068 §4)", () => {
  it("a machine user named like another org's project id does not get tokens meant for that project", async () => {
    // Org A: a project and its resource server (an API app that introspects).
    const projectA = await project(t, orgId, "audit-victim");
    const rs = await createApp(projectA, "audit-rs");
    // Org B: a machine user whose username is A's project id; it asks for no project audience.
    const orgB = await createOrg(t, "Audit Org B");
    const m = await createMachine(t, orgB, projectA);
    const s = await addSecret(m);
    await t.server.db.prisma.user.update({ where: { id: m }, data: { accessTokenType: "JWT" } });
    const tok = await cc(projectA, s, "openid");
    // A's resource server must not see B's token as one meant for its project.
    expect(await introspect(tok.access_token, rs.clientId, rs.clientSecret)).toEqual({ active: false });
    // Nor may a locally validating resource server of project A find its project in aud.
    expect(decodeJwt(tok.access_token).aud).not.toContain(projectA);
  });

  it("a machine user named 'svc' gets no management audience without asking for it, and sees no other user's management token", async () => {
    const victim = await createMachine(t, orgId, "audit-victim-user");
    const vs = await addSecret(victim);
    const victimTok = (await cc("audit-victim-user", vs, `openid profile ${MGMT}`)).access_token;
    const orgB = await createOrg(t, "Audit Org C");
    const m = await createMachine(t, orgB, "svc");
    const s = await addSecret(m);
    const own = (await cc("svc", s, "openid")).access_token;
    // Without the management scope the token must not be accepted by the management API.
    expect((await rest(t.url, own, "GET", `/v2/users/${m}`)).status).toBe(401);
    expect(await introspect(victimTok, "svc", s)).toEqual({ active: false });
  });
});

describe("client authentication on the JWT profile grant (RFC 6749 §3.2.1, RFC 7523 §3.1)", () => {
  it("client credentials sent with a jwt-bearer grant are checked: wrong ones are refused with invalid_client", async () => {
    const u = await createMachine(t, orgId, "audit-jwtp-client");
    await addSecret(u);
    const kf = await addKey(u);
    const res = await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: await assertion(kf), scope: "openid" }, basic("audit-jwtp-client", "wrong"));
    expect(res.status).toBe(401);
    expect((await json<Body>(res)).error).toBe("invalid_client");
  });
});

describe("private_key_jwt audience (RFC 7523 §3, OIDC Core §9)", () => {
  it("a client assertion naming the token endpoint is accepted at the introspection and revocation endpoints", async () => {
    const id = await createMachine(t, orgId, "audit-pkj-aud");
    const kf = await addKey(id);
    const tok = await json<{ access_token: string }>(
      await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: await assertion(kf), scope: "openid" }),
    );
    const auth = async () => ({
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: await assertion(kf, { iss: "audit-pkj-aud", sub: "audit-pkj-aud", aud: `${issuer}/oauth/v2/token`, jti: crypto.randomUUID() }),
    });
    const intro = await form("/oauth/v2/introspect", { token: tok.access_token, ...(await auth()) });
    expect(intro.status).toBe(200);
    expect((await json<Body>(intro)).active).toBe(true);
    expect((await form("/oauth/v2/revoke", { token: tok.access_token, ...(await auth()) })).status).toBe(200);
  });
});

describe("discovery (RFC 8414 §2, OIDC Discovery §3)", () => {
  it("advertises only scopes the token endpoint grants", async () => {
    const doc = await json<{ scopes_supported: string[] }>(await fetch(`${t.url}/.well-known/openid-configuration`));
    const u = await createMachine(t, orgId, "audit-scopes");
    const s = await addSecret(u);
    const granted = ((await cc("audit-scopes", s, doc.scopes_supported.join(" "))).scope as string).split(" ");
    // offline_access is the authorization code flow's (a refresh token for a user's sign-in): a machine gets none.
    expect(granted.sort()).toEqual(doc.scopes_supported.filter((s) => s !== "offline_access").sort());
  });
});

describe("used-assertion markers", () => {
  it("a marker lives no longer than the assertion could be accepted (iat + 1 h), whatever its exp", async () => {
    const id = await createMachine(t, orgId, "audit-marker");
    const kf = await addKey(id);
    const now = Math.floor(Date.now() / 1000);
    const res = await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: await assertion(kf, { exp: now + 10 * 365 * 86400 }), scope: "openid" });
    expect(res.status).toBe(200);
    const markers = await t.server.db.prisma.oAuthToken.findMany({ where: { userId: id, format: "assertion" } });
    expect(markers).toHaveLength(1);
    expect(markers[0]?.expiresAt.getTime()).toBeLessThanOrEqual((now + 3600 + 120) * 1000);
  });
});

describe("JWT profile attack inputs not covered elsewhere (RFC 7515 §4.1.11, RFC 7523 §3)", () => {
  it("refuses crit, a future nbf, another user's key, a JWE and an oversized assertion with invalid_grant; accepts aud as an array", async () => {
    const a = await createMachine(t, orgId, "audit-jwt-a");
    const b = await createMachine(t, orgId, "audit-jwt-b");
    const ka = await addKey(a);
    await addKey(b);
    const now = Math.floor(Date.now() / 1000);
    const signed = (claims: Record<string, unknown>, header: Record<string, unknown> = {}) =>
      new SignJWT({ iss: a, sub: a, aud: issuer, iat: now, exp: now + 300, ...claims })
        .setProtectedHeader({ alg: "RS256", kid: ka.keyId, ...header })
        .sign(createPrivateKey(ka.key));
    const grant = (x: string) => form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: x, scope: "openid" });
    const cases: Record<string, string> = {
      crit: rawRs256(
        ka.key,
        { alg: "RS256", kid: ka.keyId, crit: ["urn:example:unknown"], "urn:example:unknown": true },
        {
          iss: a,
          sub: a,
          aud: issuer,
          iat: now,
          exp: now + 300,
        },
      ),
      nbfFuture: await signed({ nbf: now + 600 }),
      // A's key, B as iss and sub: the kid must belong to the subject.
      otherUsersKey: await signed({ iss: b, sub: b }),
      jwe: "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00iLCJraWQiOiJ4In0.a.b.c.d",
      huge: await signed({ pad: "x".repeat(9000) }),
    };
    for (const [name, x] of Object.entries(cases)) {
      const res = await grant(x);
      expect({ name, status: res.status, error: (await json<Body>(res)).error }).toEqual({ name, status: 400, error: "invalid_grant" });
    }
    expect((await grant(await signed({ aud: ["https://other.example", issuer] }))).status).toBe(200);
  });
});

describe("userinfo (RFC 6750 §2, §3.1)", () => {
  it("ignores a token in the query (RFC 6750 §2.3 is not offered) and answers 401 without an error code", async () => {
    const u = await createMachine(t, orgId, "audit-userinfo");
    const s = await addSecret(u);
    const tok = (await cc("audit-userinfo", s, "openid")).access_token;
    const res = await fetch(`${t.url}/oidc/v1/userinfo?access_token=${tok}`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="svc"');
    const noOpenid = (await cc("audit-userinfo", s, "profile")).access_token;
    const forbidden = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${noOpenid}` } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
  });
});

describe("audience confusion with an application's client id (RFC 7662 §4, RFC 9068 §4)", () => {
  it("a machine user created with a user id equal to another org's app client id gets no token naming that app", async () => {
    const projectA = await project(t, orgId, "audit-victim-app");
    const app = await createApp(projectA, "audit-victim-client");
    const orgB = await createOrg(t, "Audit Org D");
    const res = await rest(t.url, t.pat, "POST", "/v2/users/new", {
      organizationId: orgB,
      userId: app.clientId,
      username: "audit-app-spoof",
      machine: { name: "x" },
    });
    expect(res.status).toBe(200);
    const kf = await addKey(app.clientId);
    await t.server.db.prisma.user.update({ where: { id: app.clientId }, data: { accessTokenType: "JWT" } });
    // Named by its id, the assertion names the application (whose client id it is): no token.
    const byId = await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: await assertion(kf), scope: "openid" });
    expect([byId.status, (await json<{ error: string }>(byId)).error]).toEqual([400, "invalid_grant"]);
    // Named by its username, it gets one that does not name the app.
    const byName = await assertion(kf, { iss: "audit-app-spoof", sub: "audit-app-spoof" });
    const tok = await json<{ access_token: string }>(await form("/oauth/v2/token", { grant_type: JWT_BEARER, assertion: byName, scope: "openid" }));
    expect(decodeJwt(tok.access_token).aud ?? []).not.toContain(app.clientId);
    expect(await introspect(tok.access_token, app.clientId, app.clientSecret)).toEqual({ active: false });
  });
});

describe("client ids cannot be enumerated through client authentication (RFC 6749 §5.2, RFC 7523 §3.2)", () => {
  it("a forged private_key_jwt assertion gets one answer whether the id is unknown, a machine user or a secret-based app", async () => {
    const machine = await createMachine(t, orgId, "enum-machine");
    await addKey(machine);
    const app = await createApp(await project(t, orgId, "enum project"), "enum app");
    // A key of nobody's: the assertion is well-formed and signed, but no registered key verifies it.
    const stranger = await addKey(await createMachine(t, orgId, "enum-stranger"));
    const forged = (clientId: string) => assertion({ ...stranger, keyId: "not-a-key-id" }, { iss: clientId, sub: clientId });
    const answers: { status: number; body: Body; auth: string | null }[] = [];
    for (const clientId of ["enum-nobody", "enum-machine", app.clientId]) {
      const res = await form("/oauth/v2/token", {
        grant_type: "client_credentials",
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: await forged(clientId),
      });
      answers.push({ status: res.status, body: await json<Body>(res), auth: res.headers.get("www-authenticate") });
    }
    // No Basic challenge either: the client authenticated in the body (RFC 6749 §5.2).
    expect(answers[0]).toEqual({ status: 401, body: { error: "invalid_client", error_description: "client authentication failed" }, auth: null });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });
});
