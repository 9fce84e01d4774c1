// The admin console's users, organizations and instance administrators (issue 24, part A) in a real browser (Debian's
// chromium through playwright-core) against a real svc, one browser and one signed-in page for the whole file:
// - the users list over 10,000 users (seeded through SCIM Bulk) pages, filters and sorts on the server, one
//   ListUsers call per page, never loading them all;
// - a person's profile, e-mail (verified with a code), phone, password reset code, sign-in methods (an administrator
//   removes a TOTP through the admin path), metadata, authorizations (add, edit roles, remove) and sessions (ended);
// - a service account's key (the JSON key file downloaded once, then revoked) and client secret (which the token
//   endpoint accepts, then removed);
// - an organization renamed, deactivated and reactivated, its metadata, members' roles, own password settings (and
//   back to the instance's), and its deletion after typing its name;
// - instance administrators added, their roles changed, removed;
// each checked through the API, each page scanned by axe-core.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ParsedMail } from "mailparser";
import { Secret, TOTP } from "otpauth";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ensureConsoleBuilt } from "../../scripts/build.mjs";
import { newId } from "../../src/domain/ids.js";
import { BULK_URN, newUser, scim } from "../fixtures/scim/client.js";
import { accessibilityProblems, browserAvailable, DESKTOP, launchBrowser, newContext, PHONE, screenshot, startBrowserServer } from "../support/browser.js";
import { createOrg, defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";
import { codeFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { sessionProof } from "../support/users.js";

const run = browserAvailable() ? describe : describe.skip;
const ADMIN_PASSWORD = "Console-Admin-Passw0rd!";
const MANY = 10_000;

let t: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let orgId: string;
let bigOrgId: string;
let adminLogin: string;
let seedSeconds = 0;
let smtp: SmtpSink;

/** The newest mail to `to`, once at least one has come. */
async function latestMail(to: string): Promise<ParsedMail> {
  await smtp.next(to);
  return smtp.messages.filter((m) => JSON.stringify(m.to).includes(to)).at(-1) as ParsedMail;
}

const consoleUrl = (p = "/") => `${t.url.replace("127.0.0.1", "localhost")}/ui/console${p}`;

const manyName = (i: number) => `many-${String(i).padStart(5, "0")}`;

/**
 * 10,000 users in their own organization. The first 100 through SCIM Bulk (one request); the other 9,900 copied from
 * the first in the store by two INSERT ... SELECT statements (the user row and its primary e-mail, as SCIM wrote them),
 * instead of the minute that 99 more Bulk requests take on the embedded database.
 */
async function seedMany(): Promise<void> {
  const started = Date.now();
  const Operations = Array.from({ length: 100 }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `m${i}`, data: newUser(manyName(i)) }));
  const r = await scim(t, t.pat, "POST", `/scim/v2/${bigOrgId}/Bulk`, { schemas: [BULK_URN], Operations });
  expect(r.status).toBe(200);
  expect(r.body.Operations.filter((o: { status: string }) => !String(o.status).startsWith("2"))).toEqual([]);
  const prisma = t.server.db.prisma;
  const template = await prisma.user.findFirstOrThrow({ where: { orgId: bigOrgId, usernameLower: manyName(0) }, select: { id: true } });
  const name = `'many-' || lpad(g::text, 5, '0')`;
  const computed: Record<string, string> = {
    id: `'seed' || lpad(g::text, 5, '0') || '${newId()}'`,
    username: name,
    usernameLower: name,
    email: `${name} || '@example.com'`,
    createdAt: "now()",
    updatedAt: "now()",
  };
  const columns = Object.keys(await prisma.user.findUniqueOrThrow({ where: { id: template.id } }));
  const list = columns.map((c) => `"${c}"`).join(", ");
  const values = columns.map((c) => computed[c] ?? `u."${c}"`).join(", ");
  await prisma.$executeRawUnsafe(
    `INSERT INTO "User" (${list}) SELECT ${values} FROM "User" u, generate_series(100, ${MANY - 1}) g WHERE u.id = $1`,
    template.id,
  );
  await prisma.$executeRawUnsafe(
    `INSERT INTO "UserEmail" (id, "userId", position, value, type, "primary") SELECT 'e' || u.id, u.id, 0, u.email, 'work', true FROM "User" u WHERE u."orgId" = $1 AND u.id LIKE 'seed%'`,
    bigOrgId,
  );
  expect(await prisma.user.count({ where: { orgId: bigOrgId } })).toBe(MANY);
  seedSeconds = (Date.now() - started) / 1000;
  process.stdout.write(`seeded ${MANY} users in ${seedSeconds.toFixed(1)} s\n`);
}

