// An attacker's review of the surfaces that landed on 2 December 2026 (docs/security.md, "Attack review of
// 2 December 2026"): each test here is a finding that failed before its fix, or a probe that holds and that no other
// test covers.
// - SAML SLO: an unsigned LogoutRequest naming an SP without a signing certificate ended the sessions of any NameID
//   (an e-mail address) for anyone who sent it: Profiles §4.4.4.1 requires the signature; now refused, session lives.
// - Device authorization: a public client's endpoint is anonymous and stored a row per call without bound (PAR has
//   MAX_LIVE_PUSHES): now at most 5,000 live per client, beyond that 429 slow_down with Retry-After.
// - Probe that holds: JWTs svc verifies itself (JWT access tokens at userinfo, ID token hints at end_session) with
//   the header changed (alg none, HS256 keyed with the public key, another algorithm for the kid, another key's kid)
//   are refused; the algorithm is the key's, never the header's.
// - Probe that holds: a back-channel logout URI at a loopback address (https, as outside dev mode) is never called
//   without SVC_ACTIONS_ALLOW_PRIVATE: the delivery fails with the reason, the address sees no connection.
// - Probes that hold: races. One pushed request_uri sent by eight browsers at once starts one sign-in; one approved
//   device code polled eight times at once gives tokens once.
// - Invitations (and password resets) sent inside the caller's URL template: an ORG_USER_MANAGER could send an
//   invited IAM_OWNER (or its ORG_OWNER) a genuine svc mail whose link takes the code to the manager's server, then
//   set the password: the account taken over. Now the template needs "who may change an account", as returning the
//   code does (Errors.User.MorePrivileged); svc's own page, and the templates of a login client, stay allowed.
// - Invitation guesses: while the user had an expired (not yet purged) password reset code, SetPassword's wrong
//   guesses were checked against that code, refused as expired and never counted: unlimited guesses of the invitation
//   (anyone can have a reset code made with the hosted login's "forgot password"). Now they count against it.
import { createHmac, createPublicKey, type JsonWebKey } from "node:crypto";
import net, { type AddressInfo } from "node:net";
import { deflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { addMember, createHuman, defaultOrgId, type Machine, machine, project } from "../support/fixtures.js";
import {
  authorizeGet,
  authRequestOf,
  codeFlow,
  discover,
  finish,
  issuerOf,
  loginClient,
  type OidcApp,
  oidc,
  oidcApp,
  postForm,
  type SessionRef,
  signIn,
} from "../support/oidc.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { createResponse, nodeSamlSp, REDIRECT, samlApp, samlRequestOf, spMetadata, ssoRedirect } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { linkFrom, type SmtpSink, startSmtpSink } from "../support/smtp.js";
import { locationOf, Visitor } from "../support/visitor.js";

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

describe("Back-channel logout URIs at private addresses (SSRF)", () => {
  it("a loopback URI is refused before anything is sent: the delivery fails with the reason, no connection is made", async () => {
    let connections = 0;
    const listener = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    try {
      const port = (listener.address() as AddressInfo).port;
      const apps = await Promise.all(
        [`https://127.0.0.1:${port}/logout`, `https://[::ffff:127.0.0.1]:${port}/logout`, `https://localhost:${port}/logout`].map((uri, i) =>
          oidcApp(t, projectId, `SSRF back-channel ${i}`, { backchannelLogoutUri: uri }),
        ),
      );
      const session = await signIn(t, login, alice);
      for (const app of apps) {
        const config = await discover(t, app.clientId, app.clientSecret);
        await codeFlow(t, config, login, alice, { session });
      }
      await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
      const appIds = apps.map((a) => a.appId);
      const end = Date.now() + 30_000;
      let rows: { lastError: string | null }[] = [];
      while (Date.now() < end) {
        rows = await t.server.db.prisma.delivery.findMany({
          where: { kind: "oidc.backchannel_logout", targetId: { in: appIds } },
          select: { lastError: true },
        });
        if (rows.length === apps.length && rows.every((r) => r.lastError !== null)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(rows).toHaveLength(apps.length);
      for (const r of rows) expect(r.lastError).toMatch(/private|loopback/);
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
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

describe("JWTs svc verifies itself: the header cannot choose the algorithm or the key", () => {
  const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
  const parts = (jwt: string) => {
    const [h, p, sig] = jwt.split(".") as [string, string, string];
    return { header: JSON.parse(Buffer.from(h, "base64url").toString()) as Record<string, unknown>, p, sig };
  };
  /** Variants of a genuine JWT an attacker can make without any private key. */
  function forgeries(jwt: string, keys: { kid: string; alg: string; kty: string }[]): Record<string, string> {
    const { header, p, sig } = parts(jwt);
    const other = keys.find((k) => k.kid !== header.kid && k.alg !== header.alg) as { kid: string; alg: string };
    const rsa = keys.find((k) => k.alg === "RS256") as { kid: string } & Record<string, unknown>;
    const pem = createPublicKey({ key: rsa as JsonWebKey, format: "jwk" })
      .export({ type: "spki", format: "pem" })
      .toString();
    const hs = (secret: string) => {
      const input = `${b64({ ...header, alg: "HS256", kid: rsa.kid })}.${p}`;
      return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
    };
    return {
      none: `${b64({ ...header, alg: "none" })}.${p}.`,
      "none, no kid": `${b64({ alg: "none", typ: header.typ })}.${p}.`,
      "HS256 keyed with the RSA key's PEM": hs(pem),
      "HS256 keyed with the RSA key's JWK": hs(JSON.stringify(rsa)),
      "another algorithm for the kid": `${b64({ ...header, alg: other.alg })}.${p}.${sig}`,
      "another key's kid": `${b64({ ...header, kid: other.kid })}.${p}.${sig}`,
      "the payload changed": `${b64(header)}.${b64({ ...JSON.parse(Buffer.from(p, "base64url").toString()), sub: "someone-else" })}.${sig}`,
    };
  }

  it("ES256 JWT access tokens at userinfo and ID token hints at end_session: every forgery refused, the genuine accepted", async () => {
    const app = await oidcApp(t, projectId, "ES256 JWT app", {
      idTokenSignedResponseAlg: "ES256",
      accessTokenType: "ACCESS_TOKEN_TYPE_JWT",
      postLogoutRedirectUris: ["https://rp.example.com/bye"],
    });
    const config = await discover(
      t,
      app.clientId,
      { client_secret: app.clientSecret, id_token_signed_response_alg: "ES256" },
      oidc.ClientSecretBasic(app.clientSecret),
    );
    const { tokens, session } = await codeFlow(t, config, login, alice);
    const keys = ((await (await fetch(`${t.url}/oauth/v2/keys`)).json()) as { keys: { kid: string; alg: string; kty: string }[] }).keys;
    const userinfo = (token: string) => fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    for (const [name, forged] of Object.entries(forgeries(tokens.access_token, keys))) {
      expect({ name, status: (await userinfo(forged)).status }).toEqual({ name, status: 401 });
    }
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    const endSession = (hint: string) =>
      fetch(`${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: "https://rp.example.com/bye" })}`, {
        redirect: "manual",
      });
    for (const [name, forged] of Object.entries(forgeries(tokens.id_token as string, keys))) {
      expect({ name, status: (await endSession(forged)).status }).toEqual({ name, status: 400 });
    }
    expect(await alive(session)).toBe(true);
    const genuine = await endSession(tokens.id_token as string);
    expect(genuine.status).toBe(302);
    expect(await alive(session)).toBe(false);
  }, 60_000);
});

describe("Races on single-use values", () => {
  const CB = "https://rp.example.com/cb";

  it("a pushed request_uri sent eight times at once starts one sign-in; the others get the invalid_request_uri page", async () => {
    const web = await oidcApp(t, projectId, "Race PAR app");
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(web.clientId)}:${encodeURIComponent(web.clientSecret)}`).toString("base64")}`;
    const pushed = await postForm(t, "/oauth/v2/par", { response_type: "code", redirect_uri: CB, scope: "openid", state: "race" }, basic);
    expect(pushed.status).toBe(201);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => authorizeGet(t, { client_id: web.clientId, request_uri: pushed.body.request_uri as string })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([302, 400, 400, 400, 400, 400, 400, 400]);
    expect(authRequestOf(answers.find((r) => r.status === 302) as Response)).toBeTruthy();
  }, 60_000);

  it("an approved device code polled eight times at once gives tokens once", async () => {
    const tv = await oidcApp(t, projectId, "Race TV", {
      appType: "OIDC_APP_TYPE_NATIVE",
      authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE",
      redirectUris: [],
      grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE"],
    });
    const da = await postForm(t, "/oauth/v2/device_authorization", { client_id: tv.clientId, scope: "openid" });
    expect(da.status).toBe(200);
    // The user types the code at the hosted login; the login UI finishes the auth request it starts with a session.
    const browser = new Visitor(t);
    await browser.get(`/ui/login/device?user_code=${da.body.user_code}`);
    const entered = await browser.post("/ui/login/device", { user_code: da.body.user_code as string });
    expect(entered.res.status).toBe(303);
    const authRequestId = locationOf(entered.res).searchParams.get("authRequest") as string;
    await finish(t, login, authRequestId, await signIn(t, login, alice));
    const polls = await Promise.all(
      Array.from({ length: 8 }, () =>
        postForm(t, "/oauth/v2/token", {
          grant_type: "urn:ietf:params:oauth:grant-type:device_code",
          device_code: da.body.device_code as string,
          client_id: tv.clientId,
        }),
      ),
    );
    const issued = polls.filter((p) => p.status === 200);
    expect(issued).toHaveLength(1);
    expect(polls.filter((p) => p.status !== 200).every((p) => p.status === 400 && ["invalid_grant", "slow_down"].includes(p.body.error as string))).toBe(true);
  }, 60_000);
});

describe("Invitation guesses while an expired password reset code is kept (last: moves the clock)", () => {
  it("count against the invitation: after five the right code is refused", async () => {
    const { id: userId } = await admin(t, "CreateUser", {
      organizationId: orgId,
      username: "ar-invite-guess",
      human: { profile: { givenName: "In", familyName: "Vitee" }, email: { email: "ar-invite-guess@example.com" } },
    });
    const { inviteCode } = await admin(t, "CreateInviteCode", { userId, returnCode: {} });
    await admin(t, "PasswordReset", { userId, returnCode: {} });
    // The reset code expires after an hour; the invitation lives 72.
    t.advanceClock(61 * 60_000);
    const setPassword = (code: string) =>
      call(t, "rest", t.pat, "SetPassword", { userId, newPassword: { password: "Guessed-Passw0rd!" }, verificationCode: code });
    for (let i = 0; i < 5; i++) {
      const reply = await setPassword(`WRONG${String(i).padStart(3, "2")}`);
      expect({ i, code: reply.code, reason: reply.reason }).toEqual({ i, code: "invalid_argument", reason: "Errors.User.Code.Invalid" });
    }
    const right = await setPassword(inviteCode);
    // The invitation is gone; what is left to check it against is the expired reset code.
    expect([right.code, right.reason]).toEqual(["failed_precondition", "Errors.User.Code.Expired"]);
  }, 60_000);
});
