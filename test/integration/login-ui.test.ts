// The hosted login in a real browser (Debian's chromium through playwright-core): an openid-client relying party
// starts a code flow, the browser signs in through the pages (password; password + TOTP; a code by e-mail), comes
// back with a code, and the RP redeems it. Also: one answer for a wrong password and an unknown user, single sign-on
// on the browser's session, account selection, German texts, a phone-sized screen, and an axe-core scan per page.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, Page } from "playwright-core";
import { setLockout, setLogin, totpCode } from "../support/authn.js";
import {
  accessibilityProblems,
  browserAvailable,
  callbackQuery,
  launchBrowser,
  newContext,
  PHONE,
  type RpCallback,
  redeemCode,
  type Started,
  screenshot,
  startAuthorization,
  startBrowserServer,
  startRpCallback,
} from "../support/browser.js";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { discover, type OidcApp, oidc, oidcApp } from "../support/oidc.js";
import { admin, ok } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";
import { codeFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";

const run = browserAvailable() ? describe : describe.skip;

let t: TestServer;
let browser: Browser;
let smtp: SmtpSink;
let rp: RpCallback;
let orgId: string;
let domain: string;
let app: OidcApp;
let config: oidc.Configuration;

beforeAll(async () => {
  if (!browserAvailable()) return;
  smtp = await startSmtpSink();
  rp = await startRpCallback();
  t = await startBrowserServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.com>" });
  browser = await launchBrowser();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Browser Project");
  app = await oidcApp(t, projectId, "browser-rp", { redirectUris: [rp.url], devMode: true });
  config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await smtp?.close();
  await rp?.close();
});

const authorizationUrl = (extra: Record<string, string> = {}): Promise<Started> => startAuthorization(config, rp.url, "openid profile email", extra);

/** The RP's half after the browser is back: the code redeemed, the ID token checked; its subject. */
async function redeem(page: Page, s: Started): Promise<string> {
  const tokens = await redeemCode(page, config, rp.url, s);
  return tokens.claims()?.sub as string;
}

async function expectAccessible(page: Page): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
}

async function enterLoginName(page: Page, loginName: string): Promise<void> {
  await page.getByLabel("Login name or e-mail").fill(loginName);
  await page.getByRole("button", { name: "Continue" }).click();
}

async function enterPassword(page: Page, password = PASSWORD): Promise<void> {
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Continue" }).click();
}

run("sign-in with a password", () => {
  it("goes login name → password → back to the RP, which gets tokens for the user", async () => {
    const userId = await createHuman(t, orgId, "pw-alice");
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await expect(page.getByRole("heading", { level: 1 })).toBeTruthy();
    expect(await page.title()).toBe("Sign in");
    await screenshot(page, "login-name-en-1280");
    await expectAccessible(page);
    await enterLoginName(page, `pw-alice@${domain}`);
    expect(await page.title()).toBe("Enter your password");
    await screenshot(page, "password-en-1280");
    await expectAccessible(page);
    await enterPassword(page);
    expect(await redeem(page, s)).toBe(userId);

    // The browser's session signs the next request in without a page (single sign-on).
    const again = await authorizationUrl();
    await page.goto(again.url);
    expect(await redeem(page, again)).toBe(userId);

    // prompt=none: the same browser gets a code without a page; another browser gets login_required.
    const silent = await authorizationUrl({ prompt: "none" });
    await page.goto(silent.url);
    expect(await redeem(page, silent)).toBe(userId);
    const stranger = await newContext(browser);
    const strangerPage = await stranger.newPage();
    const refused = await authorizationUrl({ prompt: "none" });
    await strangerPage.goto(refused.url);
    const query = await callbackQuery(strangerPage, rp.url);
    expect(query.get("error")).toBe("login_required");
    expect(query.get("state")).toBe(refused.state);
    await stranger.close();
    await context.close();
  });

  it("answers a wrong password and an unknown login name with the same message", async () => {
    await createHuman(t, orgId, "pw-bob");
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await enterLoginName(page, `pw-bob@${domain}`);
    await enterPassword(page, "Wrong-Passw0rd!");
    const wrong = await page.getByRole("alert").textContent();
    expect(wrong).toContain("The login name or the password is wrong.");
    await screenshot(page, "password-wrong-en-1280");
    await expectAccessible(page);

    await context.close();

    // A browser that holds no session: the unknown name gets the password page and then the very same message.
    const other = await newContext(browser);
    const page2 = await other.newPage();
    await page2.goto((await authorizationUrl()).url);
    await enterLoginName(page2, `nobody-${Date.now()}@${domain}`);
    expect(await page2.title()).toBe("Enter your password");
    await enterPassword(page2, "Wrong-Passw0rd!");
    expect(await page2.getByRole("alert").textContent()).toBe(wrong);
    await other.close();
  });
});