beforeAll(async () => {
  if (!browserAvailable()) return;
  await ensureConsoleBuilt();
  smtp = await startSmtpSink();
  t = await startBrowserServer({ SVC_ADMIN_PASSWORD: ADMIN_PASSWORD, SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  orgId = await defaultOrgId(t);
  bigOrgId = await createOrg(t, "Many");
  const [, b] = await Promise.all([seedMany(), launchBrowser()]);
  browser = b;
  const users = await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "admin", method: "TEXT_QUERY_METHOD_EQUALS" } }] });
  adminLogin = users.result[0].preferredLoginName;
  context = await newContext(browser);
  page = await context.newPage();
  await page.goto(consoleUrl("/"));
  await page.getByLabel("Login name or e-mail").fill(adminLogin);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(ADMIN_PASSWORD);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByRole("heading", { level: 1, name: /Welcome/ }).waitFor({ timeout: 60_000 });
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await smtp?.close();
});

async function expectAccessible(): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
}

/** Opens a console path in the signed-in page (a client-side navigation keeps the tokens in memory). */
async function open(path: string): Promise<void> {
  await page.evaluate(`history.pushState(null, "", ${JSON.stringify(`/ui/console${path}`)}); dispatchEvent(new PopStateEvent("popstate"));`);
}

/**
 * Picks `option` in a Mantine Select or MultiSelect labelled `label` within `scope`, typing `search` first, and closes
 * the dropdown (in a dialog by a click on its title: Escape would close the dialog).
 */
async function pick(scope: Page | ReturnType<Page["getByRole"]>, label: string, option: string | RegExp, search?: string): Promise<void> {
  // A required field's label ends in an asterisk.
  const input = scope.getByLabel(new RegExp(`^${label}( \\*)?$`)).first();
  await input.click({ force: true });
  if (search !== undefined) await input.fill(search);
  const choice = page.getByRole("option", { name: option }).first();
  // A click that landed while a dialog was still opening may have toggled the dropdown shut.
  await choice.waitFor({ timeout: 3_000 }).catch(() => input.press("ArrowDown"));
  await choice.click();
  if (scope === page) await page.keyboard.press("Escape");
  else await scope.getByRole("heading").first().click();
}

/** Confirms the dialog titled `title` (typing `typed` first when asked to). */
async function confirm(title: string, button: string, typed?: string): Promise<void> {
  const dialog = page.getByRole("dialog", { name: title });
  if (typed !== undefined) await dialog.getByLabel(`Type ${typed} to confirm`).fill(typed);
  await dialog.getByRole("button", { name: button }).click();
  await dialog.waitFor({ state: "detached" });
}

