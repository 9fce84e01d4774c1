// API applications' own tokens (client_credentials with client_secret_basic,
// client_secret_post and private_key_jwt): what they carry, who may use them
// and when they stop working; and the urn:svc:iam:user:metadata claim of user
// tokens. Everything through the real server with openid-client, jose and fetch.
import { createPrivateKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeJwt, jwtVerify, SignJWT } from "jose";
import * as oidc from "openid-client";
import { sha256 } from "../../src/crypto/tokens.js";
import { resolveToken } from "../../src/domain/oauth/tokens.js";
import { ok as orgOk } from "../support/orgs.js";
import { call, ok, project } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { addMachineSecret, b64, createMachine, createOrg, defaultOrgId, json } from "../support/users.js";

const MGMT = "urn:svc:iam:org:project:id:svc:aud";
const METADATA = "urn:svc:iam:user:metadata";

let t: TestServer;
let orgId: string;
let issuer: string;

interface App {
  appId: string;
  clientId: string;
  clientSecret?: string;
  projectId: string;
}
interface AppKeyFile {
  type: string;
  keyId: string;
  key: string;
  appId: string;
  clientId: string;
}
type Intro = Record<string, unknown>;

async function createApp(projectId: string, name: string, api: Record<string, string> = {}): Promise<App> {
  const out = await ok(t, "rest", t.pat, "CreateApplication", { projectId, name, api });
  return { appId: out.appId, clientId: out.clientId, clientSecret: out.clientSecret || undefined, projectId };
}
async function addAppKey(app: App): Promise<AppKeyFile> {
  const key = await ok(t, "rest", t.pat, "AddApplicationKey", { projectId: app.projectId, appId: app.appId });
  return JSON.parse(Buffer.from(key.keyDetails, "base64").toString("utf8")) as AppKeyFile;
}
async function form(path: string, body: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(t.url + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body) });
}
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
const secretOf = (app: App) => app.clientSecret as string;

interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope?: string;
  id_token?: string;
}
async function ccBasic(app: App, scope?: string): Promise<TokenBody> {
  const res = await form("/oauth/v2/token", { grant_type: "client_credentials", ...(scope ? { scope } : {}) }, basic(app.clientId, secretOf(app)));
  expect(res.status).toBe(200);
  return json<TokenBody>(res);
}
async function introspect(token: string, caller: App): Promise<Intro> {
  const res = await form("/oauth/v2/introspect", { token }, basic(caller.clientId, secretOf(caller)));
  expect(res.status).toBe(200);
  return json<Intro>(res);
}
async function userinfo(token: string): Promise<Response> {
  return fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${token}` } });
}

/** A client assertion (RFC 7523 §2.2) signed with an AddApplicationKey key file. */
async function clientAssertion(kf: AppKeyFile, claims: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: "RS256", kid: kf.keyId })
    .setIssuer(kf.clientId)
    .setSubject(kf.clientId)
    .setAudience(issuer)
    .setJti(crypto.randomUUID())
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(createPrivateKey(kf.key));
}

/** The last request openid-client sent, to prove which client authentication it used. */
let lastRequest: { authorization: string | null; body: string } | undefined;

/** openid-client against the issuer (SVC_EXTERNAL_URL); requests to its origin go to the test server. */
async function discover(clientId: string, metadata: Partial<oidc.ClientMetadata>, auth: oidc.ClientAuth): Promise<oidc.Configuration> {
  const redirect: oidc.CustomFetch = (url, options) => {
    const headers = new Headers(options.headers as ConstructorParameters<typeof Headers>[0]);
    lastRequest = { authorization: headers.get("authorization"), body: String(options.body ?? "") };
    return fetch(url.replace(issuer, t.url), options as RequestInit);
  };
  const config = await oidc.discovery(new URL(issuer), clientId, metadata, auth, { execute: [oidc.allowInsecureRequests], [oidc.customFetch]: redirect });
  config[oidc.customFetch] = redirect;
  return config;
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

describe("client_credentials for API applications", () => {
  let projectId: string;
  let app: App;
  /** A second API app of the same project: a resource server introspecting the first app's tokens. */
  let rs: App;
  beforeAll(async () => {
    projectId = await project(t, orgId, "app-tokens");
    app = await createApp(projectId, "cc-basic");
    rs = await createApp(projectId, "resource-server");
  });

  it("client_secret_basic with openid-client: an opaque token for the app itself, user scopes and the management audience dropped", async () => {
    const config = await discover(app.clientId, {}, oidc.ClientSecretBasic(secretOf(app)));
    const tok = await oidc.clientCredentialsGrant(config, {
      scope: `openid profile email phone offline_access ${METADATA} ${MGMT} urn:svc:iam:org:projects:roles`,
    });
    expect(lastRequest?.authorization).toMatch(/^Basic /);
    expect(lastRequest?.body).not.toContain("client_secret");
    expect(tok.token_type).toBe("bearer");
    expect(tok.expires_in).toBe(43200);
    expect(tok.scope ?? "").toBe("");
    expect(tok.id_token).toBeUndefined();
    expect(tok.access_token.split(".")).toHaveLength(1);
    const intro = await oidc.tokenIntrospection(config, tok.access_token);
    expect(intro).toMatchObject({ active: true, sub: app.clientId, client_id: app.clientId, token_type: "Bearer", iss: issuer });
    expect(intro.aud).toEqual([projectId, app.clientId]);
    expect(intro.exp).toBe((intro.iat as number) + 43200);
  });

  it("a client id names the application before a machine user spelt alike, whether or not the app's record is cached", async () => {
    const named = await createApp(projectId, "named-alike");
    const machineId = await createMachine(t, orgId, named.clientId);
    const machineSecret = await addMachineSecret(t, machineId);
    expect(machineSecret).toBeTruthy();
    // Concurrent first requests (one read of the client for all of them), then again after the app's 1 s cache life.
    for (const wait of [0, 1_100]) {
      await new Promise((r) => setTimeout(r, wait));
      const [asApp, asMachine] = await Promise.all([
        Promise.all(Array.from({ length: 5 }, () => form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(named.clientId, secretOf(named))))),
        Promise.all(Array.from({ length: 5 }, () => form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(named.clientId, machineSecret)))),
      ]);
      for (const res of asApp) {
        expect(res.status).toBe(200);
        const intro = await introspect((await json<TokenBody>(res)).access_token, rs);
        expect(intro).toMatchObject({ active: true, sub: named.clientId, client_id: named.clientId });
        expect(intro.username).toBeUndefined();
      }
      for (const res of asMachine) {
        expect(res.status).toBe(401);
        expect(await json<{ error: string }>(res)).toMatchObject({ error: "invalid_client" });
      }
    }
  });

  it("client_secret_post with openid-client; the project audience and org scopes of the app's own project are kept, others dropped", async () => {
    const other = await project(t, orgId, "app-tokens-other");
    const config = await discover(app.clientId, { client_secret: secretOf(app) }, oidc.ClientSecretPost(secretOf(app)));
    const scope = `urn:svc:iam:org:project:id:${projectId}:aud urn:svc:iam:org:project:id:${other}:aud urn:svc:iam:org:id:${orgId} urn:svc:iam:org:project:role:x`;
    const tok = await oidc.clientCredentialsGrant(config, { scope });
    expect(lastRequest?.authorization).toBeNull();
    expect(lastRequest?.body).toContain("client_secret=");
    expect(tok.scope).toBe(`urn:svc:iam:org:project:id:${projectId}:aud urn:svc:iam:org:id:${orgId}`);
    const intro = await introspect(tok.access_token, app);
    expect(intro.aud).toEqual([projectId, app.clientId]);
    expect(intro.aud).not.toContain(other);
  });

  it("private_key_jwt with a jose-signed assertion from an AddApplicationKey key file, single use", async () => {
    const jwtApp = await createApp(projectId, "cc-pkj", { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" });
    expect(jwtApp.clientSecret).toBeUndefined();
    const kf = await addAppKey(jwtApp);
    expect(kf.clientId).toBe(jwtApp.clientId);
    const assertion = await clientAssertion(kf);
    const grant = (a: string) =>
      form("/oauth/v2/token", {
        grant_type: "client_credentials",
        client_id: jwtApp.clientId,
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: a,
      });
    const res = await grant(assertion);
    expect(res.status).toBe(200);
    const tok = await json<TokenBody>(res);
    expect(tok).toMatchObject({ token_type: "Bearer", expires_in: 43200 });
    expect((await introspect(tok.access_token, rs)).sub).toBe(jwtApp.clientId);
    // The assertion is recorded in the database (every replica refuses a replay).
    const replay = await grant(assertion);
    expect(replay.status).toBe(401);
    expect((await json<{ error: string }>(replay)).error).toBe("invalid_client");
    // A key of another app does not authenticate this one.
    const stranger = await addAppKey(await createApp(projectId, "cc-pkj-2", { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" }));
    const forged = await grant(await clientAssertion({ ...stranger, clientId: jwtApp.clientId }));
    expect(forged.status).toBe(401);
  });

  it("refuses a wrong secret with 401 invalid_client, challenging for Basic only a client that used Basic (RFC 6749 §5.2)", async () => {
    for (const [res, challenge] of [
      [await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(app.clientId, "wrong")), /^Basic realm=/],
      [await form("/oauth/v2/token", { grant_type: "client_credentials", client_id: app.clientId, client_secret: "wrong" }), null],
    ] as const) {
      expect(res.status).toBe(401);
      if (challenge) expect(res.headers.get("www-authenticate")).toMatch(challenge);
      else expect(res.headers.get("www-authenticate")).toBeNull();
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect((await json<{ error: string }>(res)).error).toBe("invalid_client");
    }
  });

  it("an app registered for private_key_jwt is refused a client secret, even a matching one", async () => {
    const jwtApp = await createApp(projectId, "pkj-no-secret", { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" });
    // Test setup through the database: a secret hash the API never gives such an app.
    const secret = "a-secret-the-app-must-not-use-0123456789";
    await t.server.db.prisma.application.update({ where: { id: jwtApp.appId }, data: { secretHash: sha256(secret) } });
    for (const res of [
      await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(jwtApp.clientId, secret)),
      await form("/oauth/v2/token", { grant_type: "client_credentials", client_id: jwtApp.clientId, client_secret: secret }),
    ]) {
      expect(res.status).toBe(401);
      expect((await json<{ error: string }>(res)).error).toBe("invalid_client");
    }
  });

  it("an OIDC application is refused with unauthorized_client", async () => {
    const out = await ok(t, "rest", t.pat, "CreateApplication", {
      projectId,
      name: "web-app",
      oidc: {
        redirectUris: ["https://app.example.com/cb"],
        grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
        responseTypes: ["OIDC_RESPONSE_TYPE_CODE"],
        appType: "OIDC_APP_TYPE_WEB",
        authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC",
      },
    });
    expect(out.clientSecret).toEqual(expect.any(String));
    const res = await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(out.clientId, out.clientSecret));
    expect(res.status).toBe(400);
    expect((await json<{ error: string }>(res)).error).toBe("unauthorized_client");
    // Its credentials are right: a wrong secret is an authentication failure instead.
    expect((await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(out.clientId, "wrong"))).status).toBe(401);
  });

  it("JWT access tokens verify against /oauth/v2/keys and name the app as subject", async () => {
    const jwtApp = await createApp(projectId, "cc-jwt", { accessTokenType: "ACCESS_TOKEN_TYPE_JWT" });
    const tok = await ccBasic(jwtApp, `openid ${MGMT}`);
    expect(tok.id_token).toBeUndefined();
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const { payload, protectedHeader } = await jwtVerify(tok.access_token, jwks, { issuer, typ: "at+jwt", audience: projectId });
    expect(protectedHeader.alg).toBe("RS256");
    // No scope was granted: no scope claim (an empty one is not a scope, RFC 6749 §3.3).
    expect(payload).toMatchObject({ sub: jwtApp.clientId, client_id: jwtApp.clientId });
    expect(payload.aud).toEqual([projectId, jwtApp.clientId]);
    expect(payload.exp).toBe((payload.iat as number) + 43200);
    expect(Object.keys(payload).sort()).toEqual(["aud", "client_id", "exp", "iat", "iss", "jti", "nbf", "sub"]);
    const intro = await introspect(tok.access_token, rs);
    expect(intro).toMatchObject({ active: true, sub: jwtApp.clientId, jti: payload.jti });
  });

  it("introspection: the app's fields and no user claims; inactive for an app of another project", async () => {
    const tok = await ccBasic(app, `urn:svc:iam:org:project:id:${projectId}:aud`);
    const intro = await introspect(tok.access_token, rs);
    expect(intro).toEqual({
      active: true,
      scope: `urn:svc:iam:org:project:id:${projectId}:aud`,
      client_id: app.clientId,
      token_type: "Bearer",
      exp: expect.any(Number),
      iat: expect.any(Number),
      nbf: expect.any(Number),
      sub: app.clientId,
      aud: [projectId, app.clientId],
      iss: issuer,
      jti: expect.any(String),
    });
    const elsewhere = await createApp(await project(t, orgId, "app-tokens-elsewhere"), "elsewhere");
    expect(await introspect(tok.access_token, elsewhere)).toEqual({ active: false });
  });

  it("userinfo answers 401 invalid_token: there is no user", async () => {
    const tok = await ccBasic(app, "openid profile");
    for (const res of [
      await userinfo(tok.access_token),
      await fetch(`${t.url}/oidc/v1/userinfo`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ access_token: tok.access_token }),
      }),
    ]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="svc", error="invalid_token"');
      expect(await json(res)).toEqual({ error: "invalid_token" });
    }
    const config = await discover(app.clientId, {}, oidc.ClientSecretBasic(secretOf(app)));
    await expect(oidc.fetchUserInfo(config, tok.access_token, oidc.skipSubjectCheck)).rejects.toThrow();
  });

  it("the v2 API (REST and Connect) and SCIM refuse the app's token as unauthenticated", async () => {
    const tok = await ccBasic(app, MGMT);
    expect((await rest(t.url, tok.access_token, "GET", "/v2/instance")).status).toBe(401);
    const connect = await call(t, "connect", tok.access_token, "GetProject", { projectId });
    expect(connect.code).toBe("unauthenticated");
    const scim = await fetch(`${t.url}/scim/v2/${orgId}/Users`, { headers: { authorization: `Bearer ${tok.access_token}` } });
    expect(scim.status).toBe(401);
    // The same calls with the instance admin's PAT work: the refusal is about the token.
    expect((await call(t, "connect", t.pat, "GetProject", { projectId })).code).toBe("ok");
    expect((await fetch(`${t.url}/scim/v2/${orgId}/Users`, { headers: { authorization: `Bearer ${t.pat}` } })).status).toBe(200);
  });

  it("revocation (RFC 7009) by the app ends the token; another app may not revoke it", async () => {
    const tok = await ccBasic(app);
    expect((await introspect(tok.access_token, rs)).active).toBe(true);
    const refused = await form("/oauth/v2/revoke", { token: tok.access_token }, basic(rs.clientId, secretOf(rs)));
    expect(refused.status).toBe(400);
    expect((await json<{ error: string }>(refused)).error).toBe("unauthorized_client");
    expect((await introspect(tok.access_token, rs)).active).toBe(true);
    const config = await discover(app.clientId, {}, oidc.ClientSecretBasic(secretOf(app)));
    await oidc.tokenRevocation(config, tok.access_token);
    expect(await introspect(tok.access_token, rs)).toEqual({ active: false });
    expect(await introspect(tok.access_token, app)).toEqual({ active: false });
  });
});

describe("an app's token stops working with the app", () => {
  /** A project with the app under test and a resource server app that introspects its tokens. */
  async function setup(name: string, org = orgId, tokenType = "ACCESS_TOKEN_TYPE_BEARER") {
    const projectId = await project(t, org, name);
    const app = await createApp(projectId, "client", { accessTokenType: tokenType });
    const rs = await createApp(projectId, "rs");
    const tok = (await ccBasic(app)).access_token;
    // Introspected once first, so the server has the token in its cache.
    expect((await introspect(tok, rs)).active).toBe(true);
    return { projectId, app, rs, tok };
  }
  /** What the server's own token resolution (the same runtime and caches) says. */
  const alive = async (token: string) => (await resolveToken(t.server.tokens, token, new Date())) !== undefined;

  it("DeactivateApplication ends it at once (opaque and JWT); ReactivateApplication brings it back", async () => {
    for (const type of ["ACCESS_TOKEN_TYPE_BEARER", "ACCESS_TOKEN_TYPE_JWT"]) {
      const { projectId, app, rs, tok } = await setup(`deact-app-${type}`, orgId, type);
      await ok(t, "rest", t.pat, "DeactivateApplication", { projectId, appId: app.appId });
      expect(await introspect(tok, rs)).toEqual({ active: false });
      expect((await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(app.clientId, secretOf(app)))).status).toBe(401);
      await ok(t, "rest", t.pat, "ReactivateApplication", { projectId, appId: app.appId });
      expect((await introspect(tok, rs)).active).toBe(true);
    }
  });

  it("DeleteApplication ends it at once (its token rows go with it)", async () => {
    const { projectId, app, rs, tok } = await setup("delete-app");
    await ok(t, "rest", t.pat, "DeleteApplication", { projectId, appId: app.appId });
    expect(await introspect(tok, rs)).toEqual({ active: false });
    expect(await t.server.db.prisma.oAuthToken.count({ where: { appId: app.appId } })).toBe(0);
  });

  it("DeactivateProject ends it at once", async () => {
    const { projectId, rs, tok } = await setup("deact-project");
    expect(await alive(tok)).toBe(true);
    await ok(t, "rest", t.pat, "DeactivateProject", { projectId });
    // No app of the project can introspect now: the server's token resolution is the observer.
    expect(await alive(tok)).toBe(false);
    expect((await form("/oauth/v2/introspect", { token: tok }, basic(rs.clientId, secretOf(rs)))).status).toBe(401);
    await ok(t, "rest", t.pat, "ReactivateProject", { projectId });
    expect((await introspect(tok, rs)).active).toBe(true);
  });

  it("DeactivateOrganization ends it at once", async () => {
    const org = await createOrg(t, "App token org");
    const { rs, tok } = await setup("deact-org", org);
    expect(await alive(tok)).toBe(true);
    await orgOk(t, "rest", t.pat, "DeactivateOrganization", { organizationId: org });
    expect(await alive(tok)).toBe(false);
    expect((await form("/oauth/v2/introspect", { token: tok }, basic(rs.clientId, secretOf(rs)))).status).toBe(401);
  });

  it("RegenerateClientSecret retires the old secret and the tokens it got (issue 11, finding 9)", async () => {
    const { projectId, app, rs, tok } = await setup("regen-secret");
    const again = await ok(t, "rest", t.pat, "RegenerateClientSecret", { projectId, appId: app.appId });
    expect((await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic(app.clientId, secretOf(app)))).status).toBe(401);
    const fresh = (await ccBasic({ ...app, clientSecret: again.clientSecret })).access_token;
    expect((await introspect(tok, rs)).active).toBe(false);
    expect((await introspect(fresh, rs)).active).toBe(true);
  });
});

describe("the urn:svc:iam:user:metadata claim", () => {
  let userId: string;
  let secret: string;
  const setMetadata = async (id: string, metadata: { key: string; value: string }[]) =>
    expect((await rest(t.url, t.pat, "POST", `/v2/users/${id}/metadata`, { metadata })).status).toBe(200);
  const token = async (username: string, s: string, scope: string) =>
    json<TokenBody>(await form("/oauth/v2/token", { grant_type: "client_credentials", scope }, { ...basic(username, s) }));
  const introspectAs = async (tok: string, username: string, s: string) => json<Intro>(await form("/oauth/v2/introspect", { token: tok }, basic(username, s)));
  const info = async (tok: string) => {
    const res = await userinfo(tok);
    expect(res.status).toBe(200);
    return json<Intro>(res);
  };

  beforeAll(async () => {
    userId = await createMachine(t, orgId, "meta-robot");
    const res = await rest(t.url, t.pat, "POST", `/v2/users/${userId}/secret`, {});
    secret = (await json<{ clientSecret: string }>(res)).clientSecret;
    await setMetadata(userId, [
      { key: "team", value: b64("blue") },
      { key: "bin", value: Buffer.from([0, 255, 1]).toString("base64") },
    ]);
  });

  it("is in the ID token, userinfo and introspection when the scope was granted, values base64-encoded", async () => {
    const tok = await token("meta-robot", secret, `openid ${METADATA}`);
    expect(tok.scope).toBe(`openid ${METADATA}`);
    const expected = { team: b64("blue"), bin: "AP8B" };
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const id = await jwtVerify(tok.id_token as string, jwks, { issuer, audience: "meta-robot" });
    expect(id.payload[METADATA]).toEqual(expected);
    expect((await info(tok.access_token))[METADATA]).toEqual(expected);
    expect((await introspectAs(tok.access_token, "meta-robot", secret))[METADATA]).toEqual(expected);
  });

  it("carries at most 16 KiB of metadata, whole entries in key order, however much the user holds", async () => {
    const big = await createMachine(t, orgId, "meta-big");
    const s = (await json<{ clientSecret: string }>(await rest(t.url, t.pat, "POST", `/v2/users/${big}/secret`, {}))).clientSecret;
    // 200 KiB of metadata: 50 entries of 4 KiB.
    const value = Buffer.alloc(4096, 120).toString("base64");
    await setMetadata(
      big,
      Array.from({ length: 50 }, (_, i) => ({ key: `k${String(i).padStart(2, "0")}`, value })),
    );
    const tok = await token("meta-big", s, `openid ${METADATA}`);
    for (const claim of [
      decodeJwt(tok.id_token as string)[METADATA] as Record<string, string>,
      (await info(tok.access_token))[METADATA] as Record<string, string>,
      (await introspectAs(tok.access_token, "meta-big", s))[METADATA] as Record<string, string>,
    ]) {
      const keys = Object.keys(claim);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys).toEqual(keys.map((_, i) => `k${String(i).padStart(2, "0")}`));
      expect(Object.values(claim).every((v) => v === value)).toBe(true);
      expect(JSON.stringify(claim).length).toBeLessThanOrEqual(16 * 1024 + 64);
    }
  });

  it("is absent without the scope, and absent when the user has no metadata", async () => {
    const tok = await token("meta-robot", secret, "openid profile");
    expect(decodeJwt(tok.id_token as string)[METADATA]).toBeUndefined();
    expect((await info(tok.access_token))[METADATA]).toBeUndefined();
    const intro = await introspectAs(tok.access_token, "meta-robot", secret);
    expect(intro.active).toBe(true);
    expect(intro[METADATA]).toBeUndefined();

    const bare = await createMachine(t, orgId, "meta-none");
    const s = (await json<{ clientSecret: string }>(await rest(t.url, t.pat, "POST", `/v2/users/${bare}/secret`, {}))).clientSecret;
    const none = await token("meta-none", s, `openid ${METADATA}`);
    expect(none.scope).toBe(`openid ${METADATA}`);
    expect(decodeJwt(none.id_token as string)).not.toHaveProperty(METADATA);
    expect(await info(none.access_token)).not.toHaveProperty(METADATA);
    expect(await introspectAs(none.access_token, "meta-none", s)).not.toHaveProperty(METADATA);
  });

  it("follows SetUserMetadata and DeleteUserMetadata at once for a token already in use", async () => {
    const tok = await token("meta-robot", secret, `openid ${METADATA}`);
    expect((await info(tok.access_token))[METADATA]).toEqual({ team: b64("blue"), bin: "AP8B" });
    expect((await introspectAs(tok.access_token, "meta-robot", secret))[METADATA]).toEqual({ team: b64("blue"), bin: "AP8B" });
    await setMetadata(userId, [{ key: "team", value: b64("red") }]);
    expect((await info(tok.access_token))[METADATA]).toEqual({ team: b64("red"), bin: "AP8B" });
    expect((await introspectAs(tok.access_token, "meta-robot", secret))[METADATA]).toEqual({ team: b64("red"), bin: "AP8B" });
    const del = await fetch(`${t.url}/v2/users/${userId}/metadata?keys=team&keys=bin`, { method: "DELETE", headers: { authorization: `Bearer ${t.pat}` } });
    expect(del.status).toBe(200);
    expect(await info(tok.access_token)).not.toHaveProperty(METADATA);
    expect(await introspectAs(tok.access_token, "meta-robot", secret)).not.toHaveProperty(METADATA);
  });
});
