// The admin console's project, application, identity provider, actions and settings pages (issue 24, part B) in a
// real browser (Debian's chromium through playwright-core) against a real svc, each change checked through the API:
// a project edited, deactivated, reactivated and deleted after typing its name; roles renamed and deleted; the
// project granted to another organization with a subset of its roles, narrowed and removed; a user's grant
// deactivated and removed; a SAML app through the wizard (entity id and ACS URL) ending with svc's metadata URL; an
// OIDC app's settings (an http://localhost redirect URI in development mode), a new client secret that works while
// the old one stops, and the app deleted; OIDC and SAML identity providers created, edited and deleted; a target with
// its signing key shown once and an execution set and removed; CORS origins that svc then answers; the branding's
// live preview and the hosted login's theme after saving. axe-core scans each page. One sign-in serves the file.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ensureConsoleBuilt } from "../../scripts/build.mjs";
import { accessibilityProblems, browserAvailable, launchBrowser, newContext, PHONE, screenshot, startBrowserServer } from "../support/browser.js";
import { createHuman, createOrg, defaultOrgId, project } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { type SamlifyIdp, startSamlifyIdp } from "../support/saml-idp.js";
import type { TestServer } from "../support/server.js";

const run = browserAvailable() ? describe : describe.skip;
const ADMIN_PASSWORD = "Console-Admin-Passw0rd!";

let t: TestServer;
let browser: Browser;
let context: BrowserContext;
let orgId: string;

const consoleUrl = (p = "/") => `${t.url.replace("127.0.0.1", "localhost")}/ui/console${p}`;

beforeAll(async () => {
  if (!browserAvailable()) return;
  await ensureConsoleBuilt();
  // Event deliveries to a loopback receiver, dead after two attempts a moment apart.
  t = await startBrowserServer({
    SVC_ADMIN_PASSWORD: ADMIN_PASSWORD,
    SVC_ACTIONS_ALLOW_PRIVATE: "true",
    SVC_ACTIONS_DELIVERY_ATTEMPTS: "2",
    SVC_ACTIONS_DELIVERY_BACKOFF_MS: "100",
  });
  browser = await launchBrowser();
  orgId = await defaultOrgId(t);
  const users = await admin(t, "ListUsers", { queries: [{ userNameQuery: { userName: "admin", method: "TEXT_QUERY_METHOD_EQUALS" } }] });
  // One sign-in through the hosted login; every page of the file signs in silently on its session.
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
});

/** A console page, signed in on the file's session, once its heading is there. */
async function open(path: string, heading: string | RegExp): Promise<Page> {
  const page = await context.newPage();
  await page.goto(consoleUrl(path));
  await page.getByRole("heading", { level: 1, name: heading }).waitFor();
  return page;
}

async function expectAccessible(page: Page): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
}

