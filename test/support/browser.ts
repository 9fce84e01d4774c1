// Browser tests: Debian's chromium driven by playwright-core (no browser download), a server whose external URL is
// the address the browser uses (cookies, redirects and the passkeys' relying party depend on it), an RP whose
// redirect URI is a loopback server (the test reads the code from the browser's URL), screenshots kept as artifacts
// under test-artifacts/screenshots, and an axe-core scan of each page.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { freePort } from "./apache.js";
import { oidc } from "./oidc.js";
import { ROOT, startTestServer, type TestServer } from "./server.js";

export const SCREENSHOTS = path.join(ROOT, "test-artifacts", "screenshots");
/** The relying party's redirect URI: a loopback server that answers every request with a small page. */
export interface RpCallback {
  url: string;
  close(): Promise<void>;
}

export async function startRpCallback(): Promise<RpCallback> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>RP</title><p>back at the RP</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/cb`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function chromiumPath(): string | undefined {
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) if (existsSync(p)) return p;
  try {
    return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export const browserAvailable = () => chromiumPath() !== undefined;

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("Debian's chromium is not installed (apt-get install chromium); .ci/run installs it");
  return chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A server on a port chosen beforehand, so that SVC_EXTERNAL_URL is the very address the browser uses. */
export async function startBrowserServer(env: Record<string, string> = {}): Promise<TestServer> {
  const port = await freePort();
  return startTestServer({ SVC_PORT: String(port), SVC_EXTERNAL_URL: `http://localhost:${port}`, ...env });
}

export interface Viewport {
  width: number;
  height: number;
}
export const DESKTOP: Viewport = { width: 1280, height: 800 };
export const PHONE: Viewport = { width: 375, height: 740 };

/** `storageState`: the cookies and storage of an earlier context (its hosted-login session, say). */
export async function newContext(
  browser: Browser,
  o: { viewport?: Viewport; locale?: string; colorScheme?: "light" | "dark"; storageState?: Awaited<ReturnType<BrowserContext["storageState"]>> } = {},
): Promise<BrowserContext> {
  return browser.newContext({
    viewport: o.viewport ?? DESKTOP,
    locale: o.locale ?? "en-US",
    colorScheme: o.colorScheme ?? "light",
    storageState: o.storageState,
  });
}

/** Saves a full-page screenshot as test-artifacts/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** axe-core's serious and critical violations of the page (WCAG 2.x A/AA rules). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Waits until the browser is at the RP's callback and returns its query. */
export async function callbackQuery(page: Page, callback: string): Promise<URLSearchParams> {
  await page.waitForURL((u) => u.href.startsWith(callback), { timeout: 15_000 });
  return new URL(page.url()).searchParams;
}

/** A code flow the browser is about to start: its authorization URL and what the RP keeps to redeem the code. */
export interface Started {
  url: string;
  verifier: string;
  state: string;
  nonce: string;
}

/** An authorization URL of the RP (openid-client: state, nonce, PKCE S256) towards `redirectUri`. */
export async function startAuthorization(config: oidc.Configuration, redirectUri: string, scope: string, extra: Record<string, string> = {}): Promise<Started> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    ...extra,
  });
  return { url: url.href, verifier, state, nonce };
}

/** The RP's half once the browser is back at `redirectUri`: the code redeemed, the ID token checked. */
export async function redeemCode(page: Page, config: oidc.Configuration, redirectUri: string, s: Started) {
  await callbackQuery(page, redirectUri);
  return oidc.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: s.verifier,
    expectedState: s.state,
    expectedNonce: s.nonce,
    idTokenExpected: true,
  });
}