run("the users list over 10,000 users", () => {
  it("pages, filters and sorts on the server with one ListUsers call per page", async () => {
    // Seeding through SCIM Bulk takes seconds, not the minutes of 10,000 single calls.
    expect(seedSeconds).toBeLessThan(120);
    const calls: { query?: { offset?: string; limit?: number; asc?: boolean }; queries?: unknown[]; sortingColumn?: string }[] = [];
    const responses: number[] = [];
    const onRequest = (r: import("playwright-core").Request) => {
      if (r.url().endsWith("/svc.user.v2.UserService/ListUsers")) calls.push(JSON.parse(r.postData() ?? "{}"));
    };
    const onResponse = async (r: import("playwright-core").Response) => {
      if (r.url().endsWith("/svc.user.v2.UserService/ListUsers")) {
        responses.push((await r.body()).length);
      }
    };
    page.on("request", onRequest);
    page.on("response", onResponse);
    await open("/users");
    const rows = page.getByTestId("users-table").locator("tbody tr");
    await page.getByTestId("users-total").filter({ hasText: "More than 1000 results" }).waitFor();
    await expect(rows.count()).resolves.toBe(20);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.query).toMatchObject({ limit: 20 });
    // One page's worth of bytes, not 10,000 users'.
    expect(Math.max(...responses)).toBeLessThan(40_000);
    await screenshot(page, "console-users-10000-1280");

    await page.getByRole("button", { name: "Page 2" }).click();
    // admin, many-00000..many-00018 on the first page.
    await rows.first().filter({ hasText: "many-00019" }).waitFor();
    expect(calls).toHaveLength(2);
    expect(calls[1]?.query).toMatchObject({ offset: "20", limit: 20 });

    // Filtered on the server: the text goes into the request, and the total counts the matches.
    await page.getByLabel("Search").fill("many-0999");
    await page
      .getByTestId("users-total")
      .filter({ hasText: /^10 results$/ })
      .waitFor();
    await expect(rows.count()).resolves.toBe(10);
    const filtered = calls.at(-1);
    expect(JSON.stringify(filtered?.queries)).toContain("many-0999");
    expect(filtered?.query).toMatchObject({ limit: 20 });
    // Sorted on the server: descending by username is one more call.
    const before = calls.length;
    await page.getByRole("button", { name: /^Username/ }).click();
    await rows.first().filter({ hasText: "many-09999" }).waitFor();
    expect(calls.length).toBe(before + 1);
    // proto3 JSON leaves a false out.
    expect(calls.at(-1)?.query?.asc ?? false).toBe(false);
    expect(calls.at(-1)?.sortingColumn).toBe("USER_FIELD_NAME_USER_NAME");
    // Every call asked for one page.
    for (const c of calls) expect(c.query?.limit).toBe(20);
    page.off("request", onRequest);
    page.off("response", onResponse);
    await page.getByLabel("Search").fill("");
  }, 60_000);
});

