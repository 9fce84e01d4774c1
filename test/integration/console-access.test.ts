// The console offers what the signed-in user's roles allow in each organization, as UserService.ListMyPermissions
// tells it (one call at sign-in): an organization's read-only member (ORG_AUDITOR) sees its users but no create, edit,
// lock or delete; an ORG_USER_MANAGER sees them for its organization and uses them; where the API refuses anyway (an
// account with roles the manager cannot grant) the API's own message is shown. An organization's own identity
// providers: its ORG_OWNER lists (beside the instance's), creates, edits and deletes them on the organization's page.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, Page } from "playwright-core";
import { ensureConsoleBuilt } from "../../scripts/build.mjs";
import { accessibilityProblems, browserAvailable, launchBrowser, newContext, screenshot, startBrowserServer } from "../support/browser.js";
import { admin } from "../support/rpc.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;
const PASSWORD = "Console-Access-Passw0rd!";

let t: TestServer;
let browser: Browser;
let orgId: string;
let domain: string;
const ids: Record<string, string> = {};

const human = (username: string, roles: string[] = []) => ({
  username,
  roles,
  human: { profile: { givenName: username, familyName: "Gamma" }, email: { email: `${username}@example.com` }, password: { password: PASSWORD } },
});

beforeAll(async () => {
  if (!browserAvailable()) return;
  await ensureConsoleBuilt();
  t = await startBrowserServer();
  browser = await launchBrowser();
  orgId = (
    await admin(t, "CreateOrganization", {
      name: "Gamma Works",
      admins: [human("gamma-owner", ["ORG_OWNER"]), human("gamma-viewer", ["ORG_AUDITOR"]), human("gamma-manager", ["ORG_USER_MANAGER"])],
    })
  ).organizationId;
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const { roles: _none, ...target } = human("gamma-target");
  ids.target = (await admin(t, "CreateUser", { organizationId: orgId, ...target })).id;
  await admin(t, "UpdateUser", { userId: ids.target, human: { phone: { phone: "+41441234567" } } });
  ids.project = (await admin(t, "CreateProject", { organizationId: orgId, name: "Gamma Portal" })).projectId;
  await admin(t, "AddProjectRole", { projectId: ids.project, roleKey: "reader", displayName: "Reader" });
  const listed = await admin(t, "ListUsers", { queries: [{ organizationIdQuery: { organizationId: orgId } }] });
  for (const u of listed.result) ids[u.username] = u.userId;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

const consoleUrl = (p = "/") => `${t.url.replace("127.0.0.1", "localhost")}/ui/console${p}`;

/** A new browser context signed in as `username` of Gamma through the hosted login's pages, at `path`. */
async function signedIn(username: string, path: string): Promise<Page> {
  const context = await newContext(browser);
  const page = await context.newPage();
  await page.goto(consoleUrl(path));
  await page.getByLabel("Login name or e-mail").fill(`${username}@${domain}`);
  await page.getByRole("button", { name: "Continue" }).click();
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Continue" }).click();
  return page;
}

async function userPage(page: Page, userId: string): Promise<void> {
  await page.goto(consoleUrl(`/users/${userId}`));
  await page.getByText(userId, { exact: true }).waitFor();
  // The profile form has loaded (its fields are there, editable or not).
  await page.getByLabel("Given name").waitFor();
}

run("what the console offers follows the permissions per organization", () => {
  it("shows an organization's read-only member its users, without create, edit, lock or delete", async () => {
    const page = await signedIn("gamma-viewer", "/users");
    await page.getByRole("heading", { level: 1, name: "Users" }).waitFor();
    await page.getByTestId("users-table").getByRole("link", { name: "gamma-target" }).waitFor();
    await expect(page.getByRole("link", { name: "New user" }).count()).resolves.toBe(0);
    await userPage(page, ids.target as string);
    for (const name of ["Lock", "Deactivate", "Delete", "Save profile"]) await expect(page.getByRole("button", { name, exact: true }).count()).resolves.toBe(0);
    await expect(page.getByLabel("Given name").isDisabled()).resolves.toBe(true);
    await expect(page.getByRole("button", { name: "Create a verification code" }).count()).resolves.toBe(0);
    await page.getByRole("tab", { name: "Sign-in methods" }).click();
    await page.getByRole("tabpanel").getByRole("heading").first().waitFor();
    await expect(page.getByRole("button", { name: "Set a password" }).count()).resolves.toBe(0);
    await page.getByRole("tab", { name: "Metadata" }).click();
    await page.getByText("Applications can store key/value pairs here; none are set.").waitFor();
    await expect(page.getByRole("button", { name: "Set", exact: true }).count()).resolves.toBe(0);
    await screenshot(page, "console-user-read-only-1280");
    expect(await accessibilityProblems(page)).toEqual([]);
    // The organization's page: no rename, no members to add.
    await page.goto(consoleUrl(`/orgs/${orgId}`));
    await page.getByRole("heading", { level: 1, name: "Gamma Works" }).waitFor();
    await page.getByTestId("members-table").waitFor();
    for (const name of ["Rename", "Deactivate", "Delete", "Add a member"])
      await expect(page.getByRole("button", { name, exact: true }).count()).resolves.toBe(0);
    // The organization's identity providers: read, not added.
    await page.getByRole("tab", { name: "Identity providers" }).click();
    await page.getByText("No identity providers yet").or(page.getByTestId("idps-table")).first().waitFor();
    await expect(page.getByRole("link", { name: "New OpenID Connect provider" }).count()).resolves.toBe(0);
    // A project of the organization: its roles, applications, authorizations and granted organizations, read only.
    await page.goto(consoleUrl(`/projects/${ids.project}`));
    await page.getByRole("heading", { level: 1, name: "Gamma Portal" }).waitFor();
    await page.getByTestId("roles-table").getByText("reader", { exact: true }).waitFor();
    for (const name of ["Edit", "Deactivate", "Delete", "Add role"]) await expect(page.getByRole("button", { name, exact: true }).count()).resolves.toBe(0);
    await page.getByRole("tab", { name: "Applications" }).click();
    await page.getByText("No applications yet").or(page.getByTestId("apps-table")).first().waitFor();
    await expect(page.getByRole("link", { name: "New application" }).count()).resolves.toBe(0);
    await page.getByRole("tab", { name: "Authorizations" }).click();
    await page.getByTestId("empty-state").waitFor();
    await expect(page.getByRole("button", { name: "Grant", exact: true }).count()).resolves.toBe(0);
    await page.getByRole("tab", { name: "Granted organizations" }).click();
    await page.getByTestId("empty-state").waitFor();
    await expect(page.getByRole("button", { name: "Grant project" }).count()).resolves.toBe(0);
    expect(await accessibilityProblems(page)).toEqual([]);
    // Pages that only create are not opened (typed or bookmarked).
    for (const path of ["/users/new", `/projects/${ids.project}/apps/new`, `/orgs/${orgId}/idps/new/oidc`]) {
      await page.goto(consoleUrl(path));
      await page.getByRole("heading", { name: "No access" }).waitFor();
    }
    await page.context().close();
  }, 120_000);

  it("offers an ORG_USER_MANAGER the writes in its organization, and shows the API's message where it refuses", async () => {
    const page = await signedIn("gamma-manager", "/users");
    await page.getByRole("heading", { level: 1, name: "Users" }).waitFor();
    await page.getByRole("link", { name: "New user" }).waitFor();
    await userPage(page, ids.target as string);
    await page.getByRole("button", { name: "Save profile" }).waitFor();
    await expect(page.getByLabel("Given name").isDisabled()).resolves.toBe(false);
    await page.getByRole("button", { name: "Delete", exact: true }).waitFor();
    await page.getByRole("button", { name: "Lock", exact: true }).click();
    await page.getByRole("button", { name: "Unlock", exact: true }).waitFor();
    expect((await admin(t, "GetUserByID", { userId: ids.target as string })).user.state).toBe("USER_STATE_LOCKED");
    await page.getByRole("button", { name: "Unlock", exact: true }).click();
    await page.getByRole("button", { name: "Lock", exact: true }).waitFor();
    // The phone verified with a code the manager creates (svc sends no SMS) and enters for the user.
    await page.getByRole("button", { name: "Create a verification code" }).click();
    const code = await page.getByLabel(/^Code for the phone number/).inputValue();
    expect(code).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
    await page.getByLabel("Phone verification code").fill(code);
    await page.getByRole("button", { name: "Verify phone" }).click();
    await page.getByRole("button", { name: "Verify phone" }).waitFor({ state: "detached" });
    expect((await admin(t, "GetUserByID", { userId: ids.target as string })).user.human.phone).toEqual({ phone: "+41441234567", isVerified: true });
    // The organization's owner holds a role the manager cannot grant: the button is there (user.write in the
    // organization), the API refuses, and its message is shown.
    await userPage(page, ids["gamma-owner"] as string);
    await page.getByRole("button", { name: "Lock", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "the user holds roles the caller cannot grant" }).waitFor();
    expect((await admin(t, "GetUserByID", { userId: ids["gamma-owner"] as string })).user.state).toBe("USER_STATE_ACTIVE");
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.context().close();
  }, 120_000);

  it("lets an organization's owner create, edit and delete its own identity provider beside the instance's", async () => {
    const instanceIdp = (
      await admin(t, "AddGenericOIDCProvider", {
        name: "Instance SSO",
        issuer: "https://instance-sso.example.com",
        clientId: "c",
        clientSecret: "instance-secret-0123456789",
      })
    ).id;
    const page = await signedIn("gamma-owner", `/orgs/${orgId}`);
    await page.getByRole("heading", { level: 1, name: "Gamma Works" }).waitFor();
    await page.getByRole("tab", { name: "Identity providers" }).click();
    const table = page.getByTestId("idps-table");
    // The instance's provider is listed, read-only here (no instance pages for an organization's owner).
    await table
      .getByRole("row", { name: /Instance SSO/ })
      .getByText("The instance")
      .waitFor();
    await expect(table.getByRole("link", { name: "Instance SSO" }).count()).resolves.toBe(0);
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole("link", { name: "New OpenID Connect provider" }).click();
    await page.getByRole("heading", { level: 1, name: "New OpenID Connect provider" }).waitFor();
    await page.getByRole("textbox", { name: /^Name/ }).fill("Gamma SSO");
    await page.getByLabel("Issuer").fill("https://sso.gamma.example.com");
    await page.getByLabel("Client ID").fill("gamma-client");
    await page.getByLabel("Client secret").fill("gamma-secret-0123456789");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { level: 1, name: "Gamma SSO" }).waitFor();
    const idpId = page.url().split("/").pop() as string;
    expect(page.url()).toContain(`/ui/console/orgs/${orgId}/idps/${idpId}`);
    expect((await admin(t, "GetIdentityProvider", { idpId })).idp).toMatchObject({
      organizationId: orgId,
      name: "Gamma SSO",
      oidc: { issuer: "https://sso.gamma.example.com", clientId: "gamma-client" },
    });
    await page.getByLabel("Scopes").fill("openid email");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    expect((await admin(t, "GetIdentityProvider", { idpId })).idp.oidc.scopes).toEqual(["openid", "email"]);
    await screenshot(page, "console-org-idp-1280");
    // Back on the organization's tab: its own provider beside the instance's.
    await page.getByRole("link", { name: "Identity providers" }).first().click();
    await table
      .getByRole("row", { name: /Gamma SSO/ })
      .getByText("This organization")
      .waitFor();
    await table.getByRole("link", { name: "Gamma SSO" }).click();
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this identity provider?" });
    await confirm.getByLabel("Type Gamma SSO to confirm").fill("Gamma SSO");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { level: 1, name: "Gamma Works" }).waitFor();
    await table.getByRole("row", { name: /Instance SSO/ }).waitFor();
    // The list refetches after the delete: wait for the row to go rather than count at once.
    await table.getByText("Gamma SSO").waitFor({ state: "detached" });
    await expect(admin(t, "GetIdentityProvider", { idpId })).rejects.toThrow();
    // The instance's provider stays untouched.
    expect((await admin(t, "GetIdentityProvider", { idpId: instanceIdp })).idp.name).toBe("Instance SSO");
    // The organization's project: the owner may change it.
    await page.goto(consoleUrl(`/projects/${ids.project}`));
    await page.getByRole("heading", { level: 1, name: "Gamma Portal" }).waitFor();
    await page.getByRole("button", { name: "Add role" }).waitFor();
    await page.getByRole("button", { name: "Edit", exact: true }).waitFor();
    await page.getByRole("tab", { name: "Applications" }).click();
    await page.getByRole("link", { name: "New application" }).first().waitFor();
    await page.context().close();
  }, 120_000);
});