/** Picks `option` in the Mantine Select or MultiSelect labelled `label` inside `scope`. */
async function pick(page: Page, scope: ReturnType<Page["locator"]>, label: string, option: string | RegExp): Promise<void> {
  const input = scope.getByLabel(label).first();
  await input.click({ force: true });
  const choice = page.getByRole("option", { name: option }).first();
  // A field a dialog focused on opening has its dropdown open already; the click closed it again.
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
async function until(ok: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}

const stateOf = async (projectId: string) => (await admin(t, "GetProject", { projectId })).project.state as string;

run("projects", () => {
  it("edits, deactivates, reactivates a project; renames and deletes a role; grants it to another organization with a subset of its roles; manages a user's grant; deletes it after typing its name", async () => {
    const projectId = await project(t, orgId, "Warehouse", ["reader", "writer", "admin"]);
    const partnerId = await createOrg(t, "Partner Co");
    const userId = await createHuman(t, orgId, "grace");
    const grantId = (await admin(t, "AddUserGrant", { projectId, userId, roleKeys: ["reader"] })).grantId as string;
    const page = await open(`/projects/${projectId}`, "Warehouse");
    await page.getByTestId("roles-table").getByText("writer", { exact: true }).waitFor();
    await expectAccessible(page);

    // Edit: the name and a flag.
    await page.getByRole("button", { name: "Edit", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Edit project" });
    await dialog.getByLabel("Name").fill("Warehouse 2");
    await dialog.getByRole("switch", { name: "Roles in tokens" }).click();
    await expectAccessible(page);
    await dialog.getByRole("button", { name: "Save" }).click();
    await page.getByRole("heading", { level: 1, name: "Warehouse 2" }).waitFor();
    expect((await admin(t, "GetProject", { projectId })).project).toMatchObject({ name: "Warehouse 2", projectRoleAssertion: true });

    await page.getByRole("button", { name: "Deactivate", exact: true }).click();
    await page.getByRole("button", { name: "Reactivate", exact: true }).waitFor();
    expect(await stateOf(projectId)).toBe("PROJECT_STATE_INACTIVE");
    await page.getByRole("button", { name: "Reactivate", exact: true }).click();
    await page.getByRole("button", { name: "Deactivate", exact: true }).waitFor();
    expect(await stateOf(projectId)).toBe("PROJECT_STATE_ACTIVE");

    // Roles: rename one, delete another after confirming.
    await page.getByRole("button", { name: "Edit role writer" }).click();
    const roleDialog = page.getByRole("dialog", { name: "Edit role writer" });
    await roleDialog.getByLabel("Display name").fill("Writers");
    await roleDialog.getByRole("button", { name: "Save" }).click();
    await page.getByTestId("roles-table").getByText("Writers", { exact: true }).waitFor();
    await page.getByRole("button", { name: "Delete role admin" }).click();
    await page.getByRole("dialog", { name: "Delete role admin" }).getByRole("button", { name: "Delete" }).click();
    await page.getByTestId("roles-table").getByText("admin", { exact: true }).waitFor({ state: "detached" });
    const roles = (await admin(t, "ListProjectRoles", { projectId })).result
      .map((r: { roleKey: string; displayName: string }) => [r.roleKey, r.displayName])
      .sort();
    expect(roles).toEqual([
      ["reader", "READER"],
      ["writer", "Writers"],
    ]);

    // Granted organizations: Partner Co gets reader and writer, then reader only, then nothing.
    await page.getByRole("tab", { name: "Granted organizations" }).click();
    await page.getByText("Not granted to any organization").waitFor();
    await expectAccessible(page);
    const form = page.locator("form").filter({ hasText: "Grant to an organization" });
    await pick(page, form, "Organization", "Partner Co");
    await pick(page, form, "Roles", "READER");
    await pick(page, form, "Roles", "Writers");
    await page.keyboard.press("Escape");
    await form.getByRole("button", { name: "Grant project" }).click();
    await page.getByTestId("project-grants-table").getByText("Partner Co").waitFor();
    await screenshot(page, "console-project-grants-1280");
    const grants = async () => (await admin(t, "ListProjectGrants", { queries: [{ projectIdQuery: { projectId } }] })).result ?? [];
    expect((await grants())[0]).toMatchObject({ grantedOrganizationId: partnerId, roleKeys: ["reader", "writer"] });
    await page.getByRole("button", { name: "Edit the roles granted to Partner Co" }).click();
    const narrow = page.getByRole("dialog", { name: "Edit the roles granted to Partner Co" });
    // Picked options toggle off in the dropdown.
    await pick(page, narrow, "Roles", "Writers");
    await page.keyboard.press("Escape");
    await narrow.getByRole("button", { name: "Save" }).click();
    await narrow.waitFor({ state: "detached" });
    expect((await grants())[0].roleKeys).toEqual(["reader"]);
    await page.getByRole("button", { name: "Remove the grant to Partner Co" }).click();
    await page.getByRole("dialog", { name: "Remove the grant to Partner Co" }).getByRole("button", { name: "Remove" }).click();
    await page.getByText("Not granted to any organization").waitFor();
    expect(await grants()).toEqual([]);

    // Authorizations: deactivate grace's grant, then remove it.
    await page.getByRole("tab", { name: "Authorizations" }).click();
    await page
      .getByTestId("grants-table")
      .getByText(/^grace@/)
      .waitFor();
    await page.getByRole("button", { name: /^Deactivate for grace@/ }).click();
    await page.getByRole("button", { name: /^Reactivate for grace@/ }).waitFor();
    const grant = async () => (await admin(t, "ListUserGrants", { queries: [{ userIdFilter: { userId } }] })).result ?? [];
    expect((await grant())[0]).toMatchObject({ grantId, state: "USER_GRANT_STATE_INACTIVE" });
    await expectAccessible(page);
    await page.getByRole("button", { name: /^Remove the roles of grace@/ }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await page.getByText("Nobody holds a role of this project").waitFor();
    expect(await grant()).toEqual([]);

    // Delete: only after typing the name.
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this project?" });
    await expect(confirm.getByRole("button", { name: "Delete" }).isDisabled()).resolves.toBe(true);
    await confirm.getByLabel("Type Warehouse 2 to confirm").fill("Warehouse 2");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor();
    await expect(admin(t, "GetProject", { projectId })).rejects.toThrow();
    await page.close();
  }, 120_000);
});

const basic = (clientId: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString("base64")}`;
const introspectAs = (clientId: string, secret: string) =>
  fetch(`${t.url}/oauth/v2/introspect`, {
    method: "POST",
    headers: { authorization: basic(clientId, secret) },
    body: new URLSearchParams({ token: "nothing" }),
  });

run("applications", () => {
  it("adds a SAML service provider through the wizard by its entity id and ACS URL, and ends with svc's metadata URL", async () => {
    const projectId = await project(t, orgId, "Intranet");
    const page = await open(`/projects/${projectId}/apps/new`, "New application");
    await page.getByRole("radio", { name: "SAML service provider" }).click();
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByLabel("Name").fill("wiki");
    await page.getByRole("textbox", { name: "Entity ID" }).fill("https://wiki.example.com/saml");
    await page.getByLabel("Assertion consumer service (ACS) URL").fill("https://wiki.example.com/saml/acs");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Create" }).click();
    const metadataUrl = await page.getByLabel("svc's SAML metadata URL").inputValue();
    expect(metadataUrl).toBe(consoleUrl("").replace("/ui/console", "/saml/v2/metadata"));
    expect((await fetch(metadataUrl.replace("localhost", "127.0.0.1"))).status).toBe(200);
    await screenshot(page, "console-app-wizard-saml-1280");
    await expectAccessible(page);
    const app = (await admin(t, "ListApplications", { projectId })).result[0];
    expect(app).toMatchObject({ name: "wiki" });
    expect(app.saml).toMatchObject({ entityId: "https://wiki.example.com/saml" });
    expect(app.saml.assertionConsumerServices[0]).toMatchObject({ url: "https://wiki.example.com/saml/acs" });
    // The application's page shows what svc read from the metadata.
    await page.getByRole("link", { name: "Open the application" }).click();
    await expect(page.getByRole("textbox", { name: "Entity ID" }).inputValue()).resolves.toBe("https://wiki.example.com/saml");
    await page.getByText("https://wiki.example.com/saml/acs", { exact: true }).waitFor();
    await expectAccessible(page);
    // The NameID format and the attribute names (issue 29) are saved with the rest.
    await pick(page, page.locator("main"), "NameID format", "Persistent, pairwise (an opaque ID per user and SP)");
    await pick(page, page.locator("main"), "Attribute names", "urn:oid (eduPerson, X.500)");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    const saved = (await admin(t, "GetApplication", { projectId, appId: app.id })).app.saml;
    expect(saved).toMatchObject({ nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT_PAIRWISE", attributeProfile: "SAML_ATTRIBUTE_PROFILE_URN_OID" });
    await page.close();
  });

  it("edits an OIDC app's settings, replaces its client secret (shown once) so that the old one stops working, and deletes it", async () => {
    const projectId = await project(t, orgId, "Shopfront");
    const created = await admin(t, "CreateApplication", {
      projectId,
      name: "shop",
      oidc: {
        redirectUris: ["https://shop.example.com/cb"],
        appType: "OIDC_APP_TYPE_WEB",
        authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC",
        grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
      },
    });
    const { appId, clientId, clientSecret } = created as { appId: string; clientId: string; clientSecret: string };
    const page = await open(`/projects/${projectId}?tab=apps`, "Shopfront");
    await page.getByTestId("apps-table").getByRole("link", { name: "shop" }).click();
    await page.getByRole("heading", { level: 1, name: "shop" }).waitFor();
    await expect(page.getByLabel("Client ID").inputValue()).resolves.toBe(clientId);
    // Copy-paste configuration without the secret, which is not shown again.
    await page.getByRole("tab", { name: "Spring Security" }).click();
    await page.getByText(/client-secret: <your client secret>/).waitFor();
    await expectAccessible(page);

    // An http://localhost redirect URI needs development mode: the page says so, and the API accepts it with it.
    await page.getByRole("textbox", { name: "Redirect URIs", exact: true }).fill("https://shop.example.com/cb\nhttp://localhost:3000/cb");
    await page.getByText("An http redirect URI needs development mode.").waitFor();
    await page.getByRole("switch", { name: "Development mode" }).click();
    await pick(page, page.locator("main"), "Grant types", "Refresh token");
    await page.keyboard.press("Escape");
    // The ID tokens' algorithm and PAR (issue 29).
    await pick(page, page.locator("main"), "ID token signing algorithm", "ES256");
    await page.getByRole("checkbox", { name: "Require pushed authorization requests (PAR)" }).check();
    // Logout everywhere (issue 29): the back-channel URI with sid, the front-channel URI without.
    await page.getByRole("textbox", { name: "Back-channel logout URI" }).fill("https://shop.example.com/backchannel");
    await page.getByRole("checkbox", { name: "Back-channel logout URI: Send the issuer and session id (sid)" }).check();
    await page.getByRole("textbox", { name: "Front-channel logout URI" }).fill("https://shop.example.com/frontchannel");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    // A full-page screenshot draws the fixed header where the page was scrolled to.
    await page.evaluate("scrollTo(0, 0)");
    await screenshot(page, "console-app-1280");
    const oidc = (await admin(t, "GetApplication", { projectId, appId })).app.oidc;
    expect(oidc).toMatchObject({
      redirectUris: ["https://shop.example.com/cb", "http://localhost:3000/cb"],
      devMode: true,
      grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
      idTokenSignedResponseAlg: "ES256",
      requirePushedAuthorizationRequests: true,
      backchannelLogoutUri: "https://shop.example.com/backchannel",
      backchannelLogoutSessionRequired: true,
      frontchannelLogoutUri: "https://shop.example.com/frontchannel",
    });
    expect(oidc.frontchannelLogoutSessionRequired ?? false).toBe(false);

    // A new secret: shown once, accepted by the token endpoints, and the old one refused.
    expect((await introspectAs(clientId, clientSecret)).status).toBe(200);
    await page.getByRole("button", { name: "New client secret" }).click();
    await page.getByRole("dialog", { name: "Replace the client secret?" }).getByRole("button", { name: "New client secret" }).click();
    const secret = await page.getByRole("textbox", { name: "Client secret" }).inputValue();
    expect(secret).not.toBe(clientSecret);
    expect((await introspectAs(clientId, secret)).status).toBe(200);
    expect((await introspectAs(clientId, clientSecret)).status).toBe(401);

    await page.getByRole("button", { name: "Deactivate", exact: true }).click();
    await page.getByRole("button", { name: "Reactivate", exact: true }).waitFor();
    expect((await admin(t, "GetApplication", { projectId, appId })).app.state).toBe("APP_STATE_INACTIVE");
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this application?" });
    await confirm.getByLabel("Type shop to confirm").fill("shop");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { level: 1, name: "Shopfront" }).waitFor();
    await page.getByText("No applications yet").waitFor();
    expect((await admin(t, "ListApplications", { projectId })).result ?? []).toEqual([]);
    await page.close();
  });
});

run("application keys", () => {
  it("gives a private_key_jwt machine a generated key whose file is shown once with a download, lists it and deletes it", async () => {
    const projectId = await project(t, orgId, "Batch jobs");
    const { appId } = (await admin(t, "CreateApplication", {
      projectId,
      name: "nightly",
      api: { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" },
    })) as { appId: string };
    const page = await open(`/projects/${projectId}/apps/${appId}`, "nightly");
    await page.getByText("No keys yet", { exact: false }).waitFor();
    await page.getByRole("button", { name: "New key" }).click();
    const file = JSON.parse(await page.getByRole("textbox", { name: "Key file" }).inputValue()) as { keyId: string; key: string; appId: string };
    expect(file).toMatchObject({ appId });
    expect(file.key).toContain("PRIVATE KEY");
    const download = page.getByRole("link", { name: "Download the key file" });
    await expect(download.getAttribute("download")).resolves.toBe(`${file.keyId}.json`);
    await page.getByTestId("app-keys-table").getByText(file.keyId).waitFor();
    const keys = async () => (await admin(t, "ListApplicationKeys", { projectId, appId })).result ?? [];
    expect((await keys()).map((k: { id: string }) => k.id)).toEqual([file.keyId]);
    await expectAccessible(page);
    await page.getByRole("button", { name: `Delete key ${file.keyId}` }).click();
    await page
      .getByRole("dialog", { name: `Delete key ${file.keyId}` })
      .getByRole("button", { name: "Delete" })
      .click();
    await page.getByText("No keys yet", { exact: false }).waitFor();
    expect(await keys()).toEqual([]);
    await page.close();
  });
});

run("identity providers", () => {
  let samlIdp: SamlifyIdp;
  beforeAll(async () => {
    samlIdp = await startSamlifyIdp();
  });
  afterAll(() => samlIdp?.close());

  it("creates, edits and deletes a generic OIDC provider and a SAML provider (by its metadata)", async () => {
    const page = await open("/idps", "Identity providers");
    await page.getByText("No identity providers yet").waitFor();
    await expectAccessible(page);
    await page.getByRole("link", { name: "New OpenID Connect provider" }).first().click();
    await page.getByRole("heading", { level: 1, name: "New OpenID Connect provider" }).waitFor();
    await page.getByRole("textbox", { name: /^Name/ }).fill("Corp SSO");
    await page.getByLabel("Issuer").fill("https://sso.example.com");
    await page.getByLabel("Client ID").fill("svc-client");
    await page.getByLabel("Client secret").fill("provider-secret-0123456789");
    await page.getByLabel("Create users at their first sign-in").check();
    await page.getByLabel("E-mail", { exact: true }).fill("mail");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { level: 1, name: "Corp SSO" }).waitFor();
    const idpId = page.url().split("/").pop() as string;
    expect((await admin(t, "GetIdentityProvider", { idpId })).idp).toMatchObject({
      name: "Corp SSO",
      oidc: { issuer: "https://sso.example.com", clientId: "svc-client", claimMapping: { email: "mail" } },
      options: { isAutoCreation: true },
    });
    // Edited without a secret: the stored one stays.
    await page.getByLabel("Scopes").fill("openid email");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    expect((await admin(t, "GetIdentityProvider", { idpId })).idp.oidc.scopes).toEqual(["openid", "email"]);

    await page.getByRole("link", { name: "Identity providers" }).first().click();
    await page.getByRole("link", { name: "New SAML provider" }).first().click();
    await page.getByRole("textbox", { name: /^Name/ }).fill("Corp SAML");
    await page.getByRole("textbox", { name: "Metadata XML" }).fill(samlIdp.metadata);
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("heading", { level: 1, name: "Corp SAML" }).waitFor();
    const spMetadata = await page.getByLabel(/SP metadata URL/).inputValue();
    expect((await fetch(spMetadata.replace("localhost", "127.0.0.1"))).status).toBe(200);
    await expectAccessible(page);
    await page.getByRole("link", { name: "Identity providers" }).first().click();
    const table = page.getByTestId("idps-table");
    await table.getByRole("link", { name: "Corp SAML" }).waitFor();
    await table.getByRole("link", { name: "Corp SSO" }).click();
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this identity provider?" });
    await confirm.getByLabel("Type Corp SSO to confirm").fill("Corp SSO");
    await confirm.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("heading", { level: 1, name: "Identity providers" }).waitFor();
    await table.getByRole("link", { name: "Corp SSO" }).waitFor({ state: "detached" });
    await expect(admin(t, "GetIdentityProvider", { idpId })).rejects.toThrow();
    await page.close();
  });
});

run("actions", () => {
  it("creates a target with its signing key shown once, sets and removes an execution, and deletes the target", async () => {
    const page = await open("/actions", "Actions");
    await page.getByText("No targets yet").waitFor();
    await expectAccessible(page);
    await page.getByRole("button", { name: "New target" }).first().click();
    const dialog = page.getByRole("dialog", { name: "New target" });
    await dialog.getByLabel("Name").fill("claims-hook");
    await dialog.getByLabel("Endpoint").fill("http://127.0.0.1:9/hook");
    await dialog.getByRole("button", { name: "Create" }).click();
    const key = await dialog.getByLabel("Signing key").inputValue();
    expect(key).toMatch(/^[\w-]{43}$/);
    await expectAccessible(page);
    await dialog.getByRole("button", { name: "Done" }).click();
    await page.getByTestId("targets-table").getByText("claims-hook").waitFor();
    const targetId = (await admin(t, "ListTargets", {})).result[0].id as string;

    await page.getByRole("tab", { name: "Executions" }).click();
    const card = page.getByTestId("execution-preuserinfo");
    await card.getByLabel("Targets of preuserinfo").click({ force: true });
    await page.getByRole("option", { name: "claims-hook" }).click();
    await page.keyboard.press("Escape");
    await card.getByRole("button", { name: "Save" }).click();
    await card.getByRole("button", { name: "Remove the execution" }).waitFor();
    const executions = async () => (await admin(t, "ListExecutions", {})).result ?? [];
    expect(await executions()).toEqual([expect.objectContaining({ function: "preuserinfo", targetIds: [targetId] })]);
    await screenshot(page, "console-actions-1280");
    await expectAccessible(page);
    await card.getByRole("button", { name: "Remove the execution" }).click();
    await card.getByRole("button", { name: "Remove the execution" }).waitFor({ state: "detached" });
    expect(await executions()).toEqual([]);

    await page.getByRole("tab", { name: "Targets" }).click();
    await page.getByRole("button", { name: "Delete target claims-hook" }).click();
    await page.getByRole("dialog", { name: "Delete target claims-hook" }).getByRole("button", { name: "Delete" }).click();
    await page.getByText("No targets yet").waitFor();
    expect((await admin(t, "ListTargets", {})).result ?? []).toEqual([]);
    await page.close();
  });
});

run("actions: events and their deliveries", () => {
  it("a webhook target gets the events of a condition set in the console; a dead delivery is retried from the deliveries tab", async () => {
    const arrivals: { type: string; aggregateId: string }[] = [];
    let status = 500;
    const receiver = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      req.on("end", () => {
        arrivals.push(JSON.parse(raw));
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const page = await open("/actions", "Actions");
      await page.getByRole("button", { name: "New target" }).first().click();
      const dialog = page.getByRole("dialog", { name: "New target" });
      await dialog.getByLabel("Name").fill("events-hook");
      await dialog.getByLabel("Endpoint").fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`);
      await pick(page, dialog, "Kind", "Webhook");
      await dialog.getByRole("button", { name: "Create" }).click();
      await dialog.getByRole("button", { name: "Done" }).click();
      await page.getByTestId("targets-table").getByText("Webhook").waitFor();
      const target = (await admin(t, "ListTargets", {})).result.find((x: { name: string }) => x.name === "events-hook");
      expect(target).toMatchObject({ kind: "TARGET_KIND_WEBHOOK" });

      await page.getByRole("tab", { name: "Executions" }).click();
      const events = page.getByTestId("event-executions");
      await events.getByText("No events are sent yet.").waitFor();
      await events.getByLabel("Event type").fill("user.human.added");
      await pick(page, events, "Send to", "events-hook");
      await page.keyboard.press("Escape");
      await events.getByRole("button", { name: "Send these events" }).click();
      await events.getByTestId("event-executions-table").getByText("user.human.added").waitFor();
      const executions = async () => ((await admin(t, "ListExecutions", {})).result ?? []).filter((e: { event?: unknown }) => e.event);
      expect(await executions()).toEqual([expect.objectContaining({ event: { event: "user.human.added" }, targetIds: [target.id] })]);
      await expectAccessible(page);

      // A user created: its event is delivered to the receiver, which answers 500 twice: dead.
      const userId = await createHuman(t, orgId, "console-events-user");
      await page.getByRole("tab", { name: "Deliveries" }).click();
      // The page follows a delivery on its way until it ends.
      const row = page.getByTestId("deliveries-table").getByRole("row").filter({ hasText: "user.human.added" });
      await row.getByText("Dead").waitFor({ timeout: 20_000 });
      await row.getByText("2 / 2").waitFor();
      await row.getByText("answered 500").waitFor();
      expect(arrivals.filter((a) => a.aggregateId === userId)).toHaveLength(2);
      await screenshot(page, "console-deliveries-1280");
      await expectAccessible(page);

      // Retried from the console: delivered to the receiver, now answering 200.
      status = 200;
      await row.getByRole("button", { name: "Retry the delivery of user.human.added" }).click();
      await row.getByText("Delivered").waitFor({ timeout: 20_000 });
      expect(arrivals.filter((a) => a.aggregateId === userId)).toHaveLength(3);
      expect(((await admin(t, "ListDeliveries", { targetId: target.id, state: "delivered" })).result ?? []).length).toBe(1);
      // Filtered on the server by state.
      const panel = page.getByRole("tabpanel");
      await pick(page, panel, "State", "Dead");
      await panel.getByText("No deliveries").waitFor();
      await pick(page, panel, "State", "Delivered");
      await row.getByText("Delivered").waitFor();

      // Stopped from the console.
      await page.getByRole("tab", { name: "Executions" }).click();
      await page.getByRole("button", { name: "Stop sending user.human.added" }).click();
      await page.getByRole("dialog", { name: "Stop sending user.human.added" }).getByRole("button", { name: "Stop" }).click();
      await page.getByTestId("event-executions").getByText("No events are sent yet.").waitFor();
      expect(await executions()).toEqual([]);
      await page.close();
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

run("actions: an organization's webhooks", () => {
  it("an organization's page makes its own target, sends it the organization's events, and lists their deliveries", async () => {
    const arrivals: { type: string; aggregateId: string }[] = [];
    const receiver = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      req.on("end", () => {
        arrivals.push(JSON.parse(raw));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const hookOrg = await createOrg(t, "Webhook Org");
      const page = await open(`/orgs/${hookOrg}`, "Webhook Org");
      await page.getByRole("tab", { name: "Webhooks" }).click();
      await page.getByText("No targets yet").waitFor();
      await page.getByRole("button", { name: "New target" }).first().click();
      const dialog = page.getByRole("dialog", { name: "New target" });
      await dialog.getByLabel("Name").fill("org-hook");
      await dialog.getByLabel("Endpoint").fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/org`);
      await dialog.getByRole("button", { name: "Create" }).click();
      await dialog.getByRole("button", { name: "Done" }).click();
      await page.getByTestId("targets-table").getByText("Webhook").waitFor();
      const target = (await admin(t, "ListTargets", { organizationId: hookOrg })).result[0];
      expect(target).toMatchObject({ name: "org-hook", organizationId: hookOrg, kind: "TARGET_KIND_WEBHOOK" });

      const events = page.getByTestId("event-executions");
      await events.getByText("A group", { exact: true }).click();
      await events.getByLabel("Group (type prefix)").fill("user");
      await pick(page, events, "Send to", "org-hook");
      await page.keyboard.press("Escape");
      await events.getByRole("button", { name: "Send these events" }).click();
      await events.getByTestId("event-executions-table").getByText("user.*").waitFor();
      expect((await admin(t, "ListExecutions", { organizationId: hookOrg })).result).toEqual([
        expect.objectContaining({ event: { group: "user.*" }, organizationId: hookOrg, targetIds: [target.id] }),
      ]);

      // The organization's user: delivered; another organization's: not sent to this target.
      const inOrg = await createHuman(t, hookOrg, "webhook-org-user");
      const row = page.getByTestId("deliveries-table").getByRole("row").filter({ hasText: "user.human.added" });
      await page.reload();
      await page.getByRole("tab", { name: "Webhooks" }).click();
      await row.getByText("Delivered").waitFor({ timeout: 20_000 });
      expect(arrivals.some((a) => a.aggregateId === inOrg)).toBe(true);
      const elsewhere = await createHuman(t, orgId, "webhook-other-org-user");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(arrivals.filter((a) => a.aggregateId === elsewhere)).toEqual([]);
      await expectAccessible(page);
      await screenshot(page, "console-org-webhooks-1280");
      await page.close();
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});

run("settings", () => {
  it("saves CORS origins that svc then answers, and the branding whose preview follows the form before it is saved", async () => {
    const page = await open("/settings", "Instance settings");
    await page.getByLabel("Allowed CORS origins").fill("https://app.example.com");
    await page.locator("form").filter({ hasText: "Allowed CORS origins" }).getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
    expect((await admin(t, "GetSecuritySettings", {})).settings.allowedCorsOrigins).toEqual(["https://app.example.com"]);
    const preflight = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, {
      method: "OPTIONS",
      headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://app.example.com");

    // Login: the second factors on offer and a check's lifetime (in hours, whole seconds in the API).
    const login = page.locator(".mantine-Card-root").filter({ hasText: "Second factors users may set up" });
    await login.getByLabel("Authenticator app (TOTP)").waitFor();
    for (const factor of ["Authenticator app (TOTP)", "Security key or passkey", "Codes by e-mail"]) await login.getByLabel(factor).uncheck();
    await login.getByLabel("Authenticator app (TOTP)").check();
    await login.getByLabel("Password check valid (hours)").fill("12");
    await login.getByRole("button", { name: "Save" }).click();
    await until(async () => (await admin(t, "GetLoginSettings", {})).settings.passwordCheckLifetime === "43200s");
    expect((await admin(t, "GetLoginSettings", {})).settings.secondFactors).toEqual(["SECOND_FACTOR_TYPE_OTP"]);
    await expectAccessible(page);

    await page.getByRole("link", { name: "Branding" }).click();
    await page.getByRole("heading", { level: 1, name: "Branding" }).waitFor();
    const preview = page.getByTestId("branding-preview-light");
    await preview.waitFor();
    const primary = () => preview.getAttribute("style").then((style) => /--primary:\s*([^;]+)/.exec(style ?? "")?.[1]?.trim());
    await expect(primary()).resolves.toBe("#2f6feb");
    await page
      .locator("label", { hasText: /^Light$/ })
      .first()
      .click();
    const primaryInput = page.getByLabel("Primary").first();
    await primaryInput.fill("#aa3300");
    // Live: the preview follows the form before anything is saved.
    await until(async () => (await primary()) === "#aa3300");
    await page.getByLabel("Show login names without the organization's domain").check();
    await preview.getByText("alice", { exact: true }).waitFor();
    await screenshot(page, "console-branding-1280");
    await expectAccessible(page);
    await page.getByRole("button", { name: "Save" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: /^Saved/ })
      .waitFor();
    expect((await admin(t, "GetBrandingSettings", {})).settings).toMatchObject({
      primaryColor: "#aa3300",
      themeMode: "THEME_MODE_LIGHT",
      hideLoginNameSuffix: true,
    });
    // The hosted login's theme carries it.
    const css = await (await fetch(`${t.url}/ui/login/theme.css`)).text();
    expect(css).toContain("--primary:#aa3300");
    await page.close();
  });
});

run("small screens and dark mode", () => {
  it("fits the new pages into 375 px without scrolling sideways, and keeps them accessible in dark mode", async () => {
    const projectId = await project(t, orgId, "Pocket", ["viewer"]);
    const { appId } = (await admin(t, "CreateApplication", {
      projectId,
      name: "pocket-web",
      oidc: { redirectUris: ["https://pocket.example.com/cb"], appType: "OIDC_APP_TYPE_WEB", authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC" },
    })) as { appId: string };
    const phone = await newContext(browser, { viewport: PHONE, colorScheme: "dark", storageState: await context.storageState() });
    const page = await phone.newPage();
    for (const [path, heading] of [
      [`/projects/${projectId}`, "Pocket"],
      [`/projects/${projectId}?tab=orgs`, "Pocket"],
      [`/projects/${projectId}/apps/${appId}`, "pocket-web"],
      ["/idps/new/saml", "New SAML provider"],
      ["/actions", "Actions"],
      ["/settings/branding", "Branding"],
    ] as const) {
      await page.goto(consoleUrl(path));
      await page.getByRole("heading", { level: 1, name: heading }).waitFor();
      await page.waitForLoadState("networkidle");
      expect(await page.evaluate("getComputedStyle(document.body).colorScheme")).toBe("dark");
      const overflow = (await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")) as number;
      expect({ path, overflow }).toEqual({ path, overflow: 0 });
      await expectAccessible(page);
    }
    await screenshot(page, "console-branding-dark-375");
    await phone.close();
  });
});