run("a person", () => {
  let userId: string;
  let projectId: string;

  beforeAll(async () => {
    userId = (
      await admin(t, "CreateUser", {
        organizationId: orgId,
        username: "erin",
        human: {
          profile: { givenName: "Erin", familyName: "Example" },
          email: { email: "erin@example.com", isVerified: true },
          password: { password: "Erin-Passw0rd!", changeRequired: false },
        },
      })
    ).id;
    // A TOTP and e-mail codes, set up by an administrator (the admin path of RegisterTOTP and AddOTPEmail).
    const { secret } = await admin(t, "RegisterTOTP", { userId });
    const code = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 }).generate();
    await admin(t, "VerifyTOTPRegistration", { userId, code });
    await admin(t, "AddOTPEmail", { userId });
    projectId = (await admin(t, "CreateProject", { organizationId: orgId, name: "Library" })).projectId;
    for (const roleKey of ["reader", "librarian"]) await admin(t, "AddProjectRole", { projectId, roleKey, displayName: roleKey });
  });

  it("lists the sign-in methods, removes the TOTP as an administrator, and creates a password reset code", async () => {
    await open(`/users/${userId}?tab=security`);
    await page.getByRole("heading", { level: 1, name: "Erin Example" }).waitFor();
    const table = page.getByTestId("mfa-table");
    await table.getByText("Authenticator app").waitFor();
    await table.getByText("Code by e-mail").waitFor();
    await expectAccessible();
    await page.getByRole("button", { name: "Remove Authenticator app TOTP" }).click();
    await confirm("Remove this sign-in method?", "Remove");
    await table.getByText("Authenticator app").waitFor({ state: "detached" });
    const types = (await admin(t, "ListAuthenticationMethodTypes", { userId })).authMethodTypes;
    expect(types).not.toContain("AUTHENTICATION_METHOD_TYPE_TOTP");
    expect(types).toContain("AUTHENTICATION_METHOD_TYPE_OTP_EMAIL");

    // A reset code by mail, and one to hand over (for a user whose mail does not arrive).
    await page.getByRole("button", { name: "Send a reset e-mail" }).click();
    await page.getByText("The reset e-mail was sent.").waitFor();
    expect(codeFrom(await latestMail("erin@example.com"))).toMatch(/^\w{6,}$/);
    await page.getByRole("button", { name: "Create a reset code" }).click();
    const code = await page.getByLabel("Reset code").inputValue();
    // The code sets a password through the API.
    await admin(t, "SetPassword", { userId, newPassword: { password: "Erin-Passw0rd-2!" }, verificationCode: code });
  });

  it("edits the profile, changes and verifies the e-mail, and sets a phone", async () => {
    await page.getByRole("tab", { name: "Profile" }).click();
    await page.getByLabel("Display name").fill("Erin E.");
    await page.getByLabel("Nickname").fill("ee");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.getByRole("heading", { level: 1, name: "Erin E." }).waitFor();
    const user = (await admin(t, "GetUserByID", { userId })).user;
    expect(user.human.profile).toMatchObject({ displayName: "Erin E.", nickName: "ee", givenName: "Erin" });
    await expectAccessible();

    // A new address, not verified: the code the console has sent to it verifies it.
    await page.getByLabel("E-mail address").fill("erin.new@example.com");
    await page.getByRole("button", { name: "Change e-mail" }).click();
    await page.getByText("Not verified", { exact: true }).waitFor();
    expect((await admin(t, "GetUserByID", { userId })).user.human.email).toEqual({ email: "erin.new@example.com" });
    await page.getByRole("button", { name: "Send a verification code" }).click();
    await page.getByText("A code was sent to the address.").waitFor();
    await page.getByLabel("Verification code").fill(codeFrom(await latestMail("erin.new@example.com")));
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    await page.getByText("Not verified", { exact: true }).waitFor({ state: "detached" });
    expect((await admin(t, "GetUserByID", { userId })).user.human.email).toEqual({ email: "erin.new@example.com", isVerified: true });
    // A wrong code: the API's message where it was entered.
    await page.getByLabel("E-mail address").fill("erin@example.com");
    await page.getByRole("button", { name: "Change e-mail" }).click();
    await page.getByLabel("Verification code").fill("000000");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: /code/ }).waitFor();

    await page.getByLabel("Phone number").fill("+41441234567");
    await page.getByLabel("Mark as verified").last().check();
    await page.getByRole("button", { name: "Change phone" }).click();
    await page.getByRole("button", { name: "Remove phone" }).waitFor();
    expect((await admin(t, "GetUserByID", { userId })).user.human.phone).toEqual({ phone: "+41441234567", isVerified: true });
  });

  it("sets and removes metadata", async () => {
    await page.getByRole("tab", { name: "Metadata" }).click();
    await page.getByText("No metadata").waitFor();
    await page.getByRole("textbox", { name: /^Key/ }).fill("team");
    await page.getByRole("textbox", { name: /^Value/ }).fill("blue");
    await page.getByRole("button", { name: "Set", exact: true }).click();
    await page.getByTestId("metadata-table").getByText("blue").waitFor();
    const meta = await admin(t, "ListUserMetadata", { userId });
    expect(meta.result.map((m: { key: string; value: string }) => [m.key, Buffer.from(m.value, "base64").toString()])).toEqual([["team", "blue"]]);
    await expectAccessible();
    await page.getByRole("button", { name: "Delete team" }).click();
    await confirm("Delete this metadata?", "Delete");
    await page.getByText("No metadata").waitFor();
    expect((await admin(t, "ListUserMetadata", { userId })).result ?? []).toEqual([]);
  });

  it("grants a project's roles, changes them and removes the grant", async () => {
    await page.getByRole("tab", { name: "Authorizations" }).click();
    await page.getByText("No authorizations").waitFor();
    await pick(page, "Project", "Library", "Lib");
    await pick(page, "Roles", /reader/);
    await page.getByRole("button", { name: "Grant", exact: true }).click();
    const table = page.getByTestId("user-grants-table");
    await table.getByText("reader").waitFor();
    await expectAccessible();
    await table.getByRole("button", { name: "Edit roles in Library" }).click();
    const dialog = page.getByRole("dialog", { name: "Edit roles in Library" });
    await pick(dialog, "Roles", /librarian/);
    await dialog.getByRole("button", { name: "Save" }).click();
    await table.getByText("librarian").waitFor();
    const grants = await admin(t, "ListUserGrants", { queries: [{ userIdFilter: { userId } }] });
    expect(grants.result[0]).toMatchObject({ projectId, roleKeys: expect.arrayContaining(["reader", "librarian"]) });
    await table.getByRole("button", { name: "Remove the authorization for Library" }).click();
    await confirm("Remove this authorization?", "Remove");
    await page.getByText("No authorizations").waitFor();
    expect((await admin(t, "ListUserGrants", { queries: [{ userIdFilter: { userId } }] })).result ?? []).toEqual([]);
  });

  it("lists the user's live session and ends it", async () => {
    await sessionProof(t, userId);
    await page.getByRole("tab", { name: "Sessions" }).click();
    const table = page.getByTestId("sessions-table");
    await table.locator("tbody tr").first().waitFor();
    await expect(table.locator("tbody tr").count()).resolves.toBe(1);
    await expectAccessible();
    await table.getByRole("button", { name: /^End the session/ }).click();
    await confirm("End this session?", "End");
    await page.getByText("No live sessions").waitFor();
    expect((await admin(t, "ListSessions", { queries: [{ userIdQuery: { id: userId } }] })).sessions ?? []).toEqual([]);
  });
});

