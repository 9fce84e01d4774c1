// OIDC Front-Channel Logout 1.0 (issue 29) in Chromium: when a session ends in the browser (end_session, the hosted
// login's logout page), the page svc shows loads each application's frontchannel_logout_uri in an iframe (iss and sid
// when the application asked for them), under a CSP whose frame-src names those origins only, then goes on to the
// post-logout redirect URI (or the hosted login's signed-out page). Two loopback relying parties on two origins record
// what the frames request.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, Page } from "playwright-core";
import { browserAvailable, launchBrowser, newContext, redeemCode, startAuthorization, startBrowserServer } from "../support/browser.js";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { discover, issuerOf, type OidcApp, oidc, oidcApp } from "../support/oidc.js";
import { admin, fails } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;

/** A relying party on its own loopback origin: every request is recorded and answered with a small page. */
class Rp {
  requests: URL[] = [];
  private server = http.createServer((req, res) => {
    this.requests.push(new URL(req.url ?? "/", this.origin));
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>RP</title><p>at the RP</p>");
  });
  origin = "";

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  hits(path: string): URL[] {
    return this.requests.filter((u) => u.pathname === path);
  }
}

let t: TestServer;
let browser: Browser;
let domain: string;
let orgId: string;
let projectId: string;
const a = new Rp();
const b = new Rp();
let appA: OidcApp;
let appB: OidcApp;

beforeAll(async () => {
  if (!browserAvailable()) return;
  await Promise.all([a.start(), b.start()]);
  t = await startBrowserServer();
  browser = await launchBrowser();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  projectId = await project(t, orgId, "Front-channel logout");
  // A asks for iss and sid; B does not.
  appA = await oidcApp(t, projectId, "fcl-a", {
    redirectUris: [`${a.origin}/cb`],
    postLogoutRedirectUris: [`${a.origin}/signed-out`],
    devMode: true,
    frontchannelLogoutUri: `${a.origin}/fc-logout`,
    frontchannelLogoutSessionRequired: true,
  });
  appB = await oidcApp(t, projectId, "fcl-b", { redirectUris: [`${b.origin}/cb`], devMode: true, frontchannelLogoutUri: `${b.origin}/fc-logout?tenant=1` });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await Promise.all([a.close(), b.close()]);
});

/** Signs `page` into `app` (through the hosted login the first time, by single sign-on after); the ID token. */
async function signInto(page: Page, app: OidcApp, rp: Rp, loginName?: string): Promise<string> {
  const config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
  const s = await startAuthorization(config, `${rp.origin}/cb`, "openid profile");
  await page.goto(s.url);
  if (loginName) {
    await page.getByLabel("Login name or e-mail").fill(loginName);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Continue" }).click();
  }
  const tokens = await redeemCode(page, config, `${rp.origin}/cb`, s);
  return tokens.id_token as string;
}

run("OIDC front-channel logout in Chromium", () => {
  it("end_session loads each application's logout frame (iss and sid when asked), under a CSP of their origins, then redirects", async () => {
    await createHuman(t, orgId, "fcl-alice");
    const context = await newContext(browser);
    const page = await context.newPage();
    const idToken = await signInto(page, appA, a, `fcl-alice@${domain}`);
    await signInto(page, appB, b);
    const sid = (JSON.parse(Buffer.from(idToken.split(".")[1] ?? "", "base64url").toString()) as { sid: string }).sid;
    expect(sid).toEqual(expect.any(String));

    const csp: string[] = [];
    page.on("response", (r) => {
      if (r.url().includes("/oidc/v1/end_session")) csp.push(r.headers()["content-security-policy"] ?? "");
    });
    const query = new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: `${a.origin}/signed-out`, state: "st-1" });
    await page.goto(`${issuerOf(t)}/oidc/v1/end_session?${query}`);
    await page.waitForURL((u) => u.href.startsWith(`${a.origin}/signed-out`), { timeout: 20_000 });
    expect(new URL(page.url()).searchParams.get("state")).toBe("st-1");

    const [frameA] = a.hits("/fc-logout");
    expect(frameA?.searchParams.get("iss")).toBe(issuerOf(t));
    expect(frameA?.searchParams.get("sid")).toBe(sid);
    const [frameB] = b.hits("/fc-logout");
    expect(frameB?.searchParams.get("tenant")).toBe("1");
    expect(frameB?.searchParams.has("sid")).toBe(false);
    expect(frameB?.searchParams.has("iss")).toBe(false);
    // The page's frames may come from these two origins and nowhere else.
    const frameSrc = csp[0]?.split(";").find((d) => d.trim().startsWith("frame-src"));
    expect(frameSrc?.trim().split(/\s+/).slice(1).sort()).toEqual([a.origin, b.origin].sort());
    // The session is over: the next authorization asks for the login name again.
    const config = await discover(t, appA.clientId, appA.clientSecret, oidc.ClientSecretBasic(appA.clientSecret));
    await page.goto((await startAuthorization(config, `${a.origin}/cb`, "openid")).url);
    await expect(page.getByLabel("Login name or e-mail").isVisible()).resolves.toBe(true);
    await context.close();
  }, 90_000);

  it("the hosted login's logout page loads the frames of the sessions it ends, then shows signed out", async () => {
    await createHuman(t, orgId, "fcl-bob");
    const context = await newContext(browser);
    const page = await context.newPage();
    const before = a.hits("/fc-logout").length;
    await signInto(page, appA, a, `fcl-bob@${domain}`);
    await page.goto(`${issuerOf(t)}/ui/login/logout`);
    await page.getByRole("button", { name: "Sign out of all accounts" }).click();
    await page.waitForURL((u) => u.pathname === "/ui/login/logout/done", { timeout: 20_000 });
    const frames = a.hits("/fc-logout").slice(before);
    expect(frames).toHaveLength(1);
    expect(frames[0]?.searchParams.get("iss")).toBe(issuerOf(t));
    expect(frames[0]?.searchParams.get("sid")).toEqual(expect.any(String));
    // B was not signed into by this session: its frame was not loaded.
    expect(b.hits("/fc-logout")).toHaveLength(1);
    await context.close();
  }, 90_000);

  it("is advertised, and refuses a front-channel logout URI over http outside dev mode, or with a fragment", async () => {
    const create = async (name: string, uri: string) =>
      (
        await fails(
          t,
          "rest",
          t.pat,
          "CreateApplication",
          { projectId, name, oidc: { redirectUris: ["https://rp.example.com/cb"], frontchannelLogoutUri: uri } },
          "invalid_argument",
        )
      ).reason;
    const meta = await (await fetch(`${t.url}/.well-known/openid-configuration`)).json();
    expect(meta).toMatchObject({ frontchannel_logout_supported: true, frontchannel_logout_session_supported: true });
    expect(await create("fcl-http", "http://rp.example.com/fc")).toBe("Errors.App.Uri.HttpsRequired");
    expect(await create("fcl-fragment", "https://rp.example.com/fc#x")).toBe("Errors.App.Uri.Fragment");
  });
});
