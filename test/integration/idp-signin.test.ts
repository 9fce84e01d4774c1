// Sign-in with an external OpenID Connect provider, end to end against a second svc instance as the provider: A's login
// client starts an intent, the browser (fetch) goes to B's authorization endpoint, B's login client signs the user in
// there and finishes B's auth request, B's callback lands on A's /idps/callback, A redirects to the login client's
// success URL with the intent's id and token; the login client reads the intent and creates a session with it, then
// finishes an auth request of A's own relying party. Linked users, auto-linking by verified e-mail, just-in-time
// creation, and the refusals: unverified e-mail, creation not allowed, replayed and wrong tokens, bad state, a
// provider that is down, external login switched off.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { type Machine, project } from "../support/fixtures.js";
import { authorizeGet, authRequestOf, codeFlow, discover, finish, loginClient, oidc, oidcApp, signIn } from "../support/oidc.js";
import { admin, call, fails, type Json, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SUCCESS = "https://login.example.com/idp/success";
const FAILURE = "https://login.example.com/idp/failure";

let a: TestServer;
let b: TestServer;
let loginA: Machine;
let loginB: Machine;
let orgA: string;
let orgB: string;
let domainB: string;
/** B's OIDC application that A uses as its client. */
let client: { clientId: string; clientSecret: string };
let issuerB: string;

/** A server on a fixed port whose external URL is its real address (the other instance must reach it). */
async function serverOnOwnPort(): Promise<TestServer> {
  const port = await freePort();
  return startTestServer({ SVC_PORT: String(port), SVC_EXTERNAL_URL: `http://127.0.0.1:${port}` });
}

/** A human of B who signs in there; `verified`: B vouches for its e-mail. */
async function userAtB(username: string, email: string, verified: boolean): Promise<string> {
  return (
    await admin(b, "CreateUser", {
      organizationId: orgB,
      username,
      human: { profile: { givenName: "Ext", familyName: username }, email: { email, isVerified: verified }, password: { password: "Initial-Passw0rd!" } },
    })
  ).id;
}

async function userAtA(username: string, email: string, verified = true): Promise<string> {
  return (
    await admin(a, "CreateUser", {
      organizationId: orgA,
      username,
      human: { profile: { givenName: "Local", familyName: username }, email: { email, isVerified: verified }, password: { password: "Initial-Passw0rd!" } },
    })
  ).id;
}

async function providerAtA(name: string, options: Json, over: Json = {}): Promise<string> {
  return (await admin(a, "AddGenericOIDCProvider", { name, issuer: issuerB, clientId: client.clientId, clientSecret: client.clientSecret, options, ...over }))
    .id;
}

interface Landing {
  intentId: string;
  status: number;
  url: URL;
}

/** The browser's trip: A's intent → B's authorize → sign-in at B → B's callback → A's /idps/callback → the login UI. */
async function externalSignIn(idpId: string, usernameAtB: string): Promise<Landing> {
  const start = await ok(a, "connect", loginA.pat, "StartIdentityProviderIntent", { idpId, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
  const authUrl = new URL(start.authUrl);
  expect(authUrl.origin).toBe(issuerB);
  expect(authUrl.searchParams.get("redirect_uri")).toBe(`${a.url.replace("localhost", "127.0.0.1")}/idps/callback`);
  expect(authUrl.searchParams.get("code_challenge_method")).toBe("S256");
  const authRequestId = authRequestOf(await fetch(authUrl, { redirect: "manual" }));
  const session = await signIn(b, loginB, `${usernameAtB}@${domainB}`);
  const callback = await finish(b, loginB, authRequestId, session);
  expect(callback.startsWith(`http://127.0.0.1:${new URL(a.url).port}/idps/callback?`)).toBe(true);
  const landed = await fetch(callback, { redirect: "manual" });
  return { intentId: start.idpIntentId, status: landed.status, url: new URL(landed.headers.get("location") ?? "about:blank") };
}

const tokenOf = (l: Landing) => l.url.searchParams.get("token") as string;
const intentCheck = (l: Landing, token = tokenOf(l)) => ({ idpIntent: { idpIntentId: l.intentId, idpIntentToken: token } });

beforeAll(async () => {
  [a, b] = await Promise.all([serverOnOwnPort(), serverOnOwnPort()]);
  issuerB = b.url.replace("localhost", "127.0.0.1");
  orgA = (await admin(a, "GetInstance")).instance.defaultOrganizationId;
  orgB = (await admin(b, "GetInstance")).instance.defaultOrganizationId;
  domainB = (await admin(b, "GetOrganizationByID", { organizationId: orgB })).organization.primaryDomain;
  loginA = await loginClient(a, orgA, "login-a");
  loginB = await loginClient(b, orgB, "login-b");
  const projectB = await project(b, orgB, "Federation");
  client = await oidcApp(b, projectB, "svc-a", { redirectUris: [`http://127.0.0.1:${new URL(a.url).port}/idps/callback`], devMode: true });
}, 180_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

describe("a linked user", () => {
  it("signs in at B, gets a session on A and tokens for A's relying party", async () => {
    const idp = await providerAtA("B (linked)", { isLinkingAllowed: true });
    const subAtB = await userAtB("carol", "carol@b.example", true);
    const carol = await userAtA("carol", "carol@a.example");
    await admin(a, "AddIDPLink", { userId: carol, idpLink: { idpId: idp, userId: subAtB, userName: "carol" } });

    const landing = await externalSignIn(idp, "carol");
    expect(landing.status).toBe(302);
    expect(`${landing.url.origin}${landing.url.pathname}`).toBe(SUCCESS);
    expect(landing.url.searchParams.get("id")).toBe(landing.intentId);
    expect(landing.url.searchParams.get("user")).toBe(carol);

    const info = await ok(a, "connect", loginA.pat, "RetrieveIdentityProviderIntent", { idpIntentId: landing.intentId, idpIntentToken: tokenOf(landing) });
    expect(info.userId).toBe(carol);
    expect(info.idpInformation).toMatchObject({
      idpId: idp,
      userId: subAtB,
      userName: "carol",
      profile: { email: "carol@b.example", emailVerified: true, givenName: "Ext", familyName: "carol", preferredUsername: "carol" },
    });
    expect(info.idpInformation.rawInformation).toMatchObject({ sub: subAtB, iss: issuerB, email: "carol@b.example" });

    const s = await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) });
    const got = (await ok(a, "connect", loginA.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).session;
    expect(got.factors.user.id).toBe(carol);
    expect(got.factors.intent.verifiedAt).toEqual(expect.any(String));
    expect(got.factors.password).toBeUndefined();

    // The session finishes an auth request of A's own relying party: an ID token for carol, amr "fed".
    const rp = await oidcApp(a, await project(a, orgA, "RP"), "rp");
    const config = await discover(a, rp.clientId, rp.clientSecret, oidc.ClientSecretBasic(rp.clientSecret));
    const flow = await codeFlow(a, config, loginA, "", { session: { sessionId: s.sessionId, sessionToken: s.sessionToken } });
    expect(flow.tokens.claims()).toMatchObject({ sub: carol, amr: ["fed"] });

    // The intent is spent, and a wrong token proves nothing.
    await fails(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) }, "failed_precondition", "Errors.IdpIntent.Used");
    await fails(
      a,
      "connect",
      loginA.pat,
      "RetrieveIdentityProviderIntent",
      { idpIntentId: landing.intentId, idpIntentToken: tokenOf(landing) },
      "failed_precondition",
      "Errors.IdpIntent.Used",
    );
    await fails(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing, "wrong") }, "permission_denied", "Errors.IdpIntent.Token.Invalid");
    await fails(
      a,
      "connect",
      loginA.pat,
      "RetrieveIdentityProviderIntent",
      { idpIntentId: landing.intentId, idpIntentToken: "wrong" },
      "permission_denied",
      "Errors.IdpIntent.Token.Invalid",
    );
  });
});

