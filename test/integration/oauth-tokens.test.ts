// OAuth 2.0 / OIDC token service end to end: discovery and client credentials
// (basic, post, private_key_jwt) with openid-client, the JWT profile grant with
// a jose-built assertion from an AddKey key file, introspection, userinfo,
// revocation, bearer acceptance by the v2 API, role claims, key rotation and
// the error paths (attack inputs included).
import { execFileSync } from "node:child_process";
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeJwt, importPKCS8, jwtVerify, SignJWT } from "jose";
import * as oidc from "openid-client";
import { sha256 } from "../../src/crypto/tokens.js";
import { newId } from "../../src/domain/ids.js";
import { ok } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { addMachineKeyFile, addMachineSecret, createMachine, createOrg, defaultOrgId, json, type KeyFile } from "../support/users.js";

let t: TestServer;
let orgId: string;

const addSecret = (userId: string) => addMachineSecret(t, userId);
const addKey = (userId: string) => addMachineKeyFile(t, userId);
async function setJwt(userId: string): Promise<void> {
  // Test setup: the access token type straight in the row.
  await t.server.db.prisma.user.update({ where: { id: userId }, data: { accessTokenType: "JWT" } });
}
async function form(path: string, body: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(t.url + path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(body) });
}
const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
const pkcs8 = (pem: string) => createPrivateKey(pem).export({ type: "pkcs8", format: "pem" }) as string;

async function assertion(kf: KeyFile, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: kf.userId, sub: kf.userId, aud: t.url, iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: "RS256", kid: kf.keyId, ...header })
    .sign(createPrivateKey(kf.key));
}

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

describe("discovery and JWKS", () => {
  it("publishes the metadata with the issuer and endpoints", async () => {
    for (const p of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const res = await fetch(t.url + p);
      expect(res.status).toBe(200);
      const doc = await json<Record<string, unknown>>(res);
      expect(doc.issuer).toBe(t.server.tokens.issuer);
      expect(doc.grant_types_supported).toEqual([
        "authorization_code",
        "refresh_token",
        "client_credentials",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:device_code",
      ]);
      // Nothing is advertised that is not served: the code flow, not the implicit or hybrid ones.
      expect(doc.response_types_supported).toEqual(["code"]);
      expect(doc.authorization_endpoint).toBe(`${t.server.tokens.issuer}/oauth/v2/authorize`);
    }
    const keys = await fetch(`${t.url}/oauth/v2/keys`);
    expect(keys.headers.get("cache-control")).toMatch(/max-age/);
    const jwks = await json<{ keys: { kid: string; kty: string; alg: string; d?: string }[] }>(keys);
    expect(jwks.keys.length).toBeGreaterThan(0);
    expect(jwks.keys[0]).toMatchObject({ kty: "RSA", alg: "RS256", use: "sig" });
    expect(jwks.keys[0]?.d).toBeUndefined();
  });
});

