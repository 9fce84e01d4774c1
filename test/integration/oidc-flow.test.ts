// The authorization code flow end to end with openid-client as the relying party and a login UI driving
// SessionService + OIDCService: a confidential client (client_secret_basic) and a public one (PKCE, no secret),
// then refresh, userinfo, revocation and RP-initiated logout; what the ID token says; prompt=none, prompt=login and
// max_age; the app's own login UI; many flows at once.
import { createPrivateKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeJwt, importPKCS8, jwtVerify } from "jose";
import { createHuman, defaultOrgId, type Machine, PASSWORD, project } from "../support/fixtures.js";
import {
  authorizeGet,
  authRequestOf,
  codeFlow,
  discover,
  finish,
  issuerOf,
  loginClient,
  type OidcApp,
  oidc,
  oidcApp,
  postForm,
  redirectQuery,
  signIn,
  visit,
} from "../support/oidc.js";
import { admin, type Json, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let login: Machine;
let projectId: string;
let web: OidcApp;
let spa: OidcApp;
let aliceId: string;
let alice: string;

beforeAll(async () => {
  t = await startTestServer({ SVC_LOGIN_UI_ALLOWED_ORIGINS: "https://login.example.com" });
  orgId = await defaultOrgId(t);
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient(t, orgId, "flow-login-ui");
  projectId = await project(t, orgId, "Flow Project", ["reader"]);
  web = await oidcApp(t, projectId, "web");
  spa = await oidcApp(t, projectId, "spa", { appType: "OIDC_APP_TYPE_USER_AGENT", authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE" });
  aliceId = await createHuman(t, orgId, "alice");
  alice = `alice@${domain}`;
}, 120_000);
afterAll(() => t?.stop());

const webConfig = () => discover(t, web.clientId, web.clientSecret, oidc.ClientSecretBasic(web.clientSecret));
const spaConfig = () => discover(t, spa.clientId, { token_endpoint_auth_method: "none" }, oidc.None());

describe("discovery", () => {
  it("lists the authorization endpoint and exactly what the code flow supports", async () => {
    const doc = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as Json;
    const issuer = issuerOf(t);
    expect(doc).toMatchObject({
      authorization_endpoint: `${issuer}/oauth/v2/authorize`,
      end_session_endpoint: `${issuer}/oidc/v1/end_session`,
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      code_challenge_methods_supported: ["S256"],
      prompt_values_supported: ["none", "login", "consent", "select_account", "create"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(doc.grant_types_supported).toEqual(expect.arrayContaining(["authorization_code", "refresh_token"]));
    expect(doc.scopes_supported).toContain("offline_access");
    expect(doc.token_endpoint_auth_methods_supported).toContain("none");
    expect(doc.claims_supported).toEqual(expect.arrayContaining(["auth_time", "nonce", "at_hash", "sid", "amr", "azp"]));
  });
});

describe("a confidential client (client_secret_basic)", () => {
  it("signs alice in, refreshes, reads userinfo, revokes and logs out", async () => {
    const config = await webConfig();
    const { tokens, session, callbackUrl } = await codeFlow(t, config, login, alice, { scope: "openid profile email offline_access" });
    expect(new URL(callbackUrl).searchParams.get("iss")).toBe(issuerOf(t));
    expect(tokens.token_type.toLowerCase()).toBe("bearer");
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.scope?.split(" ").sort()).toEqual(["email", "offline_access", "openid", "profile"]);
    const claims = tokens.claims();
    expect(claims).toMatchObject({ sub: aliceId, azp: web.clientId, sid: session.sessionId, amr: ["pwd"] });
    expect(claims?.aud).toContain(web.clientId);
    expect(claims?.auth_time).toEqual(expect.any(Number));
    // The app did not ask for the profile in the ID token: userinfo has it.
    expect(claims?.email).toBeUndefined();
    const info = await oidc.fetchUserInfo(config, tokens.access_token, aliceId);
    expect(info).toMatchObject({ sub: aliceId, email: "alice@example.com", given_name: "Given", preferred_username: "alice" });

    // Refresh: a new pair; the old refresh token is spent.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.claims()).toMatchObject({ sub: aliceId, sid: session.sessionId, auth_time: claims?.auth_time });
    expect(refreshed.claims()?.nonce).toBeUndefined();
    expect((await oidc.fetchUserInfo(config, refreshed.access_token, aliceId)).sub).toBe(aliceId);

    // Revocation of the access token.
    await oidc.tokenRevocation(config, refreshed.access_token);
    expect((await oidc.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
    // Logout with the ID token: the session and everything issued from it end; back to a registered URI with state.
    const out = await visit(
      t,
      oidc.buildEndSessionUrl(config, {
        id_token_hint: tokens.id_token as string,
        post_logout_redirect_uri: "https://rp.example.com/signed-out",
        state: "bye",
      }),
    );
    expect(out.status).toBe(302);
    expect(out.headers.get("location")).toBe("https://rp.example.com/signed-out?state=bye");
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
    const gone = await ok(t, "rest", login.pat, "ListSessions", { queries: [{ idsQuery: { ids: [session.sessionId] } }] });
    expect(gone.sessions ?? []).toEqual([]);
  });

  it("no refresh token without offline_access; the answer is no-store", async () => {
    const config = await webConfig();
    const verifier = oidc.randomPKCECodeVerifier();
    const authRequestId = authRequestOf(
      await authorizeGet(t, {
        client_id: web.clientId,
        redirect_uri: "https://rp.example.com/cb",
        response_type: "code",
        scope: "openid",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      }),
    );
    const code = new URL(await finish(t, login, authRequestId, await signIn(t, login, alice))).searchParams.get("code") as string;
    const res = await postForm(
      t,
      "/oauth/v2/token",
      { grant_type: "authorization_code", code, redirect_uri: "https://rp.example.com/cb", code_verifier: verifier },
      `Basic ${Buffer.from(`${encodeURIComponent(web.clientId)}:${encodeURIComponent(web.clientSecret)}`).toString("base64")}`,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body.refresh_token).toBeUndefined();
    expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 43_200, scope: "openid" });
    expect(config.serverMetadata().issuer).toBe(issuerOf(t));
  });
});

describe("the other client authentication methods", () => {
  it("client_secret_post and private_key_jwt, as the application is registered", async () => {
    const post = await oidcApp(t, projectId, "post", { authMethodType: "OIDC_AUTH_METHOD_TYPE_POST" });
    const postConfig = await discover(t, post.clientId, post.clientSecret, oidc.ClientSecretPost(post.clientSecret));
    expect((await codeFlow(t, postConfig, login, alice)).tokens.claims()?.sub).toBe(aliceId);
    const pkj = await oidcApp(t, projectId, "pkj", { authMethodType: "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" });
    const key = await admin(t, "AddApplicationKey", { projectId, appId: pkj.appId });
    const file = JSON.parse(Buffer.from(key.keyDetails, "base64").toString("utf8")) as { keyId: string; key: string };
    const pem = createPrivateKey(file.key).export({ type: "pkcs8", format: "pem" }) as string;
    const pkjConfig = await discover(t, pkj.clientId, {}, oidc.PrivateKeyJwt({ key: await importPKCS8(pem, "RS256"), kid: file.keyId }));
    const { tokens } = await codeFlow(t, pkjConfig, login, alice, { scope: "openid offline_access" });
    expect(tokens.claims()?.sub).toBe(aliceId);
    expect((await oidc.refreshTokenGrant(pkjConfig, tokens.refresh_token as string)).access_token).toEqual(expect.any(String));
    // A secret is no way in for it.
    const res = await postForm(t, "/oauth/v2/token", { grant_type: "refresh_token", refresh_token: "x", client_id: pkj.clientId, client_secret: "guess" });
    expect([res.status, res.body.error]).toEqual([401, "invalid_client"]);
  });
});

describe("a public client (PKCE, no secret)", () => {
  it("signs alice in, refreshes, revokes the refresh token (its family) and logs out without a redirect", async () => {
    const config = await spaConfig();
    const { tokens } = await codeFlow(t, config, login, alice, { scope: "openid offline_access" });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    expect((await oidc.fetchUserInfo(config, refreshed.access_token, aliceId)).sub).toBe(aliceId);
    await oidc.tokenRevocation(config, refreshed.refresh_token as string, { token_type_hint: "refresh_token" });
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    // The family's access tokens went with it.
    const userinfo = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(userinfo.status).toBe(401);
    // An unregistered post-logout URI: never a redirect there; the hosted login's signed-out page instead.
    const out = await visit(
      t,
      oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token as string, post_logout_redirect_uri: "https://evil.example/" }),
    );
    expect(out.status).toBe(302);
    const location = out.headers.get("location") as string;
    expect(location.startsWith(`${issuerOf(t)}/ui/login/logout`)).toBe(true);
    const page = await visit(t, location);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/signed out/i);
  });

  it("a public client cannot redeem without the verifier, nor authenticate as confidential", async () => {
    const res = await postForm(t, "/oauth/v2/token", {
      grant_type: "authorization_code",
      client_id: web.clientId,
      code: "x",
      redirect_uri: "https://rp.example.com/cb",
    });
    expect([res.status, res.body.error]).toEqual([401, "invalid_client"]);
  });
});

describe("the ID token", () => {
  it("carries the profile and role claims when the app asks for them there; JWT access tokens verify against the JWKS", async () => {
    const assertive = await oidcApp(t, projectId, "assertive", {
      idTokenUserinfoAssertion: true,
      idTokenRoleAssertion: true,
      accessTokenType: "ACCESS_TOKEN_TYPE_JWT",
    });
    await admin(t, "UpdateProject", { projectId, projectRoleAssertion: true });
    await admin(t, "AddUserGrant", { userId: aliceId, projectId, roleKeys: ["reader"] });
    const config = await discover(t, assertive.clientId, assertive.clientSecret, oidc.ClientSecretBasic(assertive.clientSecret));
    const { tokens } = await codeFlow(t, config, login, alice, { scope: "openid profile email" });
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const id = await jwtVerify(tokens.id_token as string, jwks, { issuer: issuerOf(t), audience: assertive.clientId });
    expect(id.payload).toMatchObject({
      email: "alice@example.com",
      given_name: "Given",
      [`urn:svc:iam:org:project:${projectId}:roles`]: { reader: expect.any(Object) },
    });
    expect(id.payload.aud).toEqual(expect.arrayContaining([assertive.clientId, projectId]));
    const at = await jwtVerify(tokens.access_token, jwks, { issuer: issuerOf(t), typ: "at+jwt" });
    expect(at.payload).toMatchObject({ sub: aliceId, client_id: assertive.clientId });
    expect(at.payload.aud).toContain(projectId);
    // The app's API (another app of the project) sees the token as active.
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(true);
  });
});

describe("prompt and max_age", () => {
  it("prompt=none is answered by the login UI from the browser's sessions only: an id_token_hint of a live session is no session", async () => {
    const config = await webConfig();
    const first = await codeFlow(t, config, login, alice);
    // With or without a hint, and with max_age=0, the request goes to the hosted login, which answers at once without
    // a page: a browser without its cookie gets login_required at the redirect URI (OIDC Core §3.1.2.1).
    const hints: Record<string, string>[] = [
      { id_token_hint: first.tokens.id_token as string },
      {},
      { max_age: "0", id_token_hint: first.tokens.id_token as string },
    ];
    for (const extra of hints) {
      const toLogin = await visit(
        t,
        oidc.buildAuthorizationUrl(config, { redirect_uri: "https://rp.example.com/cb", scope: "openid", prompt: "none", state: "s1", ...extra }),
      );
      expect(toLogin.status).toBe(302);
      expect(toLogin.headers.get("location")).toMatch(new RegExp(`^${issuerOf(t)}/ui/login/login\\?authRequest=`));
      const none = redirectQuery(await visit(t, toLogin.headers.get("location") as string));
      expect(none).toMatchObject({ error: "login_required", state: "s1", iss: issuerOf(t) });
      expect(none.code).toBeUndefined();
    }
  });

  it("prompt=login and max_age need a factor checked again; then the callback succeeds", async () => {
    const config = await webConfig();
    const session = await signIn(t, login, alice);
    for (const extra of [{ prompt: "login" }, { max_age: "1" }] as Record<string, string>[]) {
      const authRequestId = authRequestOf(
        await visit(t, oidc.buildAuthorizationUrl(config, { redirect_uri: "https://rp.example.com/cb", scope: "openid", ...extra })),
      );
      t.advanceClock(2_000);
      const refused = await postCallback(authRequestId, session);
      expect([refused.status, refused.body.details?.[0]?.reason]).toEqual([400, "Errors.AuthRequest.ReauthenticationRequired"]);
      // The login UI checks the password again (SetSession) and finishes.
      const set = await ok(t, "rest", login.pat, "SetSession", {
        sessionId: session.sessionId,
        sessionToken: session.sessionToken,
        checks: { password: { password: PASSWORD } },
      });
      session.sessionToken = set.sessionToken;
      const done = await postCallback(authRequestId, session);
      expect(done.status).toBe(200);
      expect(done.body.callbackUrl).toMatch(/[?&]code=/);
    }
  });
});

async function postCallback(authRequestId: string, session: { sessionId: string; sessionToken: string }) {
  const res = await fetch(`${t.url}/v2/oidc/auth_requests/${authRequestId}`, {
    method: "POST",
    headers: { authorization: `Bearer ${login.pat}`, "content-type": "application/json" },
    body: JSON.stringify({ session }),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe("the login UI", () => {
  it("GetAuthRequest shows what the login UI renders; the app's own login UI gets the browser", async () => {
    const own = await oidcApp(t, projectId, "own-login", { loginBaseUrl: "https://login.example.com/signin?brand=x" });
    const res = await authorizeGet(t, {
      client_id: own.clientId,
      redirect_uri: "https://rp.example.com/cb",
      response_type: "code",
      scope: "openid email",
      prompt: "select_account",
      login_hint: "alice",
      ui_locales: "de en",
      max_age: "600",
      unknown_parameter: "ignored",
    });
    const location = new URL(res.headers.get("location") as string);
    expect(`${location.origin}${location.pathname}`).toBe("https://login.example.com/signin");
    expect(location.searchParams.get("brand")).toBe("x");
    const { authRequest } = await ok(t, "rest", login.pat, "GetAuthRequest", { authRequestId: location.searchParams.get("authRequest") });
    expect(authRequest).toMatchObject({
      clientId: own.clientId,
      scope: ["openid", "email"],
      redirectUri: "https://rp.example.com/cb",
      prompt: ["PROMPT_SELECT_ACCOUNT"],
      loginHint: "alice",
      uiLocales: ["de", "en"],
      maxAge: "600s",
    });
    expect(Date.parse(authRequest.expirationDate) - Date.parse(authRequest.creationDate)).toBe(600_000);
    // The default login UI: SVC_LOGIN_URL, by default the hosted login under the external URL.
    const def = await authorizeGet(t, { client_id: web.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid" });
    expect(def.headers.get("location")).toMatch(new RegExp(`^${issuerOf(t)}/ui/login/login\\?authRequest=`));
    // POST works as GET does.
    const posted = await visit(t, `${t.url}/oauth/v2/authorize`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: web.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid" }),
    });
    expect(authRequestOf(posted)).toEqual(expect.any(String));
  });

  it("a login UI can send the user back with an error", async () => {
    const authRequestId = authRequestOf(
      await authorizeGet(t, { client_id: web.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid", state: "st" }),
    );
    const out = await ok(t, "rest", login.pat, "CreateCallback", { authRequestId, error: { error: "ACCESS_DENIED", errorDescription: "the user cancelled" } });
    expect(Object.fromEntries(new URL(out.callbackUrl).searchParams)).toEqual({
      error: "access_denied",
      error_description: "the user cancelled",
      state: "st",
      iss: issuerOf(t),
    });
  });
});

describe("the user's state", () => {
  it("deactivating the user revokes its refresh tokens; reactivated, they stay dead", async () => {
    const bobId = await createHuman(t, orgId, "bob");
    const config = await webConfig();
    const { tokens } = await codeFlow(t, config, login, "bob", { scope: "openid offline_access" });
    await admin(t, "DeactivateUser", { userId: bobId });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    await admin(t, "ReactivateUser", { userId: bobId });
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    expect(decodeJwt(tokens.id_token as string).sub).toBe(bobId);
  });

  it("locking the user, or RevokeUserTokens for the client, ends its refresh tokens too", async () => {
    const carolId = await createHuman(t, orgId, "carol");
    const config = await webConfig();
    const locked = await codeFlow(t, config, login, "carol", { scope: "openid offline_access" });
    await admin(t, "LockUser", { userId: carolId });
    await admin(t, "UnlockUser", { userId: carolId });
    await expect(oidc.refreshTokenGrant(config, locked.tokens.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    const revoked = await codeFlow(t, config, login, "carol", { scope: "openid offline_access" });
    const out = await admin(t, "RevokeUserTokens", { userId: carolId, clientId: web.clientId });
    expect(Number(out.revoked)).toBeGreaterThanOrEqual(1);
    await expect(oidc.refreshTokenGrant(config, revoked.tokens.refresh_token as string)).rejects.toMatchObject({ error: "invalid_grant" });
    expect(decodeJwt(revoked.tokens.id_token as string).sub).toBe(carolId);
  });
});

describe("load", () => {
  it("10 complete flows at once all succeed", async () => {
    const config = await webConfig();
    const flows = await Promise.all(Array.from({ length: 10 }, () => codeFlow(t, config, login, alice, { scope: "openid offline_access" })));
    expect(new Set(flows.map((f) => f.tokens.access_token)).size).toBe(10);
    for (const f of flows) expect(f.tokens.claims()?.sub).toBe(aliceId);
  });
});
