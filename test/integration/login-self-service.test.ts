// The hosted login's self-service pages in a real browser, through an openid-client relying party: changing a
// password that must be changed, resetting a forgotten one by the e-mail's link, registering (prompt=create) and
// verifying the e-mail address. Also the domain rule behind registration over the API: a login client may create
// a human user only where the login settings allow registration, and nothing more than a person signing up would.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, Page } from "playwright-core";
import { loginClient, setLogin } from "../support/authn.js";
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
import { createHuman, createOrg, defaultOrgId, type Machine, PASSWORD, project } from "../support/fixtures.js";
import { discover, type OidcApp, oidc, oidcApp } from "../support/oidc.js";
import { admin, fails, ok, VIAS } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";

const run = browserAvailable() ? describe : describe.skip;
const NEW_PASSWORD = "Changed-Passw0rd!";

let t: TestServer;
let browser: Browser;
let smtp: SmtpSink;
let rp: RpCallback;
let orgId: string;
let domain: string;
let config: oidc.Configuration;

beforeAll(async () => {
  smtp = await startSmtpSink();
  rp = await startRpCallback();
  t = await startBrowserServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.com>" });
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Self-service Project");
  const app: OidcApp = await oidcApp(t, projectId, "self-service-rp", { redirectUris: [rp.url], devMode: true });
  config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
  if (browserAvailable()) browser = await launchBrowser();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await smtp?.close();
  await rp?.close();
});

const authorizationUrl = (extra: Record<string, string> = {}): Promise<Started> => startAuthorization(config, rp.url, "openid profile email", extra);

async function redeem(page: Page, s: Started): Promise<string> {
  const tokens = await redeemCode(page, config, rp.url, s);
  return tokens.claims()?.sub as string;
}

async function expectAccessible(page: Page): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
}

async function signIn(page: Page, loginName: string, password = PASSWORD): Promise<void> {
  await page.getByLabel("Login name or e-mail").fill(loginName);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Continue" }).click();
}

/** The error tied to a field (aria-describedby), as a screen reader reads it with the field. */
async function fieldError(page: Page, label: string): Promise<string | null> {
  const ids = (await page.getByLabel(label, { exact: true }).getAttribute("aria-describedby")) ?? "";
  const errorId = ids.split(" ").find((id) => id.endsWith("-error"));
  return errorId ? page.locator(`#${errorId}`).textContent() : null;
}

run("changing a password that must be changed", () => {
  it("asks for it after the password, refuses a weak one on its field, then ends with tokens", async () => {
    const { id: userId } = await admin(t, "CreateUser", {
      organizationId: orgId,
      username: "chg-hana",
      human: {
        profile: { givenName: "Hana", familyName: "Change" },
        email: { email: "chg-hana@example.com" },
        password: { password: PASSWORD, changeRequired: true },
      },
    });
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await signIn(page, `chg-hana@${domain}`);
    expect(new URL(page.url()).pathname).toBe("/ui/login/password/change");
    expect(await page.title()).toBe("Change your password");
    await screenshot(page, "password-change-en-1280");
    await expectAccessible(page);

    await page.getByLabel("Current password").fill("Wrong-Passw0rd!");
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("Repeat the new password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await fieldError(page, "Current password")).toBe("Your current password is wrong.");

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill("weak");
    await page.getByLabel("Repeat the new password").fill("weak");
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await fieldError(page, "New password")).toBe("This password does not meet the rules below.");
    expect(await page.locator("#password-rules li[data-rule=length]").textContent()).toMatch(/At least \d+ characters/);
    await screenshot(page, "password-change-weak-en-1280");
    await expectAccessible(page);

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("Repeat the new password").fill("Other-Passw0rd!");
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await fieldError(page, "Repeat the new password")).toBe("The two passwords are not the same.");

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("Repeat the new password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await redeem(page, s)).toBe(userId);
    await context.close();

    // The new password is the one that signs in now.
    const fresh = await newContext(browser);
    const page2 = await fresh.newPage();
    const again = await authorizationUrl();
    await page2.goto(again.url);
    await signIn(page2, `chg-hana@${domain}`, NEW_PASSWORD);
    expect(await redeem(page2, again)).toBe(userId);
    await fresh.close();
  });
});