describe("client credentials (openid-client)", () => {
  let userId: string;
  let secret: string;
  let config: oidc.Configuration;
  beforeAll(async () => {
    userId = await createMachine(t, orgId, "cc-robot");
    secret = await addSecret(userId);
    // The issuer is the external URL (http://localhost:<port>): discover from the server's own URL.
    const issuer = t.server.tokens.issuer as string;
    expect(issuer).toBeDefined();
  });

  it("client_secret_basic: opaque token, accepted by the v2 API and introspection", async () => {
    config = await discover("cc-robot", {}, oidc.ClientSecretBasic(secret));
    const server = config.serverMetadata();
    const tok = await oidc.clientCredentialsGrant(config, { scope: "openid profile urn:svc:iam:org:project:id:svc:aud bogus" });
    expect(tok.token_type).toBe("bearer");
    expect(tok.expires_in).toBe(43200);
    expect(tok.scope).toBe("openid profile urn:svc:iam:org:project:id:svc:aud");
    expect(tok.access_token.split(".")).toHaveLength(1);
    const me = await rest(t.url, tok.access_token, "GET", `/v2/users/${userId}`);
    expect(me.status).toBe(200);
    const intro = await oidc.tokenIntrospection(config, tok.access_token);
    expect(intro).toMatchObject({ active: true, sub: userId, client_id: "cc-robot", token_type: "Bearer", iss: server.issuer, username: "cc-robot" });
    const info = await oidc.fetchUserInfo(config, tok.access_token, userId);
    expect(info.sub).toBe(userId);
    expect(info.preferred_username).toBe("cc-robot");
  });

  it("client_secret_post, and private_key_jwt with a key from AddKey", async () => {
    const post = await discover("cc-robot", { client_secret: secret }, oidc.ClientSecretPost(secret));
    const a = await oidc.clientCredentialsGrant(post, { scope: "urn:svc:iam:org:project:id:svc:aud" });
    expect((await rest(t.url, a.access_token, "GET", `/v2/users/${userId}`)).status).toBe(200);

    const kf = await addKey(userId);
    const pkj = await discover("cc-robot", {}, oidc.PrivateKeyJwt({ key: await importPKCS8(pkcs8(kf.key), "RS256"), kid: kf.keyId }));
    const b = await oidc.clientCredentialsGrant(pkj, { scope: "openid" });
    const intro = await oidc.tokenIntrospection(pkj, b.access_token);
    expect(intro.active).toBe(true);
    // Without the management audience the v2 API refuses the token.
    expect((await rest(t.url, b.access_token, "GET", `/v2/users/${userId}`)).status).toBe(401);
    await oidc.tokenRevocation(pkj, b.access_token);
    expect((await oidc.tokenIntrospection(pkj, b.access_token)).active).toBe(false);
  });

  it("JWT access tokens verify against the JWKS (jose and python3-jwt) and are accepted as bearer", async () => {
    const u = await createMachine(t, orgId, "cc-jwt");
    const s = await addSecret(u);
    await setJwt(u);
    const res = await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "openid urn:svc:iam:org:project:id:svc:aud" }, basic("cc-jwt", s));
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("pragma")).toBe("no-cache");
    const body = await json<{ access_token: string; id_token: string }>(res);
    const issuer = (await oidcMetadata()).issuer;
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const { payload, protectedHeader } = await jwtVerify(body.access_token, jwks, { issuer, typ: "at+jwt" });
    expect(protectedHeader.alg).toBe("RS256");
    expect(payload).toMatchObject({ sub: u, client_id: "cc-jwt" });
    expect(payload.aud).toContain("svc");
    const id = await jwtVerify(body.id_token, jwks, { issuer, audience: "cc-jwt" });
    expect(id.payload.sub).toBe(u);
    expect((await rest(t.url, body.access_token, "GET", `/v2/users/${u}`)).status).toBe(200);
    if (hasPythonJwt()) {
      const jwksText = await (await fetch(`${t.url}/oauth/v2/keys`)).text();
      const script =
        "import jwt,json,sys\nks=json.loads(sys.argv[1])['keys']\nh=jwt.get_unverified_header(sys.argv[2])\nk=[x for x in ks if x['kid']==h['kid']][0]\n" +
        "c=jwt.decode(sys.argv[2],jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(k)),algorithms=['RS256'],audience='svc',issuer=sys.argv[3])\nprint(c['sub'])";
      expect(execFileSync("/usr/bin/python3", ["-c", script, jwksText, body.access_token, issuer]).toString().trim()).toBe(u);
      const tampered = `${body.access_token.slice(0, -4)}AAAA`;
      expect(() => execFileSync("/usr/bin/python3", ["-c", script, jwksText, tampered, issuer], { stdio: "pipe" })).toThrow();
    }
  });
});

function hasPythonJwt(): boolean {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import jwt"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * openid-client discovery against the issuer (SVC_EXTERNAL_URL, here http://localhost:0 since the
 * port is chosen at start): requests to the issuer's origin are sent to the test server instead.
 */
async function discover(clientId: string, metadata: string | Partial<oidc.ClientMetadata>, auth?: oidc.ClientAuth): Promise<oidc.Configuration> {
  const issuer = t.server.tokens.issuer as string;
  const redirect: oidc.CustomFetch = (url, options) => fetch(url.replace(issuer, t.url), options as RequestInit);
  const config = await oidc.discovery(new URL(issuer), clientId, metadata, auth, { execute: [oidc.allowInsecureRequests], [oidc.customFetch]: redirect });
  config[oidc.customFetch] = redirect;
  return config;
}