run("a service account", () => {
  it("creates a key whose JSON key file is downloaded once, revokes it, and manages a client secret the token endpoint accepts", async () => {
    const userId = (await admin(t, "CreateUser", { organizationId: orgId, username: "report-bot", machine: { name: "Report bot" } })).id;
    await open(`/users/${userId}?tab=security`);
    await page.getByRole("heading", { level: 1, name: "Report bot" }).waitFor();
    await expect(page.getByRole("tab", { name: "Credentials" }).getAttribute("aria-selected")).resolves.toBe("true");
    await page.getByText("No keys").waitFor();
    await page.getByRole("button", { name: "New key" }).click();
    const downloaded = page.waitForEvent("download");
    await page.getByRole("button", { name: "Download the key file" }).click();
    const download = await downloaded;
    const file = JSON.parse(readFileSync(await download.path(), "utf8"));
    expect(file).toMatchObject({ type: "serviceaccount", userId, keyId: expect.any(String), key: expect.stringContaining("PRIVATE KEY") });
    expect(download.suggestedFilename()).toBe(`${file.keyId}.json`);
    expect(JSON.parse(await page.getByLabel("Key file", { exact: true }).inputValue())).toEqual(file);
    await page.getByTestId("keys-table").getByText(file.keyId).waitFor();
    expect((await admin(t, "ListKeys", { userId })).result.map((k: { id: string }) => k.id)).toEqual([file.keyId]);
    await expectAccessible();
    await page.getByRole("button", { name: `Revoke key ${file.keyId}` }).click();
    await confirm("Revoke this key?", "Revoke");
    await page.getByText("No keys").waitFor();
    expect((await admin(t, "ListKeys", { userId })).result ?? []).toEqual([]);

    await page.getByRole("button", { name: "Generate a secret" }).click();
    const secret = await page.getByLabel("Client secret").inputValue();
    const token = () =>
      fetch(`${t.url}/oauth/v2/token`, {
        method: "POST",
        headers: { authorization: `Basic ${Buffer.from(`report-bot:${secret}`).toString("base64")}`, "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials&scope=openid",
      });
    expect((await token()).status).toBe(200);
    await page.getByRole("button", { name: "Remove the secret" }).click();
    await confirm("Remove the client secret?", "Remove the secret");
    await page.getByRole("button", { name: "Generate a secret" }).waitFor();
    expect((await token()).status).toBe(401);
  });
});

run("an organization", () => {
  it("is renamed, deactivated and reactivated, holds metadata, members with roles and its own password rules, and is deleted after typing its name", async () => {
    const id = await createOrg(t, "Globex");
    const memberId = (
      await admin(t, "CreateUser", {
        organizationId: id,
        username: "gina",
        human: { profile: { givenName: "Gina", familyName: "Globex" }, email: { email: "gina@example.com" } },
      })
    ).id;
    await open(`/orgs/${id}`);
    await page.getByRole("heading", { level: 1, name: "Globex" }).waitFor();
    await page.getByRole("button", { name: "Rename" }).click();
    const rename = page.getByRole("dialog", { name: "Rename the organization" });
    await rename.getByLabel("Name").fill("Globex Corp");
    await rename.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { level: 1, name: "Globex Corp" }).waitFor();
    expect((await admin(t, "GetOrganizationByID", { organizationId: id })).organization.name).toBe("Globex Corp");

    await page.getByRole("button", { name: "Deactivate" }).click();
    await page.getByTestId("org-state").filter({ hasText: "Inactive" }).waitFor();
    expect((await admin(t, "GetOrganizationByID", { organizationId: id })).organization.state).toBe("ORGANIZATION_STATE_INACTIVE");
    await page.getByRole("button", { name: "Reactivate" }).click();
    await page.getByTestId("org-state").filter({ hasText: "Active" }).waitFor();

    // Members: added, roles changed, removed.
    await page.getByText("No members yet").waitFor();
    await pick(page, "User", /^gina@/, "gina");
    await pick(page, "Roles", "ORG_AUDITOR");
    await page.getByRole("button", { name: "Add", exact: true }).click();
    const members = page.getByTestId("members-table");
    await members.getByText("ORG_AUDITOR").waitFor();
    await expectAccessible();
    await members.getByRole("button", { name: /^Edit roles of gina@/ }).click();
    const edit = page.getByRole("dialog", { name: /^Edit roles of gina@/ });
    await pick(edit, "Roles", "ORG_USER_MANAGER");
    await edit.getByRole("button", { name: "Save" }).click();
    await members.getByText("ORG_USER_MANAGER").waitFor();
    const listed = await admin(t, "ListOrganizationMembers", { organizationId: id });
    expect(listed.result.find((m: { userId: string }) => m.userId === memberId).roles.sort()).toEqual(["ORG_AUDITOR", "ORG_USER_MANAGER"]);
    await members.getByRole("button", { name: /^Remove gina@/ }).click();
    await confirm("Remove this member?", "Remove");
    await page.getByText("No members yet").waitFor();

    await page.getByRole("tab", { name: "Metadata" }).click();
    await page.getByRole("textbox", { name: /^Key/ }).fill("region");
    await page.getByRole("textbox", { name: /^Value/ }).fill("eu");
    await page.getByRole("button", { name: "Set", exact: true }).click();
    await page.getByTestId("metadata-table").getByText("eu", { exact: true }).waitFor();
    expect((await admin(t, "ListOrganizationMetadata", { organizationId: id })).result[0].key).toBe("region");

    // Its own password rules, then the instance's again.
    await page.getByRole("tab", { name: "Settings" }).click();
    const minLength = page.getByLabel("Minimum length");
    await minLength.fill("14");
    const passwords = page.locator(".mantine-Card-root", { has: page.getByRole("heading", { name: "Password rules" }) });
    await passwords.getByRole("button", { name: "Save for this organization" }).click();
    await passwords.getByText("Set for this organization").waitFor();
    const own = await admin(t, "GetPasswordComplexitySettings", { organizationId: id });
    expect(own.settings).toMatchObject({ minLength: "14", resourceOwnerType: "RESOURCE_OWNER_TYPE_ORG" });
    await expectAccessible();
    await screenshot(page, "console-org-settings-1280");
    await passwords.getByRole("button", { name: "Use the instance's" }).click();
    await confirm("Use the instance's settings?", "Use the instance's");
    await passwords.getByText("The instance's", { exact: true }).waitFor();
    expect((await admin(t, "GetPasswordComplexitySettings", { organizationId: id })).settings.resourceOwnerType).toBe("RESOURCE_OWNER_TYPE_INSTANCE");

    await page.getByRole("button", { name: "Delete", exact: true }).first().click();
    const dialog = page.getByRole("dialog", { name: "Delete this organization?" });
    await expect(dialog.getByRole("button", { name: "Delete" }).isDisabled()).resolves.toBe(true);
    await confirm("Delete this organization?", "Delete", "Globex Corp");
    await page.getByRole("heading", { level: 1, name: "Organizations" }).waitFor();
    await expect(admin(t, "GetOrganizationByID", { organizationId: id })).rejects.toThrow();
  });
});

