// The hosted login's MFA set-up and account page in a real browser (Debian's chromium through playwright-core):
// forced MFA sets up TOTP from the QR page and signs in; a passkey is registered with Chromium's virtual
// authenticator and then signs in by itself; the account page changes the profile and the password, sets up and
// removes TOTP, and ends sessions; another user's session in the same browser never shows on a user's page.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { setLogin, totpCode } from "../support/authn.js";
import {
  accessibilityProblems,
  browserAvailable,
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
let rp: RpCallback;
let smtp: SmtpSink;
let orgId: string;
let domain: string;
let app: OidcApp;
let config: oidc.Configuration;

beforeAll(async () => {
  if (!browserAvailable()) return;
  rp = await startRpCallback();
  smtp = await startSmtpSink();
  t = await startBrowserServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.com>" });
  browser = await launchBrowser();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Account Project");
  app = await oidcApp(t, projectId, "account-rp", { redirectUris: [rp.url], devMode: true });
  config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await rp?.close();
  await smtp?.close();
});

const authorizationUrl = (extra: Record<string, string> = {}): Promise<Started> => startAuthorization(config, rp.url, "openid profile", extra);

/** The RP's half: the code redeemed for tokens; the ID token's subject and amr. */
async function redeem(page: Page, s: Started): Promise<{ sub: string; amr: string[] }> {
  const tokens = await redeemCode(page, config, rp.url, s);
  const claims = tokens.claims();
  return { sub: claims?.sub as string, amr: (claims?.amr as string[] | undefined) ?? [] };
}

/** The address the browser uses (SVC_EXTERNAL_URL): its cookies belong to that host. */
const base = () => t.url.replace("127.0.0.1", "localhost");

async function expectAccessible(page: Page): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
}

async function signIn(page: Page, loginName: string, password = PASSWORD): Promise<void> {
  await page.getByLabel(/^(Login name or e-mail|Anmeldename oder E-Mail)$/).fill(loginName);
  await page.getByRole("button", { name: /^(Continue|Weiter)$/ }).click();
  await page.getByLabel(/^(Password|Passwort)$/).fill(password);
  await page.getByRole("button", { name: /^(Continue|Weiter)$/ }).click();
}

/** Signs in without an auth request: the browser lands on the account page; the session's id. */
async function signInToAccount(page: Page, username: string, password = PASSWORD): Promise<string> {
  await page.goto(`${base()}/ui/login/login?fresh=1`);
  await signIn(page, `${username}@${domain}`, password);
  await page.waitForURL((u) => u.pathname === "/ui/login/account");
  return new URL(page.url()).searchParams.get("session") as string;
}

async function withForcedMfa(body: () => Promise<void>): Promise<void> {
  await setLogin(t, orgId, { forceMfa: true });
  try {
    await body();
  } finally {
    await admin(t, "ResetLoginSettings", { organizationId: orgId }).catch(() => undefined);
  }
}

async function virtualAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
}