async function oidcMetadata(): Promise<oidc.ServerMetadata> {
  const res = await fetch(`${t.url}/.well-known/openid-configuration`);
  const doc = await json<oidc.ServerMetadata>(res);
  // The issuer names the external URL; point every endpoint at the test server's address.
  const fix = (u: unknown) => (typeof u === "string" ? u.replace(doc.issuer, t.url) : u);
  return Object.fromEntries(Object.entries(doc).map(([k, v]) => [k, k === "issuer" ? v : fix(v)])) as oidc.ServerMetadata;
}

describe("JWT profile grant", () => {
  let kf: KeyFile;
  beforeAll(async () => {
    const u = await createMachine(t, orgId, "jwtp-robot");
    kf = await addKey(u);
  });
  const grant = (a: string, scope = "openid urn:svc:iam:org:project:id:svc:aud") =>
    form("/oauth/v2/token", { grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: a, scope });
  const issuer = () => t.server.tokens.issuer as string;

  it("issues a token for a jose-built assertion, once", async () => {
    const a = await assertion(kf, { aud: issuer() });
    const res = await grant(a);
    expect(res.status).toBe(200);
    const body = await json<{ access_token: string; expires_in: number; token_type: string; id_token?: string }>(res);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body.id_token).toBeDefined();
    expect((await rest(t.url, body.access_token, "GET", `/v2/users/${kf.userId}`)).status).toBe(200);
    const replay = await grant(a);
    expect(replay.status).toBe(400);
    expect((await json<{ error: string }>(replay)).error).toBe("invalid_grant");
  });

  it("honours an assertion sent many times at once exactly once (replays batched into one write are refused too)", async () => {
    // A machine of its own: the refused copies count against its failure limit.
    const own = await addKey(await createMachine(t, orgId, "jwtp-concurrent"));
    const a = await assertion(own, { aud: issuer() });
    const answers = await Promise.all(Array.from({ length: 24 }, () => grant(a)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    // Every other copy is refused: as a replay, or once the replays pass the client's failure limit, as rate limited.
    const refused = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${(await json<{ error: string }>(r)).error}`));
    expect(refused).toHaveLength(23);
    expect(refused.filter((e) => e === "400 invalid_grant").length).toBeGreaterThan(0);
    expect(refused.filter((e) => e !== "400 invalid_grant" && !e.startsWith("429 "))).toEqual([]);
  });

  it("one machine, its client ids: the id token's aud and azp are the one the client used (user id, username, login name)", async () => {
    const userId = await createMachine(t, orgId, "jwtp-names");
    const key = await addKey(userId);
    const secret = await addSecret(userId);
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const idToken = async (res: Response) => {
      expect(res.status).toBe(200);
      const body = await json<{ access_token: string; id_token: string }>(res);
      const { payload } = await jwtVerify(body.id_token, jwks, { issuer: issuer() });
      const intro = await json<{ active: boolean; client_id: string }>(await form("/oauth/v2/introspect", { token: body.access_token }, basic(userId, secret)));
      return { aud: payload.aud, azp: payload.azp, introspected: intro };
    };
    const domain = (await json<{ user: { preferredLoginName: string } }>(await rest(t.url, t.pat, "GET", `/v2/users/${userId}`))).user.preferredLoginName;
    for (const name of [userId, "jwtp-names", domain]) {
      // The JWT profile with iss = sub = that name ...
      const viaAssertion = await idToken(await grant(await assertion(key, { aud: issuer(), iss: name, sub: name })));
      expect({ name, aud: viaAssertion.aud, azp: viaAssertion.azp }).toEqual({ name, aud: [name], azp: name });
      // ... and client credentials with it as the client id.
      const viaSecret = await idToken(await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "openid" }, basic(name, secret)));
      expect({ name, aud: viaSecret.aud, azp: viaSecret.azp }).toEqual({ name, aud: [name], azp: name });
      // Either way the token is the machine's own: its other client ids introspect it.
      expect(viaSecret.introspected).toMatchObject({ active: true, client_id: name });
    }
  });

  it("refuses a removed key at once (the key cache is invalidated)", async () => {
    const u = await createMachine(t, orgId, "jwtp-removed");
    const key = await addKey(u);
    expect((await grant(await assertion(key, { aud: issuer() }))).status).toBe(200);
    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${u}/keys/${key.keyId}`)).status).toBe(200);
    const res = await grant(await assertion(key, { aud: issuer() }));
    expect(res.status).toBe(400);
    expect((await json<{ error: string }>(res)).error).toBe("invalid_grant");
  });

  it("refuses attack inputs with invalid_grant, never a 500", async () => {
    const now = Math.floor(Date.now() / 1000);
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pub = createPublicKey(kf.key).export({ format: "pem", type: "spki" }) as string;
    const head = (h: object) => Buffer.from(JSON.stringify(h)).toString("base64url");
    const claims = Buffer.from(JSON.stringify({ iss: kf.userId, sub: kf.userId, aud: issuer(), iat: now, exp: now + 300 })).toString("base64url");
    const { createHmac } = await import("node:crypto");
    const hs = `${head({ alg: "HS256", kid: kf.keyId })}.${claims}`;
    const cases: Record<string, string> = {
      none: `${head({ alg: "none", kid: kf.keyId })}.${claims}.`,
      hs256: `${hs}.${createHmac("sha256", pub).update(hs).digest("base64url")}`,
      unknownKid: await assertion({ ...kf, keyId: "nope" }, { aud: issuer() }),
      tampered: `${(await assertion(kf, { aud: issuer() })).slice(0, -6)}AAAAAA`,
      otherKey: await new SignJWT({ iss: kf.userId, sub: kf.userId, aud: issuer(), iat: now, exp: now + 300 })
        .setProtectedHeader({ alg: "RS256", kid: kf.keyId })
        .sign(other.privateKey),
      expired: await assertion(kf, { aud: issuer(), iat: now - 600, exp: now - 300 }),
      tooOld: await assertion(kf, { aud: issuer(), iat: now - 4000, exp: now + 300 }),
      future: await assertion(kf, { aud: issuer(), iat: now + 600, exp: now + 900 }),
      otherIssuer: await assertion(kf, { aud: "https://elsewhere.example" }),
      subMismatch: await assertion(kf, { aud: issuer(), sub: "someone-else" }),
      garbage: "a.b.c",
      notJwt: "hello",
    };
    for (const [name, a] of Object.entries(cases)) {
      const res = await grant(a);
      expect({ name, status: res.status }).toEqual({ name, status: 400 });
      expect({ name, error: (await json<{ error: string }>(res)).error }).toEqual({ name, error: "invalid_grant" });
    }
  });
});