describe("users not linked yet", () => {
  it("auto-links the one user with the provider's verified e-mail", async () => {
    const idp = await providerAtA("B (e-mail)", { autoLinking: "AUTO_LINKING_OPTION_EMAIL" });
    const subAtB = await userAtB("dave", "dave@shared.example", true);
    const dave = await userAtA("dave", "dave@shared.example");
    const landing = await externalSignIn(idp, "dave");
    expect(landing.url.searchParams.get("user")).toBeNull();
    const s = await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) });
    const got = (await ok(a, "connect", loginA.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).session;
    expect(got.factors.user.id).toBe(dave);
    expect((await admin(a, "ListIDPLinks", { userId: dave })).result).toEqual([{ idpId: idp, userId: subAtB, userName: "dave" }]);
  });

  it("does not auto-link when the provider has not verified the e-mail", async () => {
    const idp = await providerAtA("B (e-mail, unverified)", { autoLinking: "AUTO_LINKING_OPTION_EMAIL" });
    await userAtB("frank", "frank@shared.example", false);
    await userAtA("frank", "frank@shared.example");
    const landing = await externalSignIn(idp, "frank");
    const info = await ok(a, "connect", loginA.pat, "RetrieveIdentityProviderIntent", { idpIntentId: landing.intentId, idpIntentToken: tokenOf(landing) });
    expect(info.idpInformation.profile.emailVerified ?? false).toBe(false);
    await fails(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) }, "failed_precondition", "Errors.IdpIntent.UserNotLinked");
  });

  it("creates the user just in time when the provider's options say so", async () => {
    const idp = await providerAtA("B (JIT)", { isCreationAllowed: true, isAutoCreation: true });
    const subAtB = await userAtB("erin", "erin@b.example", true);
    const landing = await externalSignIn(idp, "erin");
    const info = await ok(a, "connect", loginA.pat, "RetrieveIdentityProviderIntent", { idpIntentId: landing.intentId, idpIntentToken: tokenOf(landing) });
    expect(info.userId ?? "").toBe("");
    expect(info.addHumanUser).toMatchObject({ organizationId: orgA, username: "erin", email: "erin@b.example", emailVerified: true, givenName: "Ext" });
    const s = await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) });
    const got = (await ok(a, "connect", loginA.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).session;
    const erin = got.factors.user.id;
    expect(got.factors.user.organizationId).toBe(orgA);
    const user = (await admin(a, "GetUserByID", { userId: erin })).user;
    expect(user).toMatchObject({ username: "erin", state: "USER_STATE_ACTIVE", human: { email: { email: "erin@b.example", isVerified: true } } });
    expect((await admin(a, "ListIDPLinks", { userId: erin })).result).toEqual([{ idpId: idp, userId: subAtB, userName: "erin" }]);
  });

  it("refuses when creation is not allowed: the login must register or link", async () => {
    const idp = await providerAtA("B (no creation)", { isLinkingAllowed: true, isAutoCreation: true });
    await userAtB("gina", "gina@b.example", true);
    const landing = await externalSignIn(idp, "gina");
    await fails(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) }, "failed_precondition", "Errors.IdpIntent.UserNotLinked");
  });
});

