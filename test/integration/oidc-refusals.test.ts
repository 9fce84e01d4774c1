// Every refusal of the authorization code flow, each on its own: the authorization endpoint's error page (no client
// or redirect URI to trust) and its error redirects, codes (reuse revokes what the first use got, PKCE, another
// client's code, another redirect URI, expiry, concurrent redemption), refresh tokens (replay revokes the family,
// scope narrowing and widening), finishing an auth request (twice, concurrently, with a wrong session token, by a
// caller without IAM_LOGIN_CLIENT, expired, for a gated user). No answer is a 5xx.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, createOrg, defaultOrgId, type Machine, machine, project } from "../support/fixtures.js";
import {
  authorizeGet,
  authRequestOf,
  basicAuth,
  finish,
  issuerOf,
  loginClient,
  type OidcApp,
  oidcApp,
  postForm,
  redirectQuery,
  type SessionRef,
  signIn,
} from "../support/oidc.js";
import { admin, call, fails, type Json } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let login: Machine;
let projectId: string;
let web: OidcApp;
let other: OidcApp;
let spa: OidcApp;
let native: OidcApp;
let alice: string;
const CB = "https://rp.example.com/cb";
/** Every status the tests saw: none may be a 5xx. */
const statuses: number[] = [];

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient(t, orgId, "refusal-login-ui");
  projectId = await project(t, orgId, "Refusal Project", ["reader"]);
  web = await oidcApp(t, projectId, "web", { redirectUris: [CB, "https://rp.example.com/other?x=1"] });
  other = await oidcApp(t, projectId, "other");
  spa = await oidcApp(t, projectId, "spa", { appType: "OIDC_APP_TYPE_USER_AGENT", authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE" });
  native = await oidcApp(t, projectId, "native", { appType: "OIDC_APP_TYPE_NATIVE", redirectUris: ["http://127.0.0.1/cb", "com.example.app:/cb"] });
  await createHuman(t, orgId, "alice");
  alice = `alice@${domain}`;
}, 120_000);
afterAll(async () => {
  expect(statuses.filter((s) => s >= 500)).toEqual([]);
  await t?.stop();
});

