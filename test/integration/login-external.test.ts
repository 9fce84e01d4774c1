// The hosted login with an external OpenID provider, in a real browser: A's login page offers "Sign in with B", where
// B is a second svc instance (its own hosted login); the user signs in at B, comes back through A's /idps/callback to
// A's login, which creates the user just in time (the provider's option) and finishes A's relying party's code flow.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser } from "playwright-core";
import { freePort } from "../support/apache.js";
import {
  accessibilityProblems,
  browserAvailable,
  callbackQuery,
  launchBrowser,
  newContext,
  type RpCallback,
  screenshot,
  startBrowserServer,
  startRpCallback,
} from "../support/browser.js";
import { defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { discover, oidc, oidcApp } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;

let a: TestServer;
let b: TestServer;
let browser: Browser;
let rp: RpCallback;
let config: oidc.Configuration;
let domainB: string;
let closedClient: { clientId: string; clientSecret: string };

beforeAll(async () => {
  if (!browserAvailable()) return;
  rp = await startRpCallback();
  a = await startBrowserServer();
  // B answers on 127.0.0.1 and A on localhost: two hosts, so their cookies stay apart in the one browser.
  const portB = await freePort();
  b = await startTestServer({ SVC_PORT: String(portB), SVC_EXTERNAL_URL: `http://127.0.0.1:${portB}` });
  browser = await launchBrowser();

  const orgB = await defaultOrgId(b);
  domainB = (await admin(b, "GetOrganizationByID", { organizationId: orgB })).organization.primaryDomain;
  const projectB = await project(b, orgB, "Federation");
  const clientAtB = await oidcApp(b, projectB, "svc-a", { redirectUris: [`${a.server.tokens.issuer}/idps/callback`], devMode: true });
  closedClient = await oidcApp(b, projectB, "svc-a-closed", { redirectUris: [`${a.server.tokens.issuer}/idps/callback`], devMode: true });
  await admin(b, "CreateUser", {
    organizationId: orgB,
    username: "ext-jane",
    human: {
      profile: { givenName: "Jane", familyName: "External" },
      email: { email: "jane@partner.example", isVerified: true },
      password: { password: PASSWORD },
    },
  });
  await admin(a, "AddGenericOIDCProvider", {
    name: "Partner",
    issuer: b.server.tokens.issuer,
    clientId: clientAtB.clientId,
    clientSecret: clientAtB.clientSecret,
    options: { isCreationAllowed: true, isAutoCreation: true, isLinkingAllowed: true },
  });
  // The login page reads the providers a few seconds at a time: both are there before the first page.
  await admin(a, "AddGenericOIDCProvider", {
    name: "Closed Partner",
    issuer: b.server.tokens.issuer,
    clientId: closedClient.clientId,
    clientSecret: closedClient.clientSecret,
    options: {},
  });

  const orgA = await defaultOrgId(a);
  const projectA = await project(a, orgA, "Portal");
  const app = await oidcApp(a, projectA, "portal", { redirectUris: [rp.url], devMode: true });
  config = await discover(a, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await a?.stop();
  await b?.stop();
  await rp?.close();
});

run("sign-in with an external OpenID provider", () => {
  it("signs in at the provider, creates the user just in time, and the RP gets tokens for it", async () => {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: rp.url,
      scope: "openid profile email",
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(url.href);
    await screenshot(page, "login-name-external-en-1280");
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole("button", { name: "Sign in with Partner" }).click();

    // B's own hosted login.
    await page.waitForURL((u) => u.origin === b.server.tokens.issuer);
    await page.getByLabel("Login name or e-mail").fill(`ext-jane@${domainB}`);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Continue" }).click();

    await callbackQuery(page, rp.url);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true });
    const claims = tokens.claims() as Record<string, unknown>;
    expect(claims.amr).toContain("fed");
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub as string);
    expect(info.email).toBe("jane@partner.example");
    expect(info.email_verified).toBe(true);
    const created = await admin(a, "GetUserByID", { userId: claims.sub as string });
    expect(created.user.human.profile.givenName).toBe("Jane");
    await context.close();
  });

  it("says so when the provider's user may be neither linked nor created here", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(oidc.buildAuthorizationUrl(config, { redirect_uri: rp.url, scope: "openid", state: "s" }).href);
    await page.getByRole("button", { name: "Sign in with Closed Partner" }).click();
    await page.waitForURL((u) => u.origin === b.server.tokens.issuer);
    await page.getByLabel("Login name or e-mail").fill(`ext-jane@${domainB}`);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Continue" }).click();
    await page
      .waitForURL((u) => u.pathname === "/ui/login/idp/success", { timeout: 10_000 })
      .catch(async (err) => {
        await screenshot(page, "debug-external");
        throw new Error(`${page.url()}: ${String(err)}`);
      });
    expect(await page.title()).toBe("No account here for this sign-in");
    await screenshot(page, "external-not-linked-en-1280");
    expect(await accessibilityProblems(page)).toEqual([]);
    await context.close();
  });

  it("answers a forged intent with a page that says what happened", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${a.server.tokens.issuer}/ui/login/idp/success?id=unknown&token=forged`);
    expect(await page.title()).toBe("Sign-in with the provider failed");
    expect(await accessibilityProblems(page)).toEqual([]);
    await context.close();
  });
});