describe("a linked user's sign-in", () => {
  it("adds the intent to an existing session of the same user only", async () => {
    const idp = await providerAtA("B (set session)", {});
    const subAtB = await userAtB("liz", "liz@b.example", true);
    const liz = await userAtA("liz", "liz@a.example");
    const other = await userAtA("max", "max@a.example");
    await admin(a, "AddIDPLink", { userId: liz, idpLink: { idpId: idp, userId: subAtB, userName: "liz" } });
    const landing = await externalSignIn(idp, "liz");
    const mine = await ok(a, "connect", loginA.pat, "CreateSession", { checks: { user: { userId: liz } } });
    const theirs = await ok(a, "connect", loginA.pat, "CreateSession", { checks: { user: { userId: other } } });
    await fails(
      a,
      "connect",
      loginA.pat,
      "SetSession",
      { sessionId: theirs.sessionId, sessionToken: theirs.sessionToken, checks: intentCheck(landing) },
      "invalid_argument",
      "Errors.IdpIntent.OtherUser",
    );
    const set = await ok(a, "connect", loginA.pat, "SetSession", { sessionId: mine.sessionId, sessionToken: mine.sessionToken, checks: intentCheck(landing) });
    const got = (await ok(a, "connect", loginA.pat, "GetSession", { sessionId: mine.sessionId, sessionToken: set.sessionToken })).session;
    expect(got.factors.intent.verifiedAt).toEqual(expect.any(String));
  });

  it("updates the user's profile from the provider when the options say so", async () => {
    const idp = await providerAtA("B (auto-update)", { isAutoUpdate: true });
    const subAtB = await userAtB("ivy", "ivy@b.example", true);
    const ivy = await userAtA("ivy", "ivy@old.example", false);
    await admin(a, "AddIDPLink", { userId: ivy, idpLink: { idpId: idp, userId: subAtB, userName: "ivy" } });
    await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(await externalSignIn(idp, "ivy")) });
    const user = (await admin(a, "GetUserByID", { userId: ivy })).user;
    expect(user.human).toMatchObject({ profile: { givenName: "Ext", familyName: "ivy" }, email: { email: "ivy@b.example", isVerified: true } });
  });

  it("still needs a second factor when the login settings force MFA", async () => {
    const idp = await providerAtA("B (mfa)", {});
    const subAtB = await userAtB("jack", "jack@b.example", true);
    const jack = await userAtA("jack", "jack@a.example");
    await admin(a, "AddIDPLink", { userId: jack, idpLink: { idpId: idp, userId: subAtB, userName: "jack" } });
    const session = await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(await externalSignIn(idp, "jack")) });
    const rp = await oidcApp(a, await project(a, orgA, "MFA RP"), "mfa-rp");
    const verifier = oidc.randomPKCECodeVerifier();
    const authRequestId = authRequestOf(
      await authorizeGet(a, {
        client_id: rp.clientId,
        redirect_uri: "https://rp.example.com/cb",
        response_type: "code",
        scope: "openid",
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
      }),
    );
    const ref = { sessionId: session.sessionId, sessionToken: session.sessionToken };
    await admin(a, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, forceMfa: true } });
    try {
      await fails(a, "connect", loginA.pat, "CreateCallback", { authRequestId, session: ref }, "failed_precondition", "Errors.Session.MfaRequired");
    } finally {
      await admin(a, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, forceMfa: false } });
    }
    expect(await finish(a, loginA, authRequestId, ref)).toContain("code=");
  });
});