const pkce = () => {
  const verifier = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

async function authorize(params: Record<string, string>): Promise<Response> {
  const res = await authorizeGet(t, params);
  statuses.push(res.status);
  return res;
}

const base = (app: OidcApp, extra: Record<string, string> = {}) => ({
  client_id: app.clientId,
  redirect_uri: CB,
  response_type: "code",
  scope: "openid",
  ...extra,
});

/** A finished auth request of `app`: its code, and the verifier of its challenge. */
async function code(app: OidcApp, extra: Record<string, string> = {}, session?: SessionRef): Promise<{ code: string; verifier: string; session: SessionRef }> {
  const p = pkce();
  const authRequestId = authRequestOf(await authorize(base(app, { code_challenge: p.challenge, code_challenge_method: "S256", ...extra })));
  const s = session ?? (await signIn(t, login, alice));
  const url = new URL(await finish(t, login, authRequestId, s));
  return { code: url.searchParams.get("code") as string, verifier: p.verifier, session: s };
}

async function token(body: Record<string, string>, app: OidcApp | null = web): Promise<{ status: number; body: Json }> {
  const res = await postForm(t, "/oauth/v2/token", body, app?.clientSecret ? basicAuth(app.clientId, app.clientSecret) : undefined);
  statuses.push(res.status);
  return res;
}

const redeem = (c: { code: string; verifier: string }, app: OidcApp = web, extra: Record<string, string> = {}) =>
  token({ grant_type: "authorization_code", code: c.code, redirect_uri: CB, code_verifier: c.verifier, ...extra }, app);

async function userinfoStatus(accessToken: string): Promise<number> {
  const res = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  statuses.push(res.status);
  return res.status;
}

describe("the authorization endpoint: a page, never a redirect, without a trusted client and redirect URI", () => {
  it.each([
    ["no client_id", { redirect_uri: CB, response_type: "code", scope: "openid" }],
    ["an unknown client_id", { client_id: "nobody@nowhere", redirect_uri: CB, response_type: "code", scope: "openid" }],
    ["no redirect_uri", { client_id: "WEB", response_type: "code", scope: "openid" }],
    ["a character added", { client_id: "WEB", redirect_uri: `${CB}x`, response_type: "code", scope: "openid" }],
    ["a character removed", { client_id: "WEB", redirect_uri: CB.slice(0, -1), response_type: "code", scope: "openid" }],
    ["another port", { client_id: "WEB", redirect_uri: "https://rp.example.com:8443/cb", response_type: "code", scope: "openid" }],
    ["an added path segment", { client_id: "WEB", redirect_uri: `${CB}/more`, response_type: "code", scope: "openid" }],
    ["an added query", { client_id: "WEB", redirect_uri: `${CB}?next=1`, response_type: "code", scope: "openid" }],
    ["a changed query", { client_id: "WEB", redirect_uri: "https://rp.example.com/other?x=2", response_type: "code", scope: "openid" }],
    ["a trailing slash", { client_id: "WEB", redirect_uri: `${CB}/`, response_type: "code", scope: "openid" }],
  ])("%s: 400 page", async (_what, params) => {
    const res = await authorize(Object.fromEntries(Object.entries(params).map(([k, v]) => [k, v === "WEB" ? web.clientId : v])));
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await res.text()).toMatch(/invalid_(request|client)/);
  });

  it("a repeated client_id or redirect_uri is a page too", async () => {
    const res = await fetch(
      `${t.url}/oauth/v2/authorize?client_id=${encodeURIComponent(web.clientId)}&redirect_uri=${encodeURIComponent(CB)}&redirect_uri=${encodeURIComponent(CB)}`,
      { redirect: "manual" },
    );
    statuses.push(res.status);
    expect(res.status).toBe(400);
  });

  it("a native app's loopback redirect URI on another port is fine; on a web app it is not", async () => {
    const ok = await authorize({
      ...base(native, { code_challenge: pkce().challenge, code_challenge_method: "S256" }),
      redirect_uri: "http://127.0.0.1:49152/cb",
    });
    expect(authRequestOf(ok)).toEqual(expect.any(String));
    const page = await authorize({ ...base(native), redirect_uri: "http://127.0.0.1:49152/cb/" });
    expect(page.status).toBe(400);
  });
});

