// Pushed authorization requests (RFC 9126, issue 29): openid-client pushes the request (buildAuthorizationUrlWithPAR)
// and completes the code flow with the request_uri; the refusals: a request_uri used twice, expired, of another
// client, not from PAR; an application with require_pushed_authorization_requests refuses a plain request
// (invalid_request at its redirect URI); the endpoint's own errors (client authentication, a bad request) in JSON.
import { createPrivateKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { importPKCS8 } from "jose";
import { purgeExpiredTokens } from "../../src/domain/oauth/tokens.js";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import {
  authorizeGet,
  authRequestOf,
  discover,
  finish,
  issuerOf,
  loginClient,
  type OidcApp,
  oidc,
  oidcApp,
  redirectQuery,
  signIn,
  visit,
} from "../support/oidc.js";
import { admin, type Json } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const CB = "https://rp.example.com/cb";
let t: TestServer;
let login: Machine;
let projectId: string;
let web: OidcApp;
let other: OidcApp;
let alice: string;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient(t, orgId, "par-login-ui");
  projectId = await project(t, orgId, "PAR Project");
  web = await oidcApp(t, projectId, "par-web");
  other = await oidcApp(t, projectId, "par-other");
  await createHuman(t, orgId, "par-alice");
  alice = `par-alice@${domain}`;
}, 120_000);
afterAll(() => t?.stop());

const basic = (app: OidcApp) => `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(app.clientSecret)}`).toString("base64")}`;

/** POST /oauth/v2/par as `app` (client_secret_basic). */
async function push(app: OidcApp, params: Record<string, string>, auth = basic(app)): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${t.url}/oauth/v2/par`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: auth },
    body: new URLSearchParams(params),
  });
  expect(res.headers.get("cache-control")).toContain("no-store");
  return { status: res.status, body: (await res.json()) as Json };
}

const codeRequest = (extra: Record<string, string> = {}) => ({ response_type: "code", redirect_uri: CB, scope: "openid email", state: "s1", ...extra });

/** The page /oauth/v2/authorize answers with request_uri (400, never a redirect). */
async function refusedPage(clientId: string, requestUri: string): Promise<string> {
  const res = await authorizeGet(t, { client_id: clientId, request_uri: requestUri });
  expect(res.status).toBe(400);
  return res.text();
}

describe("discovery", () => {
  it("names the PAR endpoint", async () => {
    const doc = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as Json;
    expect(doc.pushed_authorization_request_endpoint).toBe(`${issuerOf(t)}/oauth/v2/par`);
    expect(doc.require_pushed_authorization_requests).toBe(false);
  });
});

describe("the code flow through PAR", () => {
  it("openid-client pushes the request and completes the flow with the request_uri", async () => {
    const config = await discover(t, web.clientId, web.clientSecret, oidc.ClientSecretBasic(web.clientSecret));
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: CB,
      scope: "openid email",
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    // Only the client and the reference travel through the browser.
    expect([...url.searchParams.keys()].sort()).toEqual(["client_id", "request_uri"]);
    expect(url.searchParams.get("request_uri")).toMatch(/^urn:ietf:params:oauth:request_uri:[\w-]{40,}$/);
    const authRequestId = authRequestOf(await visit(t, url));
    const callbackUrl = await finish(t, login, authRequestId, await signIn(t, login, alice));
    const tokens = await oidc.authorizationCodeGrant(config, new URL(callbackUrl), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()?.aud).toContain(web.clientId);
    expect(tokens.scope).toBe("openid email");

    // Used once: the same request_uri again is refused.
    expect(await refusedPage(web.clientId, url.searchParams.get("request_uri") as string)).toContain("invalid_request_uri");
  });

  it("a private_key_jwt client authenticates at the PAR endpoint with an assertion (openid-client), then at the token endpoint", async () => {
    const pkj = await oidcApp(t, projectId, "par-pkj", { authMethodType: "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" });
    const key = await admin(t, "AddApplicationKey", { projectId, appId: pkj.appId });
    const file = JSON.parse(Buffer.from(key.keyDetails, "base64").toString("utf8")) as { keyId: string; key: string };
    const pem = createPrivateKey(file.key).export({ type: "pkcs8", format: "pem" }) as string;
    const config = await discover(t, pkj.clientId, {}, oidc.PrivateKeyJwt({ key: await importPKCS8(pem, "RS256"), kid: file.keyId }));
    const verifier = oidc.randomPKCECodeVerifier();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: CB,
      scope: "openid",
      state: "pkj",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const callbackUrl = await finish(t, login, authRequestOf(await visit(t, url)), await signIn(t, login, alice));
    const tokens = await oidc.authorizationCodeGrant(config, new URL(callbackUrl), { pkceCodeVerifier: verifier, expectedState: "pkj", idTokenExpected: true });
    expect(tokens.claims()?.aud).toContain(pkj.clientId);
    // Without its assertion (client_id only, as a public client would): invalid_client.
    const bare = await fetch(`${t.url}/oauth/v2/par`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: pkj.clientId, ...codeRequest() }),
    });
    expect([bare.status, ((await bare.json()) as Json).error]).toEqual([401, "invalid_client"]);
  });

  it("answers 201 with a request_uri and expires_in; a public client names itself with client_id", async () => {
    const pushed = await push(web, codeRequest());
    expect(pushed.status).toBe(201);
    expect(pushed.body).toEqual({ request_uri: expect.stringMatching(/^urn:ietf:params:oauth:request_uri:/), expires_in: 60 });

    const spa = await oidcApp(t, projectId, "par-spa", { appType: "OIDC_APP_TYPE_USER_AGENT", authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE" });
    const res = await fetch(`${t.url}/oauth/v2/par`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: spa.clientId,
        ...codeRequest({ code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256" }),
      }),
    });
    expect(res.status).toBe(201);
    const { request_uri } = (await res.json()) as { request_uri: string };
    expect(authRequestOf(await authorizeGet(t, { client_id: spa.clientId, request_uri }))).toEqual(expect.any(String));
  });

  it("takes only the pushed parameters: ones added in the browser are ignored", async () => {
    const { body } = await push(web, codeRequest({ state: "pushed-state" }));
    const res = await authorizeGet(t, { client_id: web.clientId, request_uri: body.request_uri as string, state: "browser-state", scope: "openid profile" });
    const authRequestId = authRequestOf(res);
    const callback = new URL(await finish(t, login, authRequestId, await signIn(t, login, alice)));
    expect(callback.searchParams.get("state")).toBe("pushed-state");
  });
});

