// SAML through the hosted login in a real browser (Debian's chromium via playwright-core): node-saml as the SP sends
// the browser to /saml/v2/SSO, the hosted login asks for the login name and the password, and its last page posts the
// Response to the SP's ACS, a loopback server that validates it with node-saml (signature, audience, InResponseTo).
// With JavaScript the form posts itself; without, the visible button does it (axe needs JavaScript: not scanned here).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { inflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { SAML } from "@node-saml/node-saml";
import type { Browser, Page } from "playwright-core";
import { browserAvailable, launchBrowser, newContext, screenshot, startBrowserServer } from "../support/browser.js";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { nodeSamlSp, samlApp, spMetadata } from "../support/saml.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;
const entityId = "https://browser-sp.example.com/saml";

let t: TestServer;
let browser: Browser;
let sp: SAML;
let acs: { url: string; server: http.Server };
let domain: string;

/** The SP's ACS: validates the posted Response with node-saml and says whom it signed in. */
async function startAcs(): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const form = Object.fromEntries(new URLSearchParams(body));
      sp.validatePostResponseAsync({ SAMLResponse: form.SAMLResponse ?? "", RelayState: form.RelayState ?? "" }).then(
        ({ profile }) => {
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          res.end(`<!doctype html><title>SP</title><p id="who">signed in as ${profile?.nameID}</p><p id="relay">${form.RelayState}</p>`);
        },
        (err: Error) => {
          res.writeHead(400, { "content-type": "text/plain" });
          res.end(`refused: ${err.message}`);
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/acs`, server };
}

beforeAll(async () => {
  if (!browserAvailable()) return;
  t = await startBrowserServer();
  browser = await launchBrowser();
  acs = await startAcs();
  const orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Browser SAML");
  await samlApp(t, projectId, "browser-sp", spMetadata({ entityId, acs: [{ url: acs.url, isDefault: true }] }));
  sp = await nodeSamlSp(t, entityId, acs.url);
  await createHuman(t, orgId, "saml-browser");
  await createHuman(t, orgId, "saml-nojs");
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await new Promise((resolve) => acs?.server.close(resolve));
});

async function signInThroughPages(page: Page, loginName: string): Promise<void> {
  await page.goto(await sp.getAuthorizeUrlAsync("relay-browser", undefined, {}));
  expect(await page.title()).toBe("Sign in");
  await page.getByLabel("Login name or e-mail").fill(loginName);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Continue" }).click();
}

run("SAML sign-in through the hosted login", () => {
  it("posts the Response to the SP by itself, which accepts it", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await signInThroughPages(page, `saml-browser@${domain}`);
    await page.waitForURL(acs.url);
    expect(await page.locator("#who").textContent()).toBe("signed in as saml-browser@example.com");
    expect(await page.locator("#relay").textContent()).toBe("relay-browser");
    // The browser's session answers the next request without the pages (single sign-on).
    await page.goto(await sp.getAuthorizeUrlAsync("again", undefined, {}));
    await page.waitForURL(acs.url);
    expect(await page.locator("#relay").textContent()).toBe("again");
    // IsPassive with the browser's session: the assertion, still without a page to fill in.
    // (the ACS validates with this same SP instance, whose cache knows the request ids it made)
    const options = (sp as unknown as { options: { passive: boolean } }).options;
    options.passive = true;
    const url = await sp.getAuthorizeUrlAsync("passive", undefined, {});
    options.passive = false;
    expect(inflateRawSync(Buffer.from(new URL(url).searchParams.get("SAMLRequest") as string, "base64")).toString()).toContain('IsPassive="true"');
    await page.goto(url);
    await page.waitForURL(acs.url);
    expect(await page.locator("#who").textContent()).toBe("signed in as saml-browser@example.com");
    await context.close();
  });

  it("without JavaScript, shows a button that posts it", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    await signInThroughPages(page, `saml-nojs@${domain}`);
    expect(await page.title()).toBe("Signing you in");
    await screenshot(page, "saml-post-en-1280");
    await page.getByRole("button", { name: "Continue to the application" }).click();
    await page.waitForURL(acs.url);
    expect(await page.locator("#who").textContent()).toBe("signed in as saml-nojs@example.com");
    await context.close();
  });
});