describe("the authorization endpoint: errors at the redirect URI once it is trusted", () => {
  it.each([
    ["no response_type", { response_type: "" }, "invalid_request"],
    ["response_type token", { response_type: "token" }, "unsupported_response_type"],
    ["response_type code id_token", { response_type: "code id_token" }, "unsupported_response_type"],
    ["no openid scope", { scope: "profile" }, "invalid_scope"],
    ["code_challenge_method plain", { code_challenge: "a".repeat(43), code_challenge_method: "plain" }, "invalid_request"],
    ["a challenge without a method (plain)", { code_challenge: "a".repeat(43) }, "invalid_request"],
    ["an unknown prompt", { prompt: "sometimes" }, "invalid_request"],
    ["prompt=none with login", { prompt: "none login" }, "invalid_request"],
    ["max_age not a number", { max_age: "soon" }, "invalid_request"],
    ["an id_token_hint not ours", { id_token_hint: "eyJhbGciOiJub25lIn0.e30." }, "invalid_request"],
    ["response_mode form_post", { response_mode: "form_post" }, "invalid_request"],
    ["a request object", { request: "eyJ..." }, "request_not_supported"],
  ])("%s → %s", async (_what, extra, error) => {
    const q = redirectQuery(await authorize(base(web, { state: "S t&=ä", ...extra })));
    expect(q).toMatchObject({ error, state: "S t&=ä", iss: t.server.tokens.issuer });
    expect(q.error_description).toEqual(expect.any(String));
    expect(q.code).toBeUndefined();
  });

  it("a request_uri not from PAR (oidc-par.test.ts): a page, since the redirect URI would be the pushed one's", async () => {
    const res = await authorize(base(web, { state: "s", request_uri: "https://x.example/r" }));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("invalid_request_uri");
  });

  it("NUL characters in any parameter: refused, never a 5xx", async () => {
    for (const name of ["state", "nonce", "login_hint", "ui_locales", "scope", "max_age", "prompt", "client_id", "redirect_uri"]) {
      const params = base(web, { state: "s" });
      const res = await authorize({ ...params, [name]: `${(params as Record<string, string>)[name] ?? "x"}\u0000` });
      expect({ name, status: res.status < 500 }).toEqual({ name, status: true });
      await res.body?.cancel();
    }
    const posted = await fetch(`${t.url}/oauth/v2/authorize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
      redirect: "manual",
    });
    statuses.push(posted.status);
    expect(posted.status).toBe(400);
  });

  it("a public client must send a S256 code_challenge", async () => {
    const q = redirectQuery(await authorize(base(spa)));
    expect(q.error).toBe("invalid_request");
    expect(q.error_description).toMatch(/code_challenge/);
  });

  it("a repeated known parameter is refused, an unknown one ignored", async () => {
    const url = `${t.url}/oauth/v2/authorize?${new URLSearchParams(base(web))}&scope=openid&x=1&x=2`;
    const res = await fetch(url, { redirect: "manual" });
    statuses.push(res.status);
    expect(redirectQuery(res).error).toBe("invalid_request");
    const fine = await fetch(`${t.url}/oauth/v2/authorize?${new URLSearchParams(base(web))}&x=1&x=2`, { redirect: "manual" });
    expect(authRequestOf(fine)).toEqual(expect.any(String));
  });

  it("an application without the authorization_code grant type: unauthorized_client", async () => {
    const deviceOnly = await oidcApp(t, projectId, "device-only", { grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE"], redirectUris: [CB] });
    expect(redirectQuery(await authorize(base(deviceOnly))).error).toBe("unauthorized_client");
  });
});

describe("authorization codes", () => {
  it("reuse is invalid_grant and revokes the tokens of the first use (refresh token included)", async () => {
    const c = await code(web, { scope: "openid offline_access" });
    const first = await redeem(c);
    expect(first.status).toBe(200);
    expect(await userinfoStatus(first.body.access_token)).toBe(200);
    const again = await redeem(c);
    expect([again.status, again.body.error]).toEqual([400, "invalid_grant"]);
    expect(await userinfoStatus(first.body.access_token)).toBe(401);
    const refresh = await token({ grant_type: "refresh_token", refresh_token: first.body.refresh_token });
    expect(refresh.body.error).toBe("invalid_grant");
  });

  it("two concurrent redemptions of one code: exactly one succeeds", async () => {
    const c = await code(web);
    const both = await Promise.all([redeem(c), redeem(c), redeem(c)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 400, 400]);
  });

  it("a wrong verifier, none, or one without a challenge: invalid_grant (the code survives a wrong verifier)", async () => {
    const c = await code(web);
    expect((await redeem({ ...c, verifier: pkce().verifier })).body.error).toBe("invalid_grant");
    expect((await token({ grant_type: "authorization_code", code: c.code, redirect_uri: CB })).body.error).toBe("invalid_grant");
    expect((await redeem(c)).status).toBe(200);
    // A code of a request without a challenge, redeemed with a verifier.
    const authRequestId = authRequestOf(await authorize(base(web)));
    const plain = new URL(await finish(t, login, authRequestId, await signIn(t, login, alice))).searchParams.get("code") as string;
    expect((await token({ grant_type: "authorization_code", code: plain, redirect_uri: CB, code_verifier: pkce().verifier })).body.error).toBe("invalid_grant");
    expect((await token({ grant_type: "authorization_code", code: plain, redirect_uri: CB })).status).toBe(200);
  });

  it("another client's code, or another redirect_uri: invalid_grant", async () => {
    const c = await code(web);
    expect((await redeem(c, other)).body.error).toBe("invalid_grant");
    expect((await redeem(c, web, { redirect_uri: "https://rp.example.com/other?x=1" })).body.error).toBe("invalid_grant");
    expect((await redeem(c)).status).toBe(200);
  });

  it("a public client's code needs its verifier; a confidential client's code needs its secret", async () => {
    const c = await code(spa);
    expect((await token({ grant_type: "authorization_code", client_id: spa.clientId, code: c.code, redirect_uri: CB }, null)).body.error).toBe("invalid_grant");
    const ok = await token({ grant_type: "authorization_code", client_id: spa.clientId, code: c.code, redirect_uri: CB, code_verifier: c.verifier }, null);
    expect(ok.status).toBe(200);
    const w = await code(web);
    const noSecret = await token(
      { grant_type: "authorization_code", client_id: web.clientId, code: w.code, redirect_uri: CB, code_verifier: w.verifier },
      null,
    );
    expect([noSecret.status, noSecret.body.error]).toEqual([401, "invalid_client"]);
    const wrongSecret = await postForm(
      t,
      "/oauth/v2/token",
      { grant_type: "authorization_code", code: w.code, redirect_uri: CB, code_verifier: w.verifier },
      basicAuth(web.clientId, "wrong"),
    );
    expect(wrongSecret.status).toBe(401);
  });

  it("a code expires after 60 s", async () => {
    const c = await code(web);
    t.advanceClock(61_000);
    expect((await redeem(c)).body.error).toBe("invalid_grant");
  });

  it("unknown and malformed codes; missing parameters", async () => {
    expect((await token({ grant_type: "authorization_code", code: "nope", redirect_uri: CB })).body.error).toBe("invalid_grant");
    expect((await token({ grant_type: "authorization_code", code: "x".repeat(5000), redirect_uri: CB })).body.error).toBe("invalid_grant");
    expect((await token({ grant_type: "authorization_code", redirect_uri: CB })).body.error).toBe("invalid_request");
    expect((await token({ grant_type: "authorization_code", code: "nope" })).body.error).toBe("invalid_request");
  });
});

describe("refresh tokens", () => {
  async function refreshable(scope = "openid profile offline_access") {
    const first = await redeem(await code(web, { scope }));
    expect(first.status).toBe(200);
    return first.body as { access_token: string; refresh_token: string };
  }

  it("rotate on every use; replaying a rotated one (past the reuse interval) revokes the whole family", async () => {
    const first = await refreshable();
    const second = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token });
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    // Within SVC_REFRESH_TOKEN_REUSE_INTERVAL (30 s) a retry would get the same answer (token-hardening.test.ts).
    t.advanceClock(31_000);
    const replay = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token }).finally(() => t.advanceClock(-31_000));
    expect(replay.body.error).toBe("invalid_grant");
    // The family is gone: the newest refresh token and the access tokens of every generation.
    expect((await token({ grant_type: "refresh_token", refresh_token: second.body.refresh_token })).body.error).toBe("invalid_grant");
    expect(await userinfoStatus(second.body.access_token)).toBe(401);
    expect(await userinfoStatus(first.access_token)).toBe(401);
  });

  it("scope may narrow, never widen; the narrowed access token does not narrow the refresh token", async () => {
    const first = await refreshable("openid profile email offline_access");
    const wider = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, scope: "openid phone" });
    expect([wider.status, wider.body.error]).toEqual([400, "invalid_scope"]);
    const narrow = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, scope: "openid" });
    expect(narrow.status).toBe(200);
    expect(narrow.body.scope).toBe("openid");
    const full = await token({ grant_type: "refresh_token", refresh_token: narrow.body.refresh_token });
    expect(full.body.scope.split(" ").sort()).toEqual(["email", "offline_access", "openid", "profile"]);
  });

  it("bound to the client: another client's refresh is invalid_grant", async () => {
    const first = await refreshable();
    expect((await token({ grant_type: "refresh_token", refresh_token: first.refresh_token }, other)).body.error).toBe("invalid_grant");
    expect((await token({ grant_type: "refresh_token", refresh_token: first.refresh_token })).status).toBe(200);
  });

  it("bound to the session: deleting it ends the refresh tokens", async () => {
    const c = await code(web, { scope: "openid offline_access" });
    const first = await redeem(c);
    expect((await call(t, "rest", login.pat, "DeleteSession", { sessionId: c.session.sessionId, sessionToken: c.session.sessionToken })).code).toBe("ok");
    expect((await token({ grant_type: "refresh_token", refresh_token: first.body.refresh_token })).body.error).toBe("invalid_grant");
  });

  it("two concurrent uses of one refresh token: one rotation wins, and (within the reuse interval) both get its answer", async () => {
    const first = await refreshable();
    const both = await Promise.all([
      token({ grant_type: "refresh_token", refresh_token: first.refresh_token }),
      token({ grant_type: "refresh_token", refresh_token: first.refresh_token }),
    ]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both[0]?.body.refresh_token).toBe(both[1]?.body.refresh_token);
    expect((await token({ grant_type: "refresh_token", refresh_token: both[0]?.body.refresh_token })).status).toBe(200);
  });
});

describe("finishing an auth request", () => {
  const openRequest = async () => authRequestOf(await authorize(base(web)));

  it("a second finalization is refused; of two concurrent ones exactly one wins", async () => {
    const id = await openRequest();
    const s = await signIn(t, login, alice);
    await finish(t, login, id, s);
    await fails(t, "rest", login.pat, "CreateCallback", { authRequestId: id, session: s }, "failed_precondition", "Errors.AuthRequest.AlreadyFinished");
    await fails(
      t,
      "connect",
      login.pat,
      "CreateCallback",
      { authRequestId: id, error: { error: "ACCESS_DENIED" } },
      "failed_precondition",
      "Errors.AuthRequest.AlreadyFinished",
    );
    const id2 = await openRequest();
    const replies = await Promise.all([0, 1, 2].map(() => call(t, "rest", login.pat, "CreateCallback", { authRequestId: id2, session: s })));
    expect(replies.map((r) => r.code).sort()).toEqual(["failed_precondition", "failed_precondition", "ok"]);
  });

  it("a wrong session token: permission denied, and the request stays open", async () => {
    const id = await openRequest();
    const s = await signIn(t, login, alice);
    await fails(
      t,
      "rest",
      login.pat,
      "CreateCallback",
      { authRequestId: id, session: { ...s, sessionToken: "wrong" } },
      "permission_denied",
      "Errors.Session.Token.Invalid",
    );
    expect(await finish(t, login, id, s)).toMatch(/code=/);
  });

  it("a caller without IAM_LOGIN_CLIENT gets 403, even an instance owner's machine", async () => {
    const id = await openRequest();
    const nobody = await machine(t, orgId, "no-login-role");
    const owner = await machine(t, orgId, "org-owner", ["ORG_OWNER"]);
    for (const m of [nobody, owner]) {
      const r = await call(t, "rest", m.pat, "GetAuthRequest", { authRequestId: id });
      expect([r.status, r.code]).toEqual([403, "permission_denied"]);
      const c = await call(t, "rest", m.pat, "CreateCallback", { authRequestId: id, error: { error: "ACCESS_DENIED" } });
      expect([c.status, c.code]).toEqual([403, "permission_denied"]);
    }
    const anonymous = await call(t, "rest", undefined, "GetAuthRequest", { authRequestId: id });
    expect(anonymous.status).toBe(401);
  });

  it("unknown, expired: not found and failed precondition", async () => {
    await fails(t, "rest", login.pat, "GetAuthRequest", { authRequestId: "nope" }, "not_found", "Errors.AuthRequest.NotFound");
    const id = await openRequest();
    t.advanceClock(601_000);
    await fails(t, "rest", login.pat, "GetAuthRequest", { authRequestId: id }, "failed_precondition", "Errors.AuthRequest.Expired");
    await fails(
      t,
      "rest",
      login.pat,
      "CreateCallback",
      { authRequestId: id, session: await signIn(t, login, alice) },
      "failed_precondition",
      "Errors.AuthRequest.Expired",
    );
  });

  it("bad input: no callback kind, an unspecified error, a description that cannot go into a URL", async () => {
    const id = await openRequest();
    await fails(t, "rest", login.pat, "CreateCallback", { authRequestId: id }, "invalid_argument", "Errors.AuthRequest.Callback.Missing");
    await fails(t, "rest", login.pat, "CreateCallback", { authRequestId: id, error: {} }, "invalid_argument", "Errors.AuthRequest.Error.Invalid");
    await fails(
      t,
      "rest",
      login.pat,
      "CreateCallback",
      { authRequestId: id, error: { error: "ACCESS_DENIED", errorDescription: 'say "hi"' } },
      "invalid_argument",
    );
    await fails(t, "rest", login.pat, "CreateCallback", { authRequestId: id, session: { sessionId: "", sessionToken: "" } }, "invalid_argument");
  });

  it("a gated user never gets a code: permission denied, the request stays open for another user", async () => {
    const gatedProject = await project(t, orgId, "Gated", ["reader"]);
    await admin(t, "UpdateProject", { projectId: gatedProject, authorizationRequired: true });
    const gatedApp = await oidcApp(t, gatedProject, "gated-web");
    const outsiderOrg = await createOrg(t, "Refusal Outsiders");
    const accessApp = await oidcApp(t, await accessProject(), "access-web");
    const id = authRequestOf(await authorize(base(gatedApp)));
    const aliceSession = await signIn(t, login, alice);
    await fails(t, "rest", login.pat, "CreateCallback", { authRequestId: id, session: aliceSession }, "permission_denied", "Errors.AuthRequest.AccessDenied");
    // Granted a role, alice passes.
    const aliceId = (await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "alice" } }] })).result[0].userId;
    await admin(t, "AddUserGrant", { userId: aliceId, projectId: gatedProject, roleKeys: ["reader"] });
    expect(await finish(t, login, id, aliceSession)).toMatch(/code=/);
    // projectAccessRequired: a user of an organization without access.
    await createHuman(t, outsiderOrg, "stranger");
    const outsiderDomain = (await admin(t, "GetOrganizationByID", { organizationId: outsiderOrg })).organization.primaryDomain;
    const id2 = authRequestOf(await authorize(base(accessApp)));
    await fails(
      t,
      "rest",
      login.pat,
      "CreateCallback",
      { authRequestId: id2, session: await signIn(t, login, `stranger@${outsiderDomain}`) },
      "permission_denied",
      "Errors.AuthRequest.AccessDenied",
    );

    async function accessProject(): Promise<string> {
      const p = await project(t, orgId, "Access Gated");
      await admin(t, "UpdateProject", { projectId: p, projectAccessRequired: true });
      return p;
    }
  });
});

describe("revocation and logout refusals", () => {
  it("another client's refresh token cannot be revoked by it; unknown tokens are fine", async () => {
    const first = await redeem(await code(web, { scope: "openid offline_access" }));
    const res = await postForm(t, "/oauth/v2/revoke", { token: first.body.refresh_token }, basicAuth(other.clientId, other.clientSecret));
    statuses.push(res.status);
    expect([res.status, res.body.error]).toEqual([400, "unauthorized_client"]);
    expect((await token({ grant_type: "refresh_token", refresh_token: first.body.refresh_token })).status).toBe(200);
    const unknown = await postForm(t, "/oauth/v2/revoke", { token: "unknown" }, basicAuth(other.clientId, other.clientSecret));
    expect(unknown.status).toBe(200);
    // A confidential client cannot revoke without authenticating.
    const anon = await postForm(t, "/oauth/v2/revoke", { token: "unknown", client_id: web.clientId });
    expect(anon.status).toBe(401);
  });

  it("end_session: a forged hint or another client's hint is a 400 page; no hint, the hosted login's sign-out page", async () => {
    const forged = await fetch(`${t.url}/oidc/v1/end_session?id_token_hint=eyJhbGciOiJSUzI1NiJ9.e30.AAAA`, { redirect: "manual" });
    expect(forged.status).toBe(400);
    const first = await redeem(await code(web));
    const wrongClient = await fetch(`${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: first.body.id_token, client_id: other.clientId })}`, {
      redirect: "manual",
    });
    expect(wrongClient.status).toBe(400);
    const bare = await fetch(`${t.url}/oidc/v1/end_session?post_logout_redirect_uri=${encodeURIComponent("https://rp.example.com/signed-out")}`, {
      redirect: "manual",
    });
    // No session named and no client to trust the redirect URI of: the hosted login offers to end the browser's sessions.
    expect(bare.status).toBe(302);
    expect(bare.headers.get("location")).toBe(`${issuerOf(t)}/ui/login/logout`);
    // The session of the ID token is still there: nothing was ended by the refused requests.
    expect(await userinfoStatus(first.body.access_token)).toBe(200);
    // An expired ID token is still good for logging out.
    t.advanceClock(13 * 3600 * 1000);
    const late = await fetch(
      `${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: first.body.id_token, post_logout_redirect_uri: "https://rp.example.com/signed-out" })}`,
      { redirect: "manual" },
    );
    expect(late.status).toBe(302);
  });
});
