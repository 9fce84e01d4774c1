// The Device Authorization Grant (RFC 8628) end to end: openid-client's device flow helpers (initiateDeviceAuthorization,
// pollDeviceAuthorizationGrant) poll while Chromium types the user code at /ui/login/device, signs in through the
// hosted login and allows the application on the consent page; then each refusal the RFC names: a replayed device
// code, a wrong and an expired user code, an expired device code, a denial, polling too fast, an application without
// the grant, and guessing user codes past the limit.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, Page } from "playwright-core";
import { accessibilityProblems, browserAvailable, launchBrowser, newContext, screenshot, startBrowserServer } from "../support/browser.js";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { basicAuth, discover, issuerOf, type OidcApp, oidc, oidcApp, postForm } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

let t: TestServer;
let browser: Browser;
let orgId: string;
let domain: string;
/** A public client (native, auth method none) with the device grant and refresh tokens. */
let tv: OidcApp;
let config: oidc.Configuration;

beforeAll(async () => {
  if (!browserAvailable()) return;
  t = await startBrowserServer();
  browser = await launchBrowser();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Device Project");
  tv = await oidcApp(t, projectId, "Living Room TV", {
    appType: "OIDC_APP_TYPE_NATIVE",
    authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE",
    redirectUris: [],
    grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
  });
  config = await discover(t, tv.clientId, { token_endpoint_auth_method: "none" }, oidc.None());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

const poll = (deviceCode: string) => postForm(t, "/oauth/v2/token", { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: tv.clientId });

async function typeCode(page: Page, code: string): Promise<void> {
  await page.getByLabel("Code").fill(code);
  await page.getByRole("button", { name: "Continue" }).click();
}

async function signIn(page: Page, username: string): Promise<void> {
  await page.getByLabel("Login name or e-mail").fill(`${username}@${domain}`);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Continue" }).click();
}

run("the device flow with openid-client and Chromium", () => {
  it("polls while the user types the code, signs in and allows: the user's tokens", async () => {
    const userId = await createHuman(t, orgId, "dev-alice");
    const doc = config.serverMetadata();
    expect(doc.device_authorization_endpoint).toBe(`${issuerOf(t)}/oauth/v2/device_authorization`);
    expect(doc.grant_types_supported).toContain(DEVICE_GRANT);
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid profile offline_access" });
    expect(da.user_code).toMatch(USER_CODE);
    expect(da.verification_uri).toBe(`${issuerOf(t)}/ui/login/device`);
    expect(da.verification_uri_complete).toBe(`${da.verification_uri}?user_code=${da.user_code}`);
    expect([da.expires_in, da.interval]).toEqual([600, 5]);
    const tokens = oidc.pollDeviceAuthorizationGrant(config, da);

    const context = await newContext(browser);
    const page = await context.newPage();
    // The user types the code as it reads it: lower case, without the dash.
    await page.goto(da.verification_uri);
    expect(await page.title()).toBe("Connect a device");
    await screenshot(page, "device-code-en-1280");
    expect(await accessibilityProblems(page)).toEqual([]);
    await typeCode(page, da.user_code.replace("-", "").toLowerCase());
    await signIn(page, "dev-alice");
    expect(await page.title()).toBe("Allow Living Room TV?");
    // Before the user allows, the device is told to wait.
    expect((await poll(da.device_code)).body.error).toMatch(/^(authorization_pending|slow_down)$/);
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await page.title()).toBe("Device connected");
    await screenshot(page, "device-done-en-1280");
    expect(await accessibilityProblems(page)).toEqual([]);

    const got = await tokens;
    expect(got.claims()?.sub).toBe(userId);
    expect(got.claims()?.aud).toContain(tv.clientId);
    expect(got.refresh_token).toBeDefined();
    const info = await oidc.fetchUserInfo(config, got.access_token, userId);
    expect(info.preferred_username).toBe("dev-alice");

    await context.close();
  }, 90_000);

  it("a replayed device code is invalid_grant and revokes what the first use got; its user code is used up", async () => {
    await createHuman(t, orgId, "dev-dave");
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid offline_access" });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(da.verification_uri_complete as string);
    await page.getByRole("button", { name: "Continue" }).click();
    await signIn(page, "dev-dave");
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await page.title()).toBe("Device connected");
    const first = await poll(da.device_code);
    expect(first.status).toBe(200);
    // The device code again: refused, and what it gave is revoked (as a replayed authorization code's tokens are).
    const replay = await poll(da.device_code);
    expect([replay.status, replay.body.error]).toEqual([400, "invalid_grant"]);
    const after = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${first.body.access_token}` } });
    expect(after.status).toBe(401);
    const refresh = await postForm(t, "/oauth/v2/token", {
      grant_type: "refresh_token",
      refresh_token: first.body.refresh_token as string,
      client_id: tv.clientId,
    });
    expect(refresh.body.error).toBe("invalid_grant");
    // The code typed again once used: the page says so.
    await page.goto(da.verification_uri_complete as string);
    await typeCode(page, da.user_code);
    expect(await page.getByRole("alert").textContent()).toContain("already used");
    await context.close();
  }, 60_000);

  it("the code the sign-in's answer carries to the done page is worth nothing at the token endpoint", async () => {
    await createHuman(t, orgId, "dev-carol");
    const projectId = await project(t, orgId, "Both Grants Project");
    const both = await oidcApp(t, projectId, "both-grants", {
      redirectUris: ["https://rp.example.com/cb"],
      grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_DEVICE_CODE"],
    });
    const auth = basicAuth(both.clientId, both.clientSecret);
    const da = (await postForm(t, "/oauth/v2/device_authorization", { scope: "openid" }, auth)).body as Record<string, string>;
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(da.verification_uri_complete as string);
    await page.getByRole("button", { name: "Continue" }).click();
    await signIn(page, "dev-carol");
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await page.title()).toBe("Device connected");
    const done = new URL(page.url());
    const code = done.searchParams.get("code") as string;
    expect(code).toBeTruthy();
    const redeemed = await postForm(t, "/oauth/v2/token", { grant_type: "authorization_code", code, redirect_uri: `${done.origin}${done.pathname}` }, auth);
    expect([redeemed.status, redeemed.body.error]).toEqual([400, "invalid_grant"]);
    expect(redeemed.body.error_description).toContain("code_verifier");
    // The device still gets its tokens.
    const res = await postForm(t, "/oauth/v2/token", { grant_type: DEVICE_GRANT, device_code: da.device_code as string }, auth);
    expect([res.status, typeof res.body.access_token]).toEqual([200, "string"]);
    await context.close();
  }, 60_000);

  it("a user who denies: access_denied", async () => {
    await createHuman(t, orgId, "dev-bob");
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
    const context = await newContext(browser);
    const page = await context.newPage();
    // verification_uri_complete fills the code in; the user still confirms it.
    await page.goto(da.verification_uri_complete as string);
    expect(await page.getByLabel("Code").inputValue()).toBe(da.user_code);
    await page.getByRole("button", { name: "Continue" }).click();
    await signIn(page, "dev-bob");
    await page.getByRole("button", { name: "Deny" }).click();
    expect(await page.title()).toBe("Device not connected");
    const res = await poll(da.device_code);
    expect([res.status, res.body.error]).toEqual([400, "access_denied"]);
    await context.close();
  }, 60_000);

  it("a wrong or expired user code is refused on the page; an expired device code is expired_token", async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(da.verification_uri);
    // Another code of the alphabet (never this one), and one with letters the alphabet has not.
    const wrong = da.user_code.startsWith("B") ? `C${da.user_code.slice(1)}` : `B${da.user_code.slice(1)}`;
    await typeCode(page, wrong);
    expect(await page.getByRole("alert").textContent()).toContain("wrong or has expired");
    await typeCode(page, "AEIO-U123");
    expect(await page.getByRole("alert").textContent()).toContain("wrong or has expired");
    // Test setup: the authorization's lifetime over, straight in the row.
    await t.server.db.prisma.$executeRaw`UPDATE "DeviceAuthorization" SET "expiresAt" = now() - interval '1 second' WHERE "clientId" = ${tv.clientId}`;
    await typeCode(page, da.user_code);
    expect(await page.getByRole("alert").textContent()).toContain("wrong or has expired");
    const res = await poll(da.device_code);
    expect([res.status, res.body.error]).toEqual([400, "expired_token"]);
    await context.close();
  }, 60_000);

  it("polling before the interval is over: slow_down, and the interval grows by 5 s; an unknown device code: invalid_grant", async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
    expect((await poll(da.device_code)).body.error).toBe("authorization_pending");
    const fast = await poll(da.device_code);
    expect([fast.status, fast.body.error]).toEqual([400, "slow_down"]);
    expect(fast.body.error_description).toContain("10 s");
    expect((await poll(da.device_code)).body.error_description).toContain("15 s");
    expect((await poll("no-such-device-code")).body.error).toBe("invalid_grant");
    expect((await postForm(t, "/oauth/v2/token", { grant_type: DEVICE_GRANT, client_id: tv.clientId })).body.error).toBe("invalid_request");
  });

  it("an application without the grant: unauthorized_client at both endpoints; a confidential one must authenticate", async () => {
    const projectId = await project(t, orgId, "No Device Project");
    const web = await oidcApp(t, projectId, "web-no-device", { redirectUris: ["https://rp.example.com/cb"] });
    const refused = await postForm(t, "/oauth/v2/device_authorization", { scope: "openid" }, basicAuth(web.clientId, web.clientSecret));
    expect([refused.status, refused.body.error]).toEqual([400, "unauthorized_client"]);
    const token = await postForm(t, "/oauth/v2/token", { grant_type: DEVICE_GRANT, device_code: "x" }, basicAuth(web.clientId, web.clientSecret));
    expect(token.body.error).toBe("unauthorized_client");
    const confidential = await oidcApp(t, projectId, "web-device", { redirectUris: [], grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE"] });
    const anonymous = await postForm(t, "/oauth/v2/device_authorization", { client_id: confidential.clientId });
    expect(anonymous.body.error).toBe("invalid_client");
    const ok = await postForm(t, "/oauth/v2/device_authorization", { scope: "openid" }, basicAuth(confidential.clientId, confidential.clientSecret));
    expect(ok.status).toBe(200);
    expect(ok.body.user_code).toMatch(USER_CODE);
    // Another client's device code is no code of this client.
    const stolen = await postForm(t, "/oauth/v2/token", { grant_type: DEVICE_GRANT, device_code: ok.body.device_code as string, client_id: tv.clientId });
    expect(stolen.body.error).toBe("invalid_grant");
  });

  it("guessing user codes is limited per address: past 10 wrong codes the page refuses even the right one", async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: "openid" });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(da.verification_uri);
    // The earlier tests typed 3 wrong codes from this address.
    for (let i = 0; i < 7; i++) {
      await typeCode(page, `BBBB-BBB${"CDFGHJKLM"[i]}`);
      expect(await page.title()).toBe("Connect a device");
    }
    await typeCode(page, "BBBB-BBBZ");
    expect(await page.title()).not.toBe("Connect a device");
    await page.goto(da.verification_uri);
    await typeCode(page, da.user_code);
    expect(await page.locator("body").textContent()).toMatch(/too many/i);
    await context.close();
  }, 60_000);
});
