// The hosted login with an external SAML identity provider, in a real browser (Debian's chromium): the RP's code flow
// reaches svc's login page, which offers "Sign in with Corp SAML"; the browser carries svc's signed AuthnRequest to
// samlify's IdP (in the test), whose page posts the signed Response back to svc's ACS by itself; svc creates the user
// just in time and the RP redeems svc's code for tokens. The same with the HTTP-POST binding, where svc's page posts
// the AuthnRequest.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser } from "playwright-core";
import {
  browserAvailable,
  launchBrowser,
  newContext,
  type RpCallback,
  redeemCode,
  screenshot,
  startAuthorization,
  startBrowserServer,
  startRpCallback,
} from "../support/browser.js";
import { defaultOrgId, project } from "../support/fixtures.js";
import { discover, oidc, oidcApp } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { type SamlifyIdp, startSamlifyIdp } from "../support/saml-idp.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;

let t: TestServer;
let ext: SamlifyIdp;
let browser: Browser;
let rp: RpCallback;
let config: oidc.Configuration;

beforeAll(async () => {
  if (!browserAvailable()) return;
  rp = await startRpCallback();
  t = await startBrowserServer();
  ext = await startSamlifyIdp();
  browser = await launchBrowser();
  const metadataXml = Buffer.from(ext.metadata).toString("base64");
  const options = { isCreationAllowed: true, isAutoCreation: true, isLinkingAllowed: true };
  await admin(t, "AddSAMLProvider", { name: "Corp SAML", metadataXml, options });
  await admin(t, "AddSAMLProvider", { name: "Corp SAML POST", metadataXml, binding: "SAML_BINDING_POST", options });
  const orgId = await defaultOrgId(t);
  const app = await oidcApp(t, await project(t, orgId, "Portal"), "portal", { redirectUris: [rp.url], devMode: true });
  config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await ext?.close();
  await t?.stop();
  await rp?.close();
});

run("sign-in with an external SAML identity provider", () => {
  it.each([
    ["Corp SAML", "saml-browser-rita"],
    ["Corp SAML POST", "saml-browser-paula"],
  ])("signs in at %s, creates the user just in time, and the RP gets tokens for it", async (button, name) => {
    ext.user = { nameId: `${name}@idp.example.test`, email: `${name}@idp.example.test`, firstName: "Browser", surName: name, userName: name };
    const started = await startAuthorization(config, rp.url, "openid profile email");
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(started.url);
    await page.getByRole("button", { name: `Sign in with ${button}`, exact: true }).click();
    const tokens = await redeemCode(page, config, rp.url, started).catch(async (err) => {
      await screenshot(page, "debug-external-saml");
      throw new Error(`${page.url()}: ${String(err)}`);
    });
    const claims = tokens.claims() as Record<string, unknown>;
    expect(claims.amr).toContain("fed");
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub as string);
    expect(info).toMatchObject({ email: `${name}@idp.example.test`, given_name: "Browser", family_name: name });
    expect((await admin(t, "GetUserByID", { userId: claims.sub as string })).user.username).toBe(name);
    await context.close();
  });

  it("without JavaScript, svc's page posts the AuthnRequest with a button (HTTP-POST binding)", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    const started = await startAuthorization(config, rp.url, "openid");
    await page.goto(started.url);
    await page.getByRole("button", { name: "Sign in with Corp SAML POST", exact: true }).click();
    expect(await page.title()).toBe("Signing you in");
    await screenshot(page, "external-saml-post-en-1280");
    await page.getByRole("button", { name: "Continue to the provider" }).click();
    await page.waitForURL((u) => u.href.startsWith(ext.ssoUrl));
    await context.close();
  });
});