run("changing an expired password", () => {
  it("asks for a new password once the password is older than the expiry setting allows", async () => {
    const userId = await createHuman(t, orgId, "exp-leo");
    // A password set 60 days ago, under a 30-day expiry.
    await t.server.db.prisma.user.update({ where: { id: userId }, data: { passwordChangedAt: new Date(Date.now() - 60 * 86_400_000) } });
    await admin(t, "SetPasswordExpirySettings", { organizationId: orgId, settings: { maxAgeDays: "30", expireWarnDays: "5" } });
    try {
      const context = await newContext(browser, { locale: "de-DE", viewport: PHONE });
      const page = await context.newPage();
      const s = await authorizationUrl();
      await page.goto(s.url);
      await page.getByLabel("Anmeldename oder E-Mail").fill(`exp-leo@${domain}`);
      await page.getByRole("button", { name: "Weiter" }).click();
      await page.getByLabel("Passwort", { exact: true }).fill(PASSWORD);
      await page.getByRole("button", { name: "Weiter" }).click();
      expect(await page.title()).toBe("Passwort ändern");
      await screenshot(page, "password-change-de-375");
      await expectAccessible(page);
      await page.getByLabel("Aktuelles Passwort").fill(PASSWORD);
      await page.getByLabel("Neues Passwort", { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel("Neues Passwort wiederholen").fill(NEW_PASSWORD);
      await page.getByRole("button", { name: "Passwort ändern" }).click();
      expect(await redeem(page, s)).toBe(userId);
      await context.close();
    } finally {
      await admin(t, "ResetPasswordExpirySettings", { organizationId: orgId }).catch(() => undefined);
    }
  });
});

run("resetting a forgotten password by e-mail", () => {
  it("sends a link from the password page, sets the new password there, and signs in with it", async () => {
    const userId = await createHuman(t, orgId, "reset-ivan");
    const context = await newContext(browser);
    const page = await context.newPage();
    const s = await authorizationUrl();
    await page.goto(s.url);
    await page.getByLabel("Login name or e-mail").fill(`reset-ivan@${domain}`);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    expect(await page.title()).toBe("Reset your password");
    expect(await page.getByLabel("Login name or e-mail").inputValue()).toBe(`reset-ivan@${domain}`);
    await screenshot(page, "password-reset-en-1280");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Send the link" }).click();
    expect(await page.title()).toBe("Check your e-mail");
    const sent = await page.locator("main").textContent();
    await screenshot(page, "password-reset-sent-en-1280");
    await expectAccessible(page);

    const link = linkFrom(await smtp.next("reset-ivan@example.com"));
    expect(new URL(link).pathname).toBe("/ui/login/password/set");
    await page.goto(link);
    expect(await page.title()).toBe("Set a new password");
    await screenshot(page, "password-set-en-1280");
    await expectAccessible(page);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("Repeat the new password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    expect(await page.title()).toBe("Your password is changed");
    await screenshot(page, "password-set-done-en-1280");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Sign in" }).click();
    expect(await page.title()).toBe("Enter your password");
    await page.getByLabel("Password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Continue" }).click();
    expect(await redeem(page, s)).toBe(userId);

    // The link is spent; a login name nobody has gets the very same answer (and no e-mail).
    await page.goto(link);
    await page.getByLabel("New password", { exact: true }).fill("Another-Passw0rd!");
    await page.getByLabel("Repeat the new password").fill("Another-Passw0rd!");
    await page.getByRole("button", { name: "Set password" }).click();
    expect(await page.getByRole("alert").textContent()).toContain("This link has expired or was used already.");
    await screenshot(page, "password-set-spent-en-1280");
    await expectAccessible(page);
    const before = smtp.messages.length;
    await page.goto(`${new URL(page.url()).origin}/ui/login/password/reset`);
    await page.getByLabel("Login name or e-mail").fill(`nobody-${Date.now()}@${domain}`);
    await page.getByRole("button", { name: "Send the link" }).click();
    expect(await page.locator("main").textContent()).toBe(sent);
    expect(smtp.messages.length).toBe(before);
    await context.close();
  });

  it("shows the reset pages in German on a phone-sized screen", async () => {
    const context = await newContext(browser, { locale: "de-DE", viewport: PHONE });
    const page = await context.newPage();
    // The address the server knows itself by (its cookies are for that host).
    await page.goto(`${new URL(config.serverMetadata().issuer).origin}/ui/login/password/reset`);
    expect(await page.title()).toBe("Passwort zurücksetzen");
    expect(await page.getAttribute("html", "lang")).toBe("de");
    await screenshot(page, "password-reset-de-375");
    await expectAccessible(page);
    await context.close();
  });
});

run("registration", () => {
  it("creates the user for prompt=create, signs it in (tokens at the RP) and verifies its e-mail by the link", async () => {
    // Without an organization scope the login page reads the instance's settings (the default organization has none).
    await admin(t, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, passkeysAllowed: true, allowRegister: true } });
    try {
      const context = await newContext(browser);
      const page = await context.newPage();
      const s = await authorizationUrl({ prompt: "create" });
      await page.goto(s.url);
      expect(new URL(page.url()).pathname).toBe("/ui/login/register");
      expect(await page.title()).toBe("Create your account");
      await screenshot(page, "register-en-1280");
      await expectAccessible(page);

      await page.getByLabel("Given name").fill("Julia");
      await page.getByLabel("Family name").fill("Register");
      await page.getByLabel("E-mail address").fill("reg-julia@example.com");
      await page.getByLabel("New password", { exact: true }).fill("weak");
      await page.getByLabel("Repeat the new password").fill("weak");
      await page.getByRole("button", { name: "Create account" }).click();
      expect(await fieldError(page, "New password")).toBe("This password does not meet the rules below.");
      expect(await page.getByLabel("Given name").inputValue()).toBe("Julia");
      await screenshot(page, "register-weak-en-1280");
      await expectAccessible(page);

      await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel("Repeat the new password").fill(NEW_PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      const sub = await redeem(page, s);
      const user = (await admin(t, "GetUserByID", { userId: sub })).user;
      expect(user.username).toBe("reg-julia@example.com");
      expect(user.human.email.isVerified ?? false).toBe(false);

      const link = linkFrom(await smtp.next("reg-julia@example.com"));
      expect(new URL(link).pathname).toBe("/ui/login/verify-email");
      await page.goto(link);
      expect(await page.title()).toBe("Verify your e-mail address");
      await screenshot(page, "verify-email-en-1280");
      await expectAccessible(page);
      await page.getByRole("button", { name: "Verify e-mail address" }).click();
      expect(await page.title()).toBe("E-mail address verified");
      await screenshot(page, "verify-email-done-en-1280");
      await expectAccessible(page);
      expect((await admin(t, "GetUserByID", { userId: sub })).user.human.email.isVerified).toBe(true);
      // The link again: spent.
      await page.goto(link);
      await page.getByRole("button", { name: "Verify e-mail address" }).click();
      expect(await page.title()).toBe("The address could not be verified");
      await screenshot(page, "verify-email-failed-en-1280");
      await expectAccessible(page);
      await context.close();

      const german = await newContext(browser, { locale: "de-DE", viewport: PHONE });
      const page2 = await german.newPage();
      await page2.goto((await authorizationUrl({ prompt: "create" })).url);
      expect(await page2.title()).toBe("Konto erstellen");
      await screenshot(page2, "register-de-375");
      await expectAccessible(page2);
      await german.close();
    } finally {
      await admin(t, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, passkeysAllowed: true, allowRegister: false } });
    }
  });

  it("is refused where the login settings do not allow it: no link, and the form's POST answers a page, not a 5xx", async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto((await authorizationUrl()).url);
    expect(await page.getByRole("link", { name: "Register" }).count()).toBe(0);
    const csrf = await page.locator("input[name=_csrf]").first().getAttribute("value");
    const origin = new URL(page.url()).origin;
    const res = await page.request.post(`${origin}/ui/login/register`, {
      form: { _csrf: csrf ?? "", givenName: "No", familyName: "Way", email: "no-way@example.com", password: NEW_PASSWORD, passwordRepeat: NEW_PASSWORD },
      maxRedirects: 0,
    });
    expect(res.status()).toBe(403);
    expect(await res.text()).toContain("Registration is not available");
    const get = await page.goto(`${origin}/ui/login/register`);
    expect(get?.status()).toBe(403);
    await screenshot(page, "register-closed-en-1280");
    await expectAccessible(page);
    expect((await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "no-way@example.com" } }] })).result ?? []).toEqual([]);
    await context.close();
  });
});