run("instance administrators", () => {
  it("adds an administrator, changes the role and removes them", async () => {
    const userId = (
      await admin(t, "CreateUser", {
        organizationId: orgId,
        username: "ivan",
        human: { profile: { givenName: "Ivan", familyName: "Viewer" }, email: { email: "ivan@example.com" } },
      })
    ).id;
    // The page's chunk fails once (as after an update of svc): the console loads the current index and, signed in
    // again through the hosted login's session, comes back to the page instead of leaving it blank.
    let aborted = 0;
    const authorizations: string[] = [];
    const onRequest = (r: import("playwright-core").Request) => {
      if (r.url().includes("/authorize?")) authorizations.push(r.url());
    };
    page.on("request", onRequest);
    await page.route(
      /\/assets\/admins-[^/]+\.js$/,
      (r) => {
        aborted++;
        return r.abort();
      },
      { times: 1 },
    );
    await page.getByRole("navigation", { name: "Main navigation" }).getByRole("link", { name: "Administrators" }).click();
    await page.getByRole("heading", { level: 1, name: "Instance administrators" }).waitFor();
    page.off("request", onRequest);
    expect(aborted).toBe(1);
    expect(authorizations).toHaveLength(1);
    expect(page.url()).toBe(consoleUrl("/admins"));
    const table = page.getByTestId("admins-table");
    await table.getByText(adminLogin, { exact: true }).waitFor();
    await pick(page, "User", /^ivan@/, "ivan");
    await pick(page, "Roles", "IAM_OWNER_VIEWER");
    await page.getByRole("button", { name: "Add", exact: true }).click();
    await table.getByText("IAM_OWNER_VIEWER").waitFor();
    await expectAccessible();
    await screenshot(page, "console-admins-1280");
    await table.getByRole("button", { name: /^Edit roles of ivan@/ }).click();
    const edit = page.getByRole("dialog", { name: /^Edit roles of ivan@/ });
    // Replace the viewer role by IAM_OWNER.
    await edit
      .getByLabel(/^Roles/)
      .first()
      .focus();
    await page.keyboard.press("Backspace");
    await pick(edit, "Roles", /^IAM_OWNER$/);
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.waitFor({ state: "detached" });
    const member = async () =>
      ((await admin(t, "ListInstanceMembers", { queries: [{ userIdQuery: { userId } }] })).result ?? [])[0] as { roles: string[] } | undefined;
    expect((await member())?.roles).toEqual(["IAM_OWNER"]);
    await table.getByRole("button", { name: /^Remove ivan@/ }).click();
    await confirm("Remove this member?", "Remove");
    await table.getByText(/^ivan@/).waitFor({ state: "detached" });
    expect(await member()).toBeUndefined();
  });
});