run("MFA set-up during a sign-in", () => {
  it("sets up TOTP from the QR page when the login settings force MFA, then signs in with it", async () => {
    await withForcedMfa(async () => {
      const userId = await createHuman(t, orgId, "setup-hanna");
      const context = await newContext(browser);
      const page = await context.newPage();
      const s = await authorizationUrl();
      await page.goto(s.url);
      await signIn(page, `setup-hanna@${domain}`);
      expect(new URL(page.url()).pathname).toBe("/ui/login/mfa/setup");
      expect(await page.title()).toBe("Set up a second factor");
      await screenshot(page, "mfa-setup-en-1280");
      await expectAccessible(page);

      await page.getByRole("link", { name: "Authenticator app" }).click();
      expect(await page.title()).toBe("Set up an authenticator app");
      expect(await page.locator(".qr svg").count()).toBe(1);
      const secret = ((await page.locator("#totp-secret").textContent()) ?? "").trim();
      expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
      expect(await page.getByRole("link", { name: /Open in an authenticator app/ }).getAttribute("href")).toContain(`secret=${secret}`);
      await screenshot(page, "mfa-setup-totp-en-1280");
      await expectAccessible(page);

      // A wrong code keeps the registration the page showed (the same secret), with the error at the field.
      await page.getByLabel("Code from the app").fill("000000");
      await page.getByRole("button", { name: "Turn on" }).click();
      expect(await page.getByRole("alert").textContent()).toContain("The code is wrong.");
      expect(((await page.locator("#totp-secret").textContent()) ?? "").trim()).toBe(secret);
      expect(await page.getByLabel("Code from the app").getAttribute("aria-describedby")).toBe("f-code-error");

      await page.getByLabel("Code from the app").fill(totpCode(secret));
      await page.getByRole("button", { name: "Turn on" }).click();
      // The code that verified the registration is spent: the session proves the new factor with the next one.
      expect(await page.title()).toBe("Authenticator app");
      await page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
      await page.getByRole("button", { name: "Verify" }).click();
      const { sub, amr } = await redeem(page, s);
      expect(sub).toBe(userId);
      expect(amr).toEqual(expect.arrayContaining(["pwd", "otp", "mfa"]));
      await context.close();
    });
  });

  it("registers a passkey with a virtual authenticator, and the passkey then signs in by itself", async () => {
    await withForcedMfa(async () => {
      const userId = await createHuman(t, orgId, "setup-ivan");
      const context = await newContext(browser);
      const page = await context.newPage();
      await virtualAuthenticator(context, page);
      const s = await authorizationUrl();
      await page.goto(s.url);
      await signIn(page, `setup-ivan@${domain}`);
      await page.getByRole("link", { name: "Passkey or security key" }).click();
      expect(await page.title()).toBe("Add a passkey");
      expect(await page.locator("#webauthn-form").getAttribute("data-ceremony")).toBe("register");
      await screenshot(page, "mfa-setup-passkey-en-1280");
      await expectAccessible(page);
      await page.getByLabel("Name of the passkey").fill("Virtual key");
      await page.getByRole("button", { name: "Create passkey" }).click();
      // The new passkey is proven once on the session: the security-key step, then the RP.
      await page.waitForURL((u) => u.pathname === "/ui/login/mfa/u2f");
      await page.getByRole("button", { name: "Use passkey" }).click();
      expect((await redeem(page, s)).sub).toBe(userId);
      const { result } = await admin(t, "ListPasskeys", { userId });
      expect(result.map((k: { name: string }) => k.name)).toEqual(["Virtual key"]);

      // A new sign-in with the passkey only (prompt=login: no single sign-on).
      const again = await authorizationUrl({ prompt: "login" });
      await page.goto(again.url);
      await page.getByLabel("Login name or e-mail").fill(`setup-ivan@${domain}`);
      await page.getByRole("button", { name: "Continue" }).click();
      // Every name gets the password page (it tells nobody who has a passkey); the passkey is one link away.
      expect(new URL(page.url()).pathname).toBe("/ui/login/password");
      await page.getByRole("link", { name: "Sign in with a passkey instead" }).click();
      expect(new URL(page.url()).pathname).toBe("/ui/login/passkey");
      await screenshot(page, "passkey-en-1280");
      await expectAccessible(page);
      await page.getByRole("button", { name: "Use passkey" }).click();
      const { sub, amr } = await redeem(page, again);
      expect(sub).toBe(userId);
      expect(amr).toContain("hwk");
      expect(amr).not.toContain("pwd");

      // The account page lists the passkey and removes it.
      await page.goto(`${base()}/ui/login/account`);
      expect(await page.title()).toBe("Your account");
      await page.getByRole("button", { name: "Remove passkey Virtual key" }).click();
      expect(await page.getByRole("status").first().textContent()).toContain("The passkey is removed.");
      expect((await admin(t, "ListPasskeys", { userId })).result ?? []).toEqual([]);
      await context.close();
    });
  });
});