describe("registration over the API (CreateUser by a login client)", () => {
  let client: Machine;
  let closedOrg: string;
  const human = (username: string, extra: Record<string, unknown> = {}) => ({
    username,
    human: {
      profile: { givenName: "Api", familyName: "Register" },
      email: { email: `${username}@example.com` },
      password: { password: NEW_PASSWORD },
      ...extra,
    },
  });

  beforeAll(async () => {
    client = await loginClient(t, orgId, "selfservice-login-client");
    closedOrg = await createOrg(t, "Closed Registration");
    await setLogin(t, orgId, { allowRegister: true });
  });
  afterAll(async () => {
    await admin(t, "ResetLoginSettings", { organizationId: orgId }).catch(() => undefined);
  });

  for (const via of VIAS) {
    it(`creates a plain human user where registration is allowed, and nothing else (${via})`, async () => {
      const created = await ok(t, via, client.pat, "CreateUser", { organizationId: orgId, ...human(`api-reg-${via}`) });
      expect(created.id).toBeTruthy();
      const denied = (req: Record<string, unknown>, reason: string) =>
        fails(t, via, client.pat, "CreateUser", { organizationId: orgId, ...req } as never, "permission_denied", reason);
      await denied({ username: `api-machine-${via}`, machine: { name: "m" } }, "Errors.User.Register.Denied");
      await denied({ ...human(`api-verified-${via}`, { email: { email: `v-${via}@example.com`, isVerified: true } }) }, "Errors.User.Register.Denied");
      await denied({ ...human(`api-meta-${via}`), metadata: [{ key: "k", value: "dg==" }] }, "Errors.User.Register.Denied");
      await denied({ ...human(`api-id-${via}`), userId: `chosen-${via}` }, "Errors.User.Register.Denied");
    });

    it(`is denied where the login settings do not allow registration (${via})`, async () => {
      await fails(
        t,
        via,
        client.pat,
        "CreateUser",
        { organizationId: closedOrg, ...human(`api-closed-${via}`) },
        "permission_denied",
        "Errors.User.Register.NotAllowed",
      );
    });
  }
});