run("an instance viewer", () => {
  it("reads users, organizations and administrators, and is offered no change the API would refuse", async () => {
    const viewerId = (
      await admin(t, "CreateUser", {
        organizationId: orgId,
        username: "vera",
        human: {
          profile: { givenName: "Vera", familyName: "Viewer" },
          email: { email: "vera@example.com", isVerified: true },
          password: { password: "Vera-Passw0rd!", changeRequired: false },
        },
      })
    ).id;
    await admin(t, "AddInstanceMember", { userId: viewerId, roles: ["IAM_OWNER_VIEWER"] });
    const login = (await admin(t, "GetUserByID", { userId: viewerId })).user.preferredLoginName;
    const erinId = (await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "erin", method: "TEXT_QUERY_METHOD_EQUALS" } }] })).result[0].userId;
    const viewerContext = await newContext(browser);
    const viewer = await viewerContext.newPage();
    try {
      await viewer.goto(consoleUrl(`/users/${erinId}`));
      await viewer.getByLabel("Login name or e-mail").fill(login);
      await viewer.getByRole("button", { name: "Continue" }).click();
      await viewer.getByLabel("Password", { exact: true }).fill("Vera-Passw0rd!");
      await viewer.getByRole("button", { name: "Continue" }).click();
      await viewer.getByRole("heading", { level: 1, name: "Erin E." }).waitFor({ timeout: 60_000 });
      // Once the roles are known (the navigation shows them)...
      await viewer.getByRole("navigation", { name: "Main navigation" }).getByRole("link", { name: "Administrators" }).waitFor();
      // The profile is shown read-only: no state changes, no deletion, no save; no sessions (IAM_OWNER's alone).
      await expect(viewer.getByLabel("Display name").isDisabled()).resolves.toBe(true);
      for (const name of ["Lock", "Deactivate", "Delete", "Save profile", "Change e-mail"]) {
        await expect(viewer.getByRole("button", { name, exact: true }).count()).resolves.toBe(0);
      }
      await expect(viewer.getByRole("tab", { name: "Sessions" }).count()).resolves.toBe(0);
      await viewer.getByRole("tab", { name: "Metadata" }).click();
      await viewer.getByText("No metadata").waitFor();
      await expect(viewer.getByRole("button", { name: "Set", exact: true }).count()).resolves.toBe(0);
      await viewer.getByRole("navigation", { name: "Main navigation" }).getByRole("link", { name: "Administrators" }).click();
      await viewer.getByTestId("admins-table").getByText("IAM_OWNER_VIEWER").waitFor();
      await expect(viewer.getByRole("button", { name: /^(Add|Edit roles|Remove)/ }).count()).resolves.toBe(0);
      await expect(accessibilityProblems(viewer)).resolves.toEqual([]);
      await viewer.getByRole("navigation", { name: "Main navigation" }).getByRole("link", { name: "Organizations" }).click();
      await viewer.getByRole("link", { name: "Many" }).click();
      await viewer.getByRole("heading", { level: 1, name: "Many" }).waitFor();
      // ...and the organization's members (its owners may change it).
      await viewer.getByText("No members yet").waitFor();
      await expect(viewer.getByRole("button", { name: /^(Rename|Deactivate|Delete)$/ }).count()).resolves.toBe(0);
      await expect(viewer.getByRole("button", { name: "Create a provisioning account with a token" }).count()).resolves.toBe(0);
    } finally {
      await viewerContext.close();
    }
  }, 120_000);
});

run("small screens and dark mode", () => {
  it("shows a user's and an organization's pages at 375 px in dark mode without horizontal scrolling", async () => {
    const erinId = (await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "erin", method: "TEXT_QUERY_METHOD_EQUALS" } }] })).result[0].userId;
    await page.setViewportSize(PHONE);
    await page.getByRole("button", { name: "Switch to dark mode" }).click();
    try {
      for (const [path, heading, tab, shot] of [
        [`/users/${erinId}`, "Erin E.", "Sign-in methods", "console-user-dark-375"],
        [`/orgs/${bigOrgId}`, "Many", "Settings", "console-org-dark-375"],
      ] as const) {
        await open(path);
        await page.getByRole("heading", { level: 1, name: heading }).waitFor();
        await page.getByRole("tab", { name: tab }).click();
        await page.waitForLoadState("networkidle");
        expect(await page.evaluate("getComputedStyle(document.body).colorScheme")).toBe("dark");
        expect(await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")).toBeLessThanOrEqual(0);
        await screenshot(page, shot);
        await expectAccessible();
      }
    } finally {
      await page.getByRole("button", { name: "Switch to light mode" }).click();
      await page.setViewportSize(DESKTOP);
    }
  });
});