run("lockout", () => {
  it("says the account is locked once the lockout applies, and not before", async () => {
    const lockOrg = (await admin(t, "CreateOrganization", { name: "Lock Org" })).organizationId as string;
    const lockDomain = (await admin(t, "GetOrganizationByID", { organizationId: lockOrg })).organization.primaryDomain;
    await setLockout(t, lockOrg, 5, 2);
    await createHuman(t, lockOrg, "lock-kim");
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto((await authorizationUrl()).url);
    await enterLoginName(page, `lock-kim@${lockDomain}`);
    await enterPassword(page, "Wrong-Passw0rd!");
    expect(await page.getByRole("alert").textContent()).toContain("The login name or the password is wrong.");
    await enterPassword(page, "Wrong-Passw0rd!");
    await enterPassword(page, PASSWORD);
    expect(await page.getByRole("alert").textContent()).toContain("This account is locked");
    await screenshot(page, "password-locked-en-1280");
    await expectAccessible(page);
    await context.close();
  });
});

run("second factors", () => {
  it("asks for the TOTP code of a user who set one up", async () => {
    const userId = await createHuman(t, orgId, "totp-carol");
    const { secret } = await ok(t, "rest", t.pat, "RegisterTOTP", { userId });
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId, code: totpCode(secret) });
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await enterLoginName(page, `totp-carol@${domain}`);
    await enterPassword(page);
    expect(await page.title()).toBe("Authenticator app");
    await screenshot(page, "mfa-totp-en-1280");
    await expectAccessible(page);
    await page.getByLabel("Code").fill("000000");
    await page.getByRole("button", { name: "Verify" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("The code is wrong.");
    await page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Verify" }).click();
    expect(await redeem(page, s)).toBe(userId);
    await context.close();
  });

  it("sends a code by e-mail and accepts it", async () => {
    const { id: userId } = await admin(t, "CreateUser", {
      organizationId: orgId,
      username: "otp-dave",
      human: {
        profile: { givenName: "Dave", familyName: "Otp" },
        email: { email: "otp-dave@example.com", isVerified: true },
        password: { password: PASSWORD },
      },
    });
    await ok(t, "rest", t.pat, "AddOTPEmail", { userId });
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await enterLoginName(page, `otp-dave@${domain}`);
    await enterPassword(page);
    expect(await page.title()).toBe("Code by e-mail");
    await screenshot(page, "mfa-email-en-1280");
    await page.getByRole("button", { name: "Send the code" }).click();
    const mail = await smtp.next("otp-dave@example.com");
    await page.getByLabel("Code").fill(codeFrom(mail));
    await screenshot(page, "mfa-email-sent-en-1280");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Verify" }).click();
    expect(await redeem(page, s)).toBe(userId);
    await context.close();
  });
});

