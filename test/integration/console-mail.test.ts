// The console's languages and mail texts (issue 26, mail in the user's language) in a real browser (Debian's chromium
// through playwright-core) against a real svc with an SMTP sink: the instance's default language set on the settings
// page, then the German password-reset mail's subject changed there, both checked through the API and in the mail a
// user without a preferred language receives; then svc's texts restored after a confirmation; an invitation sent from
// a user's page arrives and its link leads to the hosted login's invitation page. axe-core scans the pages.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ensureConsoleBuilt } from "../../scripts/build.mjs";
import { accessibilityProblems, browserAvailable, launchBrowser, newContext, startBrowserServer } from "../support/browser.js";
import { createHuman, defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";

const run = browserAvailable() ? describe : describe.skip;
const ADMIN_PASSWORD = "Console-Admin-Passw0rd!";

let t: TestServer;
let smtp: SmtpSink;
let browser: Browser;
let context: BrowserContext;

const consoleUrl = (p = "/") => `${t.url.replace("127.0.0.1", "localhost")}/ui/console${p}`;

beforeAll(async () => {
  if (!browserAvailable()) return;
  await ensureConsoleBuilt();
  smtp = await startSmtpSink();
  t = await startBrowserServer({ SVC_ADMIN_PASSWORD: ADMIN_PASSWORD, SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  browser = await launchBrowser();
  const users = await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "admin", method: "TEXT_QUERY_METHOD_EQUALS" } }] });
  context = await newContext(browser);
  const page = await context.newPage();
  await page.goto(consoleUrl("/"));
  await page.getByLabel("Login name or e-mail").fill(users.result[0].preferredLoginName);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(ADMIN_PASSWORD);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("heading", { level: 1, name: /Welcome/ }).waitFor();
  await page.close();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await smtp?.close();
});

/** Picks `option` in the Mantine Select labelled exactly `label`. */
async function pick(page: Page, label: string, option: string): Promise<void> {
  const input = page.getByLabel(label, { exact: true }).first();
  await input.click({ force: true });
  const choice = page.getByRole("option", { name: option, exact: true }).first();
  if (
    !(await choice.waitFor({ timeout: 2_000 }).then(
      () => true,
      () => false,
    ))
  )
    await input.press("ArrowDown");
  await choice.click();
}

/** Polls `ok` for up to 5 s. */
async function eventually(ok: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 50 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 100));
  expect(await ok()).toBe(true);
}

run("languages and mail texts on the settings page", () => {
  it("sets the default language and the German reset mail's subject, which the next mail uses, then restores svc's", async () => {
    const page = await context.newPage();
    await page.goto(consoleUrl("/settings"));
    await page.getByRole("heading", { level: 1, name: "Instance settings" }).waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);

    await pick(page, "Default language", "German");
    await eventually(async () => (await admin(t, "GetLanguageSettings", {})).settings.defaultLanguage === "de");

    await pick(page, "Mail", "Password reset");
    // The segmented control's radio is hidden under its label.
    await page.locator("label", { hasText: /^German$/ }).click();
    expect(await page.getByRole("radio", { name: "German" }).isChecked()).toBe(true);
    const subject = page.getByLabel("Subject");
    await page.getByText("svc's texts", { exact: true }).waitFor();
    await eventually(async () => (await subject.inputValue()).startsWith("Setzen Sie Ihr Passwort"));
    await subject.fill("Neues Passwort für {instance}, {name}");
    await page.getByRole("button", { name: "Save" }).last().click();
    await page.getByText("Your texts", { exact: true }).waitFor();
    const own = await admin(t, "GetMailText", { type: "password_reset", language: "de" });
    expect([own.isDefault ?? false, own.text.subject]).toEqual([false, "Neues Passwort für {instance}, {name}"]);

    // A user without a preferred language gets the instance's default language, with the instance's own subject.
    const user = await createHuman(t, await defaultOrgId(t), "mail-console-user");
    await admin(t, "PasswordReset", { userId: user, sendLink: {} });
    const mail = await smtp.next("mail-console-user@example.com");
    expect(mail.subject).toMatch(/^Neues Passwort für svc, /);

    await page.getByRole("button", { name: "Restore svc's texts" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Restore svc's texts" }).click();
    await page.getByText("svc's texts", { exact: true }).waitFor();
    expect((await admin(t, "GetMailText", { type: "password_reset", language: "de" })).isDefault).toBe(true);
    await page.close();
  }, 120_000);

  it("sends an invitation from a user's page to a user without a password", async () => {
    const { id } = await admin(t, "CreateUser", {
      organizationId: await defaultOrgId(t),
      username: "invited-in-console",
      human: { profile: { givenName: "Ina", familyName: "Vited", preferredLanguage: "en" }, email: { email: "invited-in-console@example.com" } },
    });
    const page = await context.newPage();
    await page.goto(consoleUrl(`/users/${id}?tab=security`));
    await page.getByRole("button", { name: "Send an invitation" }).click();
    await page.getByText("The invitation is on its way.").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    const mail = await smtp.next("invited-in-console@example.com");
    expect(mail.subject).toMatch(/^You are invited to /);
    expect(new URL(linkFrom(mail)).pathname).toBe("/ui/login/invite");
    // A user who can sign in already is told so by the API's message.
    await admin(t, "SetPassword", { userId: id, newPassword: { password: "Invited-Passw0rd!" } });
    await page.getByRole("button", { name: "Send an invitation" }).click();
    await page.getByText(/can sign in already/).waitFor();
    await page.close();
  }, 120_000);
});