describe("refusals at the callback and at the start", () => {
  it("a callback without an intent is an error page; a provider's error goes to the failure URL", async () => {
    const callback = `${a.url}/idps/callback`;
    // A state svc cannot have made (a NUL, which PostgreSQL text cannot hold; a space) is no intent either, not a 500.
    for (const query of ["", "?state=unknown&code=x", "?state=%00%00&code=x", "?state=a%20b&code=x"]) {
      const res = await fetch(`${callback}${query}`, { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(await res.text()).toContain("Sign-in failed");
    }
    const idp = await providerAtA("B (errors)", {});
    const start = await ok(a, "connect", loginA.pat, "StartIdentityProviderIntent", { idpId: idp, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
    const state = new URL(start.authUrl).searchParams.get("state") as string;
    const denied = await fetch(`${callback}?state=${encodeURIComponent(state)}&error=access_denied`, { redirect: "manual" });
    expect(denied.status).toBe(302);
    const to = new URL(denied.headers.get("location") as string);
    expect(`${to.origin}${to.pathname}`).toBe(FAILURE);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({ id: start.idpIntentId, error: "access_denied" });
    // A second answer for the same intent changes nothing.
    const again = await fetch(`${callback}?state=${encodeURIComponent(state)}&code=forged`, { redirect: "manual" });
    expect(new URL(again.headers.get("location") as string).searchParams.get("error")).toBe("invalid_state");
    await fails(a, "connect", loginA.pat, "RetrieveIdentityProviderIntent", { idpIntentId: start.idpIntentId, idpIntentToken: "x" }, "permission_denied");
  });

  it("a forged code for a started intent goes to the failure URL", async () => {
    const idp = await providerAtA("B (forged)", {});
    const start = await ok(a, "connect", loginA.pat, "StartIdentityProviderIntent", { idpId: idp, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
    const state = new URL(start.authUrl).searchParams.get("state") as string;
    const res = await fetch(`${a.url}/idps/callback?state=${encodeURIComponent(state)}&code=forged&iss=${encodeURIComponent(issuerB)}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get("location") as string);
    expect(`${to.origin}${to.pathname}`).toBe(FAILURE);
    expect(to.searchParams.get("error")).toBe("invalid_grant");
  });

  it("an intent expires ten minutes after the provider's answer", async () => {
    const idp = await providerAtA("B (expiry)", { isLinkingAllowed: true });
    await userAtB("kim", "kim@b.example", true);
    const landing = await externalSignIn(idp, "kim");
    a.advanceClock(11 * 60_000);
    try {
      const check = { idpIntentId: landing.intentId, idpIntentToken: tokenOf(landing) };
      await fails(a, "connect", loginA.pat, "RetrieveIdentityProviderIntent", check, "not_found", "Errors.IdpIntent.NotFound");
      await fails(a, "connect", loginA.pat, "CreateSession", { checks: { idpIntent: check } }, "not_found", "Errors.IdpIntent.NotFound");
    } finally {
      a.advanceClock(-11 * 60_000);
    }
  });

  it("a provider that is down: Unavailable with what went wrong", async () => {
    const down = await freePort();
    const idp = await providerAtA("Down", {}, { issuer: `http://127.0.0.1:${down}` });
    const reply = await call(a, "connect", loginA.pat, "StartIdentityProviderIntent", { idpId: idp, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
    expect({ code: reply.code, reason: reply.reason }).toEqual({ code: "unavailable", reason: "Errors.IDP.Unavailable" });
    expect(reply.body.message).toContain("unreachable");
  });

  it("only a login client starts intents; external login switched off refuses them and the session check", async () => {
    const idp = await providerAtA("B (settings)", { isLinkingAllowed: true });
    const req = { idpId: idp, urls: { successUrl: SUCCESS, failureUrl: FAILURE } };
    await fails(a, "connect", a.pat, "StartIdentityProviderIntent", req, "permission_denied", "Errors.Permission.Denied");
    await fails(
      a,
      "connect",
      loginA.pat,
      "StartIdentityProviderIntent",
      { ...req, urls: { successUrl: "javascript:alert(1)", failureUrl: FAILURE } },
      "invalid_argument",
    );
    await fails(a, "connect", loginA.pat, "StartIdentityProviderIntent", { ...req, idpId: "nope" }, "not_found", "Errors.IDP.NotFound");

    const subAtB = await userAtB("hank", "hank@b.example", true);
    const hank = await userAtA("hank", "hank@a.example");
    await admin(a, "AddIDPLink", { userId: hank, idpLink: { idpId: idp, userId: subAtB, userName: "hank" } });
    const landing = await externalSignIn(idp, "hank");
    await admin(a, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: false } });
    try {
      await fails(a, "connect", loginA.pat, "StartIdentityProviderIntent", req, "failed_precondition", "Errors.IdpIntent.ExternalLoginNotAllowed");
      await fails(
        a,
        "connect",
        loginA.pat,
        "CreateSession",
        { checks: intentCheck(landing) },
        "failed_precondition",
        "Errors.IdpIntent.ExternalLoginNotAllowed",
      );
    } finally {
      await admin(a, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true } });
    }
    // The refused check did not spend the intent.
    await ok(a, "connect", loginA.pat, "CreateSession", { checks: intentCheck(landing) });
  });
});