run("malformed forms", () => {
  it("answers every odd post of the self-service pages with a page (4xx or a redirect), never a 5xx", async () => {
    await admin(t, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, passkeysAllowed: true, allowRegister: true } });
    const context = await newContext(browser);
    const page = await context.newPage();
    try {
      await page.goto(`${new URL(config.serverMetadata().issuer).origin}/ui/login/register`);
      const origin = new URL(page.url()).origin;
      let csrf = (await page.locator("input[name=_csrf]").first().getAttribute("value")) ?? "";
      const post = async (path: string, body: string) => {
        const res = await page.request.post(`${origin}/ui/login${path}`, {
          headers: { "content-type": "application/x-www-form-urlencoded" },
          data: `_csrf=${encodeURIComponent(csrf)}&${body}`,
          maxRedirects: 0,
        });
        expect({ path, body, status: res.status() < 500 }).toEqual({ path, body, status: true });
        return res;
      };
      const registration = "givenName=Kim&familyName=Odd&email=odd-kim%40example.com&password=Changed-Passw0rd!&passwordRepeat=Changed-Passw0rd!";
      expect((await post("/register", registration)).status()).toBe(303);
      // The registration signed Kim in, which replaced the browser's CSRF secret: the forms' token is read again.
      await page.goto(`${origin}/ui/login/register`);
      csrf = (await page.locator("input[name=_csrf]").first().getAttribute("value")) ?? "";
      const taken = await post("/register", registration);
      expect(taken.status()).toBe(400);
      expect(await taken.text()).toContain("This username is taken.");
      const badEmail = await post("/register", "givenName=Kim&familyName=Odd&email=not-an-address&password=Changed-Passw0rd!&passwordRepeat=Changed-Passw0rd!");
      expect(await badEmail.text()).toContain("Enter a valid e-mail address");
      // A pasted password longer than the form takes is refused, never cut short.
      const long = `Aa1!${"x".repeat(300)}`;
      const tooLong = await post("/register", `givenName=Kim&familyName=Odd&email=long-pw%40example.com&password=${long}&passwordRepeat=${long}`);
      expect(await tooLong.text()).toContain("This password is too long.");
      await post("/register", "givenName=a&givenName=b&familyName=&email=&password=&passwordRepeat=");
      await post(
        "/register",
        `givenName=${"x".repeat(5000)}&familyName=Odd&email=long%40example.com&password=Changed-Passw0rd!&passwordRepeat=Changed-Passw0rd!`,
      );
      await post("/register", "givenName=Kim%00&familyName=Odd&email=nul%40example.com&password=Changed-Passw0rd!&passwordRepeat=Changed-Passw0rd!");
      await post("/password/change", "session=unknown&currentPassword=x&password=y&passwordRepeat=y");
      await post("/password/change", "session=%3Cscript%3E");
      await post("/password/reset", "loginName=a&loginName=b");
      expect((await post("/password/reset", "loginName=odd-kim%40example.com")).status()).toBe(200);
      expect((await post("/password/reset", "loginName=%25_*")).status()).toBe(200);
      await post("/password/reset", `loginName=${"x".repeat(1000)}`);
      await post("/password/set", "userId=unknown&code=x&password=Changed-Passw0rd!&passwordRepeat=Changed-Passw0rd!");
      await post("/password/set", "userId=&code=&password=");
      await post("/verify-email", "userId=unknown&code=x");
      await post("/verify-email", "userId[a]=1&code[b]=2");
      const unknownAuth = await post("/register", `authRequest=unknown&${registration}`);
      expect(unknownAuth.status()).toBe(404);
    } finally {
      await admin(t, "SetLoginSettings", { settings: { allowUsernamePassword: true, allowExternalIdp: true, passkeysAllowed: true, allowRegister: false } });
      await context.close();
    }
  });
});