run("the account page", () => {
  it("asks for the password again before removing a factor when the sign-in is more than a few minutes old", async () => {
    const userId = await createHuman(t, orgId, "acct-sudo");
    const { secret } = await ok(t, "rest", t.pat, "RegisterTOTP", { userId });
    await ok(t, "rest", t.pat, "VerifyTOTPRegistration", { userId, code: totpCode(secret) });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${base()}/ui/login/login?fresh=1`);
    await signIn(page, `acct-sudo@${domain}`);
    await page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.waitForURL((u) => u.pathname === "/ui/login/account");
    // Eleven minutes later (the sign-in itself is still valid for days): removing the authenticator asks first.
    t.advanceClock(11 * 60_000);
    try {
      await page.getByRole("button", { name: "Remove authenticator app" }).click();
    } finally {
      // Back to the real time: the other tests compute TOTP codes with it.
      t.advanceClock(-11 * 60_000);
    }
    expect(new URL(page.url()).pathname).toBe("/ui/login/password");
    expect((await admin(t, "ListAuthenticationMethodTypes", { userId })).authMethodTypes).toContain("AUTHENTICATION_METHOD_TYPE_TOTP");
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL((u) => u.pathname === "/ui/login/account");
    await page.getByRole("button", { name: "Remove authenticator app" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain("The authenticator app is removed.");
    await context.close();
  });

  it("changes the display name and the password, sets up and removes TOTP", async () => {
    const userId = await createHuman(t, orgId, "acct-julia");
    const context = await newContext(browser);
    const page = await context.newPage();
    await signInToAccount(page, "acct-julia");
    expect(await page.title()).toBe("Your account");
    await screenshot(page, "account-en-1280");
    await expectAccessible(page);

    // A required name left empty: refused at its field, with a 400 and nothing changed.
    await page.getByLabel("First name").fill("");
    const [refused] = await Promise.all([
      page.waitForResponse((x) => x.url().endsWith("/account/profile")),
      page.getByRole("button", { name: "Save" }).click(),
    ]);
    expect(refused.status()).toBe(400);
    expect(await page.getByLabel("First name").getAttribute("aria-describedby")).toBe("f-givenName-error");
    await page.getByLabel("First name").fill("Julia");
    await page.getByLabel("Display name").fill("Julia J.");
    await page.getByRole("button", { name: "Save" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain("Your changes are saved.");
    expect((await admin(t, "GetUserByID", { userId })).user.human.profile.displayName).toBe("Julia J.");

    // The repetition differs, then the current password is wrong: refused, in the user's words, without a 5xx.
    const changePassword = async (current: string, next: string, repeat: string) => {
      await page.getByLabel("Current password").fill(current);
      await page.getByLabel("New password", { exact: true }).fill(next);
      await page.getByLabel("Repeat the new password").fill(repeat);
      return page.getByRole("button", { name: "Change password" }).click();
    };
    await changePassword(PASSWORD, "Changed-Passw0rd!", "Changed-Passw0rd?");
    expect(await page.getByRole("alert").textContent()).toContain("The new passwords do not match.");
    expect(await page.getByLabel("Repeat the new password").getAttribute("aria-describedby")).toBe("f-repeatPassword-error");
    await changePassword("Wrong-Passw0rd!", "Changed-Passw0rd!", "Changed-Passw0rd!");
    expect(await page.getByRole("alert").textContent()).toContain("The current password is wrong.");
    expect(await page.getByLabel("Current password").getAttribute("aria-invalid")).toBe("true");
    await expectAccessible(page);
    await changePassword(PASSWORD, "Changed-Passw0rd!", "Changed-Passw0rd!");
    expect(await page.getByRole("status").first().textContent()).toContain("Your password is changed.");

    await page.getByRole("link", { name: "Set up an authenticator app" }).click();
    const secret = ((await page.locator("#totp-secret").textContent()) ?? "").trim();
    await page.getByLabel("Code from the app").fill(totpCode(secret));
    await page.getByRole("button", { name: "Turn on" }).click();
    // The user has a second factor now: this session proves it once, like every sign-in from now on.
    expect(await page.title()).toBe("Authenticator app");
    await page.getByLabel("Code").fill(totpCode(secret, Date.now() + 30_000));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.waitForURL((u) => u.pathname === "/ui/login/account");
    expect(await page.getByText("An authenticator app is set up.").count()).toBe(1);
    expect((await admin(t, "ListAuthenticationMethodTypes", { userId })).authMethodTypes).toContain("AUTHENTICATION_METHOD_TYPE_TOTP");
    await page.getByRole("button", { name: "Remove authenticator app" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain("The authenticator app is removed.");
    expect((await admin(t, "ListAuthenticationMethodTypes", { userId })).authMethodTypes ?? []).not.toContain("AUTHENTICATION_METHOD_TYPE_TOTP");

    // A new e-mail address: a code goes to it, and the code verifies it.
    await page.getByLabel("New e-mail address").fill("julia.new@example.com");
    await page.getByRole("button", { name: "Change e-mail address" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain("We sent a verification code");
    await page.getByLabel("Verification code").fill(codeFrom(await smtp.next("julia.new@example.com")));
    await page.getByRole("button", { name: "Verify" }).click();
    expect(await page.getByRole("status").first().textContent()).toContain("Your e-mail address is verified.");
    const email = (await admin(t, "GetUserByID", { userId })).user.human.email;
    expect(email).toEqual(expect.objectContaining({ email: "julia.new@example.com", isVerified: true }));

    // The new password signs in.
    const other = await newContext(browser);
    await signInToAccount(await other.newPage(), "acct-julia", "Changed-Passw0rd!");
    await other.close();
    await context.close();
  });

  it("ends another session of the user, and ending the current one signs out", async () => {
    await createHuman(t, orgId, "acct-karl");
    const laptop = await newContext(browser);
    const phone = await newContext(browser, { locale: "de-DE", viewport: PHONE });
    const page = await laptop.newPage();
    const phonePage = await phone.newPage();
    const here = await signInToAccount(page, "acct-karl");
    const there = await signInToAccount(phonePage, "acct-karl");
    expect(await phonePage.title()).toBe("Ihr Konto");
    expect(await phonePage.getAttribute("html", "lang")).toBe("de");
    await screenshot(phonePage, "account-de-375");
    await expectAccessible(phonePage);

    await page.reload();
    const ends = page.locator('form[action$="/account/session/end"] input[name="target"]');
    expect(new Set(await ends.evaluateAll((xs) => xs.map((x) => (x as unknown as { value: string }).value)))).toEqual(new Set([here, there]));
    await page.locator(`form:has(input[name="target"][value="${there}"]) button`).click();
    expect(await page.getByRole("status").first().textContent()).toContain("The session is ended.");
    await phonePage.goto(`${base()}/ui/login/account?session=${there}`);
    expect(new URL(phonePage.url()).pathname).toBe("/ui/login/login");

    await page.getByRole("button", { name: "End and sign out" }).click();
    expect(await page.title()).toBe("You are signed out");
    await page.goto(`${base()}/ui/login/account`);
    expect(new URL(page.url()).pathname).toBe("/ui/login/login");
    await laptop.close();
    await phone.close();
  });

  it("never shows another user's session of the same browser, nor lets the user end it", async () => {
    await createHuman(t, orgId, "acct-lena");
    await createHuman(t, orgId, "acct-max");
    const context = await newContext(browser);
    const page = await context.newPage();
    const lena = await signInToAccount(page, "acct-lena");
    const max = await signInToAccount(page, "acct-max");
    await page.goto(`${base()}/ui/login/account?session=${lena}`);
    const content = await page.content();
    expect(content).toContain(`acct-lena@${domain}`);
    expect(content).not.toContain("acct-max");
    expect(content).not.toContain(max);
    expect(await page.locator('input[name="target"]').count()).toBe(1);

    // A forged form naming the other user's session: refused as unknown (the page of a gone session), and it lives on.
    await page.locator('input[name="target"]').evaluate((x, id) => {
      (x as unknown as { value: string }).value = id;
    }, max);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith("/account/session/end")),
      page.locator('form[action$="/account/session/end"] button').click(),
    ]);
    expect(response.status()).toBe(400);
    expect(await page.title()).toBe("Your sign-in was interrupted");
    await page.goto(`${base()}/ui/login/account?session=${max}`);
    expect(await page.content()).toContain(`acct-max@${domain}`);
    await context.close();
  });

  it("sends a browser without a signed-in session to the login page and answers a malformed form without a 5xx", async () => {
    const res = await fetch(`${base()}/ui/login/account`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`${base()}/ui/login/login`);
    const post = await fetch(`${base()}/ui/login/mfa/setup/totp`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "session=x&code=1",
    });
    expect(post.status).toBe(403);
  });
});