describe("errors", () => {
  let secret: string;
  beforeAll(async () => {
    const u = await createMachine(t, orgId, "err-robot");
    secret = await addSecret(u);
  });

  it("invalid_client with 401 and WWW-Authenticate; other RFC 6749 errors", async () => {
    const bad = await form("/oauth/v2/token", { grant_type: "client_credentials" }, basic("err-robot", "wrong"));
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toMatch(/^Basic/);
    expect(bad.headers.get("cache-control")).toBe("no-store");
    expect((await json<{ error: string }>(bad)).error).toBe("invalid_client");
    const unknown = await form("/oauth/v2/token", { grant_type: "client_credentials", client_id: "nobody", client_secret: "x" });
    expect(unknown.status).toBe(401);
    const expectErr = async (res: Response, status: number, error: string) => {
      expect(res.status).toBe(status);
      expect((await json<{ error: string }>(res)).error).toBe(error);
    };
    await expectErr(await form("/oauth/v2/token", { grant_type: "password" }, basic("err-robot", secret)), 400, "unsupported_grant_type");
    await expectErr(await form("/oauth/v2/token", {}), 400, "invalid_request");
    await expectErr(
      await form("/oauth/v2/token", { grant_type: "client_credentials", client_id: "err-robot", client_secret: secret }, basic("err-robot", secret)),
      400,
      "invalid_request",
    );
    await expectErr(
      await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
      400,
      "invalid_request",
    );
    await expectErr(
      await fetch(`${t.url}/oauth/v2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials&grant_type=client_credentials",
      }),
      400,
      "invalid_request",
    );
    await expectErr(
      await fetch(`${t.url}/oauth/v2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `x=${"a".repeat(200_000)}`,
      }),
      400,
      "invalid_request",
    );
    await expectErr(
      await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "%E0%A4%A=1&&==" }),
      400,
      "invalid_request",
    );
    // Introspection: unknown tokens are inactive; only the caller's authentication fails.
    const intro = await form("/oauth/v2/introspect", { token: "nope" }, basic("err-robot", secret));
    expect(await json(intro)).toEqual({ active: false });
    expect((await form("/oauth/v2/introspect", { token: "nope" }, basic("err-robot", "bad"))).status).toBe(401);
    // Revocation of an unknown token: 200.
    expect((await form("/oauth/v2/revoke", { token: "nope" }, basic("err-robot", secret))).status).toBe(200);
    // Userinfo without or with a bad token.
    const noTok = await fetch(`${t.url}/oidc/v1/userinfo`);
    expect(noTok.status).toBe(401);
    expect(noTok.headers.get("www-authenticate")).toBe('Bearer realm="svc"');
    const badTok = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: "Bearer nope" } });
    expect(badTok.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("only the owning client may revoke; deactivation stops tokens at once", async () => {
    const a = await createMachine(t, orgId, "rev-a");
    const sa = await addSecret(a);
    const b = await createMachine(t, orgId, "rev-b");
    const sb = await addSecret(b);
    const tok = await json<{ access_token: string }>(
      await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "urn:svc:iam:org:project:id:svc:aud" }, basic("rev-a", sa)),
    );
    expect((await form("/oauth/v2/revoke", { token: tok.access_token }, basic("rev-b", sb))).status).toBe(400);
    expect((await rest(t.url, tok.access_token, "GET", `/v2/users/${a}`)).status).toBe(200);
    expect((await rest(t.url, t.pat, "POST", `/v2/users/${a}/deactivate`, {})).status).toBe(200);
    expect((await rest(t.url, tok.access_token, "GET", `/v2/users/${a}`)).status).toBe(401);
  });
});