describe("refusals", () => {
  it("a request_uri of another client is refused, and stays usable by its own", async () => {
    const { body } = await push(web, codeRequest());
    expect(await refusedPage(other.clientId, body.request_uri as string)).toContain("invalid_request_uri");
    expect(authRequestOf(await authorizeGet(t, { client_id: web.clientId, request_uri: body.request_uri as string }))).toEqual(expect.any(String));
  });

  it("a request_uri not from PAR is refused", async () => {
    for (const uri of ["urn:ietf:params:oauth:request_uri:made-up-value", "https://rp.example.com/request.jwt", "urn:ietf:params:oauth:request_uri:"]) {
      expect(await refusedPage(web.clientId, uri)).toContain("invalid_request_uri");
    }
  });

  it("an application requiring PAR refuses a plain request (invalid_request at its redirect URI) and accepts a pushed one", async () => {
    const strict = await oidcApp(t, projectId, "par-required", { requirePushedAuthorizationRequests: true });
    const got = await admin(t, "GetApplication", { projectId, appId: strict.appId });
    expect(got.app.oidc.requirePushedAuthorizationRequests).toBe(true);
    const plain = redirectQuery(await authorizeGet(t, { client_id: strict.clientId, ...codeRequest() }));
    expect(plain).toMatchObject({ error: "invalid_request", state: "s1", iss: issuerOf(t) });
    expect(plain.error_description).toContain("pushed");
    const { status, body } = await push(strict, codeRequest());
    expect(status).toBe(201);
    expect(authRequestOf(await authorizeGet(t, { client_id: strict.clientId, request_uri: body.request_uri as string }))).toEqual(expect.any(String));
  });

  it("the endpoint refuses bad client credentials (invalid_client, 401) and bad requests in JSON, storing nothing", async () => {
    const wrong = await push(web, codeRequest(), `Basic ${Buffer.from(`${encodeURIComponent(web.clientId)}:wrong`).toString("base64")}`);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("invalid_client");
    const cases: [Record<string, string>, string][] = [
      [codeRequest({ redirect_uri: "https://evil.example.com/cb" }), "invalid_request"],
      [codeRequest({ scope: "email" }), "invalid_scope"],
      [codeRequest({ response_type: "token" }), "unsupported_response_type"],
      [codeRequest({ request_uri: "urn:ietf:params:oauth:request_uri:x" }), "invalid_request"],
      [codeRequest({ client_id: other.clientId }), "invalid_request"],
    ];
    for (const [params, error] of cases) {
      const res = await push(web, params);
      expect({ params, status: res.status, error: res.body.error }).toEqual({ params, status: 400, error });
      expect(res.body.request_uri).toBeUndefined();
    }
    // An application deactivated since: invalid_client, 401.
    const gone = await oidcApp(t, projectId, "par-deactivated");
    await admin(t, "DeactivateApplication", { projectId, appId: gone.appId });
    const deactivated = await push(gone, codeRequest());
    expect([deactivated.status, deactivated.body.error]).toEqual([401, "invalid_client"]);
    const get = await fetch(`${t.url}/oauth/v2/par`);
    expect(get.status).toBe(405);
  });

  it("at most 5,000 usable pushes per client (429, Retry-After), expired ones leave the count and are purged (moves the clock)", async () => {
    const capped = await oidcApp(t, projectId, "par-capped");
    const now = t.server.tokens.clock().getTime();
    // 5,000 live pushes of this client, written at once (one statement).
    const expires = new Date(now + 30_000);
    await t.server.db.prisma.$executeRaw`
      INSERT INTO "PushedAuthRequest" ("id", "instanceId", "clientId", "refHash", "params", "expiresAt", "createdAt")
      SELECT 'cap-' || n, ${t.server.instanceId}, ${capped.clientId}, convert_to('cap-' || n, 'UTF8'), '{}'::jsonb, ${expires}, ${expires}
      FROM generate_series(1, 5000) AS n`;
    const res = await fetch(`${t.url}/oauth/v2/par`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(capped) },
      body: new URLSearchParams(codeRequest()),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(((await res.json()) as Json).error).toBe("slow_down");
    expect((await push(web, codeRequest())).status).toBe(201);
    t.advanceClock(31_000);
    expect((await push(capped, codeRequest())).status).toBe(201);
    await purgeExpiredTokens(t.server.tokens);
    expect(await t.server.db.prisma.pushedAuthRequest.count({ where: { clientId: capped.clientId } })).toBe(1);
  });

  it("a request_uri past its 60 seconds is refused (last: moves the clock)", async () => {
    const { body } = await push(web, codeRequest());
    t.advanceClock(61_000);
    expect(await refusedPage(web.clientId, body.request_uri as string)).toContain("invalid_request_uri");
  });
});