run("languages, screens and accounts", () => {
  it("speaks German when the browser or ui_locales asks for it, also on a phone-sized screen", async () => {
    const context = await newContext(browser, { locale: "de-DE", viewport: PHONE });
    const page = await context.newPage();
    await page.goto((await authorizationUrl()).url);
    expect(await page.title()).toBe("Anmelden");
    expect(await page.getAttribute("html", "lang")).toBe("de");
    await screenshot(page, "login-name-de-375");
    await expectAccessible(page);
    await context.close();

    const english = await newContext(browser, { locale: "de-DE" });
    const page2 = await english.newPage();
    await page2.goto((await authorizationUrl({ ui_locales: "en" })).url);
    expect(await page2.title()).toBe("Sign in");
    await english.close();
  });

  it("goes through a whole sign-in with a second factor in German on a phone-sized screen", async () => {
    const userId = await createHuman(t, orgId, "de-lena");
    const { secret } = await ok(t, "rest", t.pat, "RegisterTOTP", { userId });
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId, code: totpCode(secret) });
    const context = await newContext(browser, { locale: "de-DE", viewport: PHONE });
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await page.getByLabel("Anmeldename oder E-Mail").fill(`de-lena@${domain}`);
    await page.getByRole("button", { name: "Weiter" }).click();
    expect(await page.title()).toBe("Passwort eingeben");
    await screenshot(page, "password-de-375");
    await expectAccessible(page);
    await page.getByLabel("Passwort", { exact: true }).fill("Falsches-Passw0rt!");
    await page.getByRole("button", { name: "Weiter" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("Der Anmeldename oder das Passwort ist falsch.");
    await screenshot(page, "password-wrong-de-375");
    await page.getByLabel("Passwort", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Weiter" }).click();
    expect(await page.title()).toBe("Authenticator-App");
    await screenshot(page, "mfa-totp-de-375");
    await expectAccessible(page);
    await page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Bestätigen" }).click();
    expect(await redeem(page, s)).toBe(userId);
    await page.goto(`${t.server.tokens.issuer}/ui/login/logout`);
    expect(await page.title()).toBe("Abmelden");
    await screenshot(page, "logout-de-375");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Von allen Konten abmelden" }).click();
    expect(await page.title()).toBe("Sie sind abgemeldet");
    await screenshot(page, "logout-done-de-375");
    await expectAccessible(page);
    await context.close();
  });

  it("lists the browser's accounts for prompt=select_account and continues with the chosen one", async () => {
    const first = await createHuman(t, orgId, "acct-erin");
    const second = await createHuman(t, orgId, "acct-frank");
    const context = await newContext(browser);
    const page = await context.newPage();
    for (const name of ["acct-erin", "acct-frank"]) {
      const s = await authorizationUrl({ prompt: "login" });
      await page.goto(s.url);
      await enterLoginName(page, `${name}@${domain}`);
      await enterPassword(page);
      await redeem(page, s);
    }
    const s = await authorizationUrl({ prompt: "select_account" });
    await page.goto(s.url);
    expect(await page.title()).toBe("Choose an account");
    await screenshot(page, "accounts-en-1280");
    await expectAccessible(page);
    await page.getByRole("button", { name: /acct-erin/ }).click();
    expect(await redeem(page, s)).toBe(first);
    expect(second).not.toBe(first);
    await context.close();
  });
});

run("branding", () => {
  it("applies an organization's colours (light and dark) and hides the login name suffix when it says so", async () => {
    const brandOrg = (await admin(t, "CreateOrganization", { name: "Brand Org" })).organizationId as string;
    const brandDomain = (await admin(t, "GetOrganizationByID", { organizationId: brandOrg })).organization.primaryDomain;
    await createHuman(t, brandOrg, "brand-hana");
    await admin(t, "SetBrandingSettings", {
      organizationId: brandOrg,
      settings: {
        primaryColor: "#7a1fa2",
        backgroundColor: "#fffaf0",
        warnColor: "#b00020",
        fontColor: "#222222",
        hideLoginNameSuffix: true,
        themeMode: "THEME_MODE_AUTO",
        darkPrimaryColor: "#e0b0ff",
        darkBackgroundColor: "#1a1024",
        darkWarnColor: "#ff8a80",
        darkFontColor: "#f5f5f5",
      },
    });
    const buttonColour = (page: Page) =>
      page
        .getByRole("button", { name: /Continue/ })
        .evaluate((b) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(b).backgroundColor);
    for (const colorScheme of ["light", "dark"] as const) {
      const context = await newContext(browser, { colorScheme });
      const page = await context.newPage();
      await page.goto((await authorizationUrl({ scope: `openid urn:svc:iam:org:id:${brandOrg}` })).url);
      expect(await buttonColour(page)).toBe(colorScheme === "light" ? "rgb(122, 31, 162)" : "rgb(224, 176, 255)");
      await screenshot(page, `login-name-branded-${colorScheme}-1280`);
      await expectAccessible(page);
      await enterLoginName(page, `brand-hana@${brandDomain}`);
      expect(await page.locator(".identity").textContent()).toBe("brand-hana");
      await context.close();
    }
  });
});

run("refusals without a 5xx", () => {
  it("answers a form without this browser's CSRF token with the error page (403)", async () => {
    const res = await fetch(`${t.url}/ui/login/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "loginName=x&_csrf=forged",
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await res.text()).toContain("Your session on this page expired");
  });

  it("answers an unknown auth request with a page that says what to do", async () => {
    const res = await fetch(`${t.url}/ui/login/login?authRequest=unknown`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain("This sign-in link is not valid");
  });

  it("turns login settings with forced MFA into the set-up step", async () => {
    await setLogin(t, orgId, { forceMfa: true });
    try {
      await createHuman(t, orgId, "force-gina");
      const context = await newContext(browser);
      const page = await context.newPage();
      await page.goto((await authorizationUrl()).url);
      await enterLoginName(page, `force-gina@${domain}`);
      await enterPassword(page);
      expect(new URL(page.url()).pathname).toBe("/ui/login/mfa/setup");
      await context.close();
    } finally {
      await admin(t, "ResetLoginSettings", { organizationId: orgId }).catch(() => undefined);
    }
  });
});