describe("tenancy, role claims and key rotation", () => {
  it("a token from org A cannot read org B", async () => {
    const orgB = await createOrg(t, "Org B oauth");
    const inB = await createMachine(t, orgB, "in-b");
    const a = await createMachine(t, orgId, "org-a-robot");
    const s = await addSecret(a);
    const tok = await json<{ access_token: string }>(
      await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "urn:svc:iam:org:project:id:svc:aud" }, basic("org-a-robot", s)),
    );
    const res = await rest(t.url, tok.access_token, "GET", `/v2/users/${inB}`);
    expect([403, 404]).toContain(res.status);
  });

  it("carries role claims from a direct grant and from a project grant", async () => {
    // Projects, roles, the project grant and the user grants through the ProjectService / AuthorizationService RPCs (REST).
    const orgB = await createOrg(t, "Org B roles");
    const { projectId } = await ok(t, "rest", t.pat, "CreateProject", { organizationId: orgId, name: "roles-p", projectRoleAssertion: true });
    for (const roleKey of ["reader", "writer"]) await ok(t, "rest", t.pat, "AddProjectRole", { projectId, roleKey, displayName: roleKey });
    await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: orgB, roleKeys: ["reader"] });
    const direct = await createMachine(t, orgId, "roles-direct");
    const viaGrant = await createMachine(t, orgB, "roles-granted");
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: direct, projectId, roleKeys: ["reader", "writer"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: viaGrant, projectId, organizationId: orgB, roleKeys: ["reader"] });
    const db = t.server.db.prisma;
    const orgName = (await db.organization.findUniqueOrThrow({ where: { id: orgId } })).name;
    for (const [user, name, expected] of [
      [direct, "roles-direct", { reader: { [orgId]: orgName }, writer: { [orgId]: orgName } }],
      [viaGrant, "roles-granted", { reader: { [orgB]: "Org B roles" } }],
    ] as const) {
      const s = await addSecret(user);
      await setJwt(user);
      const body = await json<{ access_token: string; id_token: string }>(
        await form("/oauth/v2/token", { grant_type: "client_credentials", scope: `openid urn:svc:iam:org:project:id:${projectId}:aud` }, basic(name, s)),
      );
      const claim = `urn:svc:iam:org:project:${projectId}:roles`;
      expect(decodeJwt(body.access_token)[claim]).toEqual(expected);
      expect(decodeJwt(body.id_token)[claim]).toEqual(expected);
      const info = await json<Record<string, unknown>>(await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${body.access_token}` } }));
      expect(info[claim]).toEqual(expected);
      expect(info["urn:svc:iam:org:project:roles"]).toEqual(expected);
      const intro = await json<Record<string, unknown>>(await form("/oauth/v2/introspect", { token: body.access_token }, basic(name, s)));
      expect(intro[claim]).toEqual(expected);
    }
  });

  it("an API app introspects the tokens meant for its project (client_secret_basic)", async () => {
    // Test setup through the database: the project and its API app (secret stored as SHA-256).
    const db = t.server.db.prisma;
    const instanceId = t.server.instanceId;
    const projectId = newId();
    await db.project.create({ data: { id: projectId, instanceId, orgId, name: "introspecting-p" } });
    const appSecret = "app-secret-for-introspection-0123456789";
    await db.application.create({
      data: {
        id: newId(),
        instanceId,
        projectId,
        orgId,
        name: "api",
        type: "API",
        clientId: "api-app-1",
        secretHash: sha256(appSecret),
        authMethod: "client_secret_basic",
      },
    });
    const u = await createMachine(t, orgId, "introspected");
    const s = await addSecret(u);
    const tok = async (scope: string) =>
      (await json<{ access_token: string }>(await form("/oauth/v2/token", { grant_type: "client_credentials", scope }, basic("introspected", s)))).access_token;
    const forProject = await tok(`profile urn:svc:iam:org:project:id:${projectId}:aud`);
    const notForProject = await tok("profile");
    const intro = await json<Record<string, unknown>>(await form("/oauth/v2/introspect", { token: forProject }, basic("api-app-1", appSecret)));
    expect(intro).toMatchObject({ active: true, sub: u, client_id: "introspected", preferred_username: "introspected" });
    expect(intro.aud).toContain(projectId);
    expect(await json(await form("/oauth/v2/introspect", { token: notForProject }, basic("api-app-1", appSecret)))).toEqual({ active: false });
    expect((await form("/oauth/v2/introspect", { token: forProject }, basic("api-app-1", "wrong"))).status).toBe(401);
    // The app's own token (client credentials): the app is the subject, its project and itself the audience.
    const cc = await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "openid profile" }, basic("api-app-1", appSecret));
    expect(cc.status).toBe(200);
    const own = await json<{ access_token: string; id_token?: string; scope: string }>(cc);
    expect(own.id_token).toBeUndefined();
    // Nothing granted: RFC 6749 §3.3 has no empty scope, so the member is left out (here and in introspection).
    expect("scope" in own).toBe(false);
    const ownIntro = await json<Record<string, unknown>>(await form("/oauth/v2/introspect", { token: own.access_token }, basic("api-app-1", appSecret)));
    expect(ownIntro).toMatchObject({ active: true, sub: "api-app-1", client_id: "api-app-1", aud: [projectId, "api-app-1"] });
    expect(ownIntro.username).toBeUndefined();
    expect("scope" in ownIntro).toBe(false);
    // RFC 7662 §2.1: token is required.
    const missing = await form("/oauth/v2/introspect", {}, basic("api-app-1", appSecret));
    expect(missing.status).toBe(400);
    expect(await json(missing)).toMatchObject({ error: "invalid_request" });
  });

  it("a rotated key still verifies tokens issued before the rotation", async () => {
    const u = await createMachine(t, orgId, "rotate-robot");
    const s = await addSecret(u);
    await setJwt(u);
    const get = async () =>
      json<{ access_token: string }>(
        await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "urn:svc:iam:org:project:id:svc:aud" }, basic("rotate-robot", s)),
      );
    const before = await get();
    const rt = t.server.tokens;
    expect(await rt?.keys.rotate(true)).toBe(true);
    const after = await get();
    const kidOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[0] as string, "base64url").toString()).kid;
    expect(kidOf(before.access_token)).not.toBe(kidOf(after.access_token));
    const jwks = await json<{ keys: { kid: string }[] }>(await fetch(`${t.url}/oauth/v2/keys`));
    expect(jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([kidOf(before.access_token), kidOf(after.access_token)]));
    expect((await rest(t.url, before.access_token, "GET", `/v2/users/${u}`)).status).toBe(200);
    expect((await rest(t.url, after.access_token, "GET", `/v2/users/${u}`)).status).toBe(200);
  });
});
