// The findings of the outside attack run against the sign-in (issue 23), through the real pages and endpoints: a
// factor enrolled mid-sign-in, prompt=none answered from an ID token instead of the browser's session, the login name
// step telling who exists, and sessions piled up for any user without a proof.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { setLogin, totpCode } from "../support/authn.js";
import { createHuman, createMachine, createOrg, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { authorizeGet, codeFlow, discover, issuerOf, loginClient, oidcApp, postForm, visit } from "../support/oidc.js";
import { admin, call, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { locationOf, signInThroughPages, Visitor } from "../support/visitor.js";
import { SoftAuthenticator } from "../support/webauthn.js";

let t: TestServer;
let orgId: string;
let domain: string;
let app: { appId: string; clientId: string; clientSecret?: string };
const REDIRECT = "https://rp.example.com/cb";
const pathOf = (u: URL) => u.pathname + u.search;
/** The server's clock in ms (tests move it). */
const serverNow = () => t.server.tokens.clock().getTime();

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Policy Project");
  app = await oidcApp(t, projectId, "policy-rp", { grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"] });
}, 120_000);
afterAll(() => t?.stop());

const sessions = (userId: string) => t.server.db.prisma.session.count({ where: { userId } });
const passkeys = (userId: string) => t.server.db.prisma.passkey.count({ where: { userId } });
const totps = (userId: string) => t.server.db.prisma.userTotp.count({ where: { userId } });

async function authRequest(extra: Record<string, string> = {}): Promise<string> {
  const res = await authorizeGet(t, { client_id: app.clientId, redirect_uri: REDIRECT, response_type: "code", scope: "openid", state: "s", ...extra });
  return locationOf(res).searchParams.get("authRequest") as string;
}

describe("finding 1: no factor enrolled by a sign-in that has not satisfied the account", () => {
  it("after the password alone, the set-up pages of a user with a second factor register nothing and go on to the second factor", async () => {
    const id = await createHuman(t, orgId, "enrol-victim");
    const { secret } = await admin(t, "RegisterTOTP", { userId: id });
    await admin(t, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret) });
    const v = new Visitor(t);
    const ar = await authRequest();
    const { session, next } = await signInThroughPages(v, `enrol-victim@${domain}`, PASSWORD, { authRequest: ar });
    expect(next.pathname).toBe("/ui/login/mfa");
    for (const path of ["/ui/login/mfa/setup", "/ui/login/mfa/setup/passkey", "/ui/login/mfa/setup/totp"]) {
      const page = await v.get(`${path}?authRequest=${ar}&session=${session}`);
      expect({ path, status: page.res.status, to: locationOf(page.res).pathname }).toEqual({ path, status: 302, to: "/ui/login/mfa" });
    }
    // The CSRF secret changed with the password: a page of the sign-in's next step gives this browser's new token.
    await v.get(`/ui/login/mfa/totp?authRequest=${ar}&session=${session}`);
    const posted = await v.post("/ui/login/mfa/setup/passkey", { authRequest: ar, session, passkeyId: "x", credential: "{}", name: "attacker" });
    expect(posted.res.status).toBe(303);
    expect(locationOf(posted.res).pathname).toBe("/ui/login/mfa");
    expect(await passkeys(id)).toBe(0);
    expect(await totps(id)).toBe(1);
  });

  it("the set-up step exists only when MFA is forced and the user has no second factor", async () => {
    const org = await createOrg(t, "Forced MFA");
    await setLogin(t, org, { forceMfa: true });
    const orgDomain = (await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain;
    const id = await createHuman(t, org, "forced");
    const v = new Visitor(t);
    const { session, next } = await signInThroughPages(v, `forced@${orgDomain}`, PASSWORD);
    expect(next.pathname).toBe("/ui/login/mfa/setup");
    const page = await v.get(`/ui/login/mfa/setup/totp?session=${session}`);
    expect(page.res.status).toBe(200);
    expect(await totps(id)).toBe(1);
    // Without forced MFA the same user is signed in after the password: no set-up step.
    const free = await createHuman(t, orgId, "not-forced");
    const w = new Visitor(t);
    const done = await signInThroughPages(w, `not-forced@${domain}`, PASSWORD);
    expect(done.next.pathname).toBe("/ui/login/account");
    expect(await totps(free)).toBe(0);
  });
});

describe("finding 3: prompt=none answers only from this browser's session", () => {
  it("an id_token_hint without the browser's session gets login_required, also an expired one, and mints nothing", async () => {
    const client = await loginClient(t, orgId, "policy-login-client");
    const config = await discover(t, app.clientId, app.clientSecret as string);
    await createHuman(t, orgId, "hinted");
    const { tokens } = await codeFlow(t, config, client, `hinted@${domain}`, { scope: "openid offline_access" });
    const hint = tokens.id_token as string;
    const res = await authorizeGet(t, {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: `openid offline_access urn:svc:iam:org:project:id:svc:aud`,
      state: "s",
      prompt: "none",
      id_token_hint: hint,
    });
    // No code at the authorization endpoint: the login UI answers, from a browser that holds no session.
    const login = locationOf(res);
    expect(login.pathname).toBe("/ui/login/login");
    const answer = await visit(t, login);
    const back = locationOf(answer);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get("error")).toBe("login_required");
    expect(back.searchParams.get("code")).toBeNull();
    // The hint is no longer fresh: the same.
    t.advanceClock(24 * 3600_000);
    const later = await visit(
      t,
      locationOf(
        await authorizeGet(t, {
          client_id: app.clientId,
          redirect_uri: REDIRECT,
          response_type: "code",
          scope: "openid",
          state: "s",
          prompt: "none",
          id_token_hint: hint,
        }),
      ),
    );
    expect(locationOf(later).searchParams.get("error")).toBe("login_required");
  });

  it("with the browser's session, a silent sign-in gets a code but never a refresh token, and a hint of another user selects nothing", async () => {
    await createHuman(t, orgId, "silent");
    const v = new Visitor(t);
    await signInThroughPages(v, `silent@${domain}`, PASSWORD);
    const ar = await authorizeGet(t, {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: "openid offline_access",
      state: "s",
      prompt: "none",
    });
    const answer = await v.get(pathOf(locationOf(ar)));
    const back = locationOf(answer.res);
    const code = back.searchParams.get("code");
    expect(code).toBeTruthy();
    const redeemed = await postForm(t, "/oauth/v2/token", {
      grant_type: "authorization_code",
      code: code as string,
      redirect_uri: REDIRECT,
      client_id: app.clientId,
      client_secret: app.clientSecret ?? "",
    });
    expect(redeemed.status).toBe(200);
    expect(redeemed.body.refresh_token).toBeUndefined();
    // A hint naming another user: this browser has no session of that user.
    const client = await loginClient(t, orgId, "policy-login-client-2");
    const config = await discover(t, app.clientId, app.clientSecret as string);
    await createHuman(t, orgId, "someone-else");
    const other = (await codeFlow(t, config, client, `someone-else@${domain}`)).tokens.id_token as string;
    const hinted = await authorizeGet(t, {
      client_id: app.clientId,
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: "openid",
      state: "s",
      prompt: "none",
      id_token_hint: other,
    });
    const refused = await v.get(pathOf(locationOf(hinted)));
    expect(locationOf(refused.res).searchParams.get("error")).toBe("login_required");
  });
});

describe("finding 4 and 5: the login name tells nothing, and makes no session", () => {
  it("answers every name alike, before any password, and stores no session", async () => {
    const known = await createHuman(t, orgId, "known-human");
    const machineId = await createMachine(t, orgId, "known-machine");
    const locked = await createHuman(t, orgId, "locked-human");
    await admin(t, "LockUser", { userId: locked });
    const inactive = await createHuman(t, orgId, "inactive-human");
    await admin(t, "DeactivateUser", { userId: inactive });
    const ar = await authRequest();
    const answers: unknown[] = [];
    for (const name of ["known-human", "nobody-here", "known-machine", "locked-human", "inactive-human"]) {
      const v = new Visitor(t);
      await v.get(`/ui/login/login?authRequest=${ar}`);
      const { res } = await v.post("/ui/login/login", { authRequest: ar, loginName: `${name}@${domain}` });
      const to = locationOf(res);
      answers.push({
        status: res.status,
        path: to.pathname,
        loginName: to.searchParams.get("loginName") === `${name}@${domain}`,
        cookie: res.headers.getSetCookie().length,
      });
      const page = await v.get(to.pathname + to.search);
      expect(page.res.status).toBe(200);
      expect(page.body).toContain('name="password"');
    }
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    for (const id of [known, machineId, locked, inactive]) expect(await sessions(id)).toBe(0);
  });

  it("a wrong password, an unknown name and a machine get the same answer; a session exists only after a right password", async () => {
    await createHuman(t, orgId, "pw-human");
    await createMachine(t, orgId, "pw-machine");
    const answers: unknown[] = [];
    for (const [name, password] of [
      ["pw-human", "Wrong-Passw0rd!"],
      ["nobody-at-all", PASSWORD],
      ["pw-machine", PASSWORD],
    ] as const) {
      const v = new Visitor(t);
      await v.get(`/ui/login/password?loginName=${name}@${domain}`);
      const { res, body } = await v.post("/ui/login/password", { loginName: `${name}@${domain}`, password });
      answers.push({ status: res.status, message: /role="alert"[^>]*>([^<]*)/.exec(body)?.[1] });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[1]).toEqual(answers[2]);
  });

  it("a passkey sign-in for a typed name makes a short-lived pending session, at most 20 per user", async () => {
    const id = await createHuman(t, orgId, "pending-target");
    // The user has a passkey (registered by an administrator with a software authenticator).
    const start = await admin(t, "RegisterPasskey", { userId: id });
    const credential = new SoftAuthenticator().register(start.publicKeyCredentialCreationOptions, { origin: new URL(issuerOf(t)).origin });
    await admin(t, "VerifyPasskeyRegistration", { userId: id, passkeyId: start.passkeyId, publicKeyCredential: credential, passkeyName: "Key" });
    const v = new Visitor(t);
    const first = await v.get(`/ui/login/passkey?loginName=pending-target@${domain}`);
    expect(first.res.status).toBe(200);
    const row = await t.server.db.prisma.session.findFirstOrThrow({ where: { userId: id } });
    expect((row.expiresAt as Date).getTime() - row.createdAt.getTime()).toBeLessThanOrEqual(10 * 60_000);
    // An unknown name gets the same page, and nothing is stored.
    const unknown = await v.get(`/ui/login/passkey?loginName=nobody-pending@${domain}`);
    expect(unknown.res.status).toBe(200);
    expect(unknown.body).toContain('id="webauthn-options"');
    // Past 20 waiting sessions the page stays the same (a refusal would tell the name exists); no more are stored.
    for (let i = 0; i < 25; i++) {
      const w = new Visitor(t);
      const page = await w.get(`/ui/login/passkey?loginName=pending-target@${domain}`);
      expect(page.res.status).toBe(200);
      expect(page.body).toContain('id="webauthn-options"');
    }
    expect(await sessions(id)).toBe(20);
  });
});

describe("the hosted login replaces the browser's CSRF secret at sign-in", () => {
  it("a form token learnt before the password does not post after it", async () => {
    await createHuman(t, orgId, "csrf-user");
    const v = new Visitor(t);
    await v.get("/ui/login/login");
    const before = v.csrf;
    const { session } = await signInThroughPages(v, `csrf-user@${domain}`, PASSWORD);
    const stale = await v.post("/ui/login/account/profile", { _csrf: before, session, givenName: "A", familyName: "B", displayName: "" });
    expect(stale.res.status).toBe(403);
  });
});

describe("finding 12: prompt=consent asks the user, records the answer, and the account page takes it back", () => {
  it("denied: access_denied; allowed: a code and the consent kept; revoked: the application's tokens end", async () => {
    const id = await createHuman(t, orgId, "consenter");
    const v = new Visitor(t);
    const { session } = await signInThroughPages(v, `consenter@${domain}`, PASSWORD);
    const ask = async () => {
      const start = await authorizeGet(t, {
        client_id: app.clientId,
        redirect_uri: REDIRECT,
        response_type: "code",
        scope: "openid offline_access",
        state: "s",
        prompt: "consent",
      });
      const login = await v.get(pathOf(locationOf(start)));
      const consent = locationOf(login.res);
      expect(consent.pathname).toBe("/ui/login/consent");
      const page = await v.get(pathOf(consent));
      expect(page.res.status).toBe(200);
      expect(page.body).toContain("policy-rp");
      expect(page.body).toContain("Stay connected while you are away");
      return consent.searchParams.get("authRequest") as string;
    };
    const denied = await v.post("/ui/login/consent", { authRequest: await ask(), session, decision: "deny" });
    expect(locationOf(denied.res).searchParams.get("error")).toBe("access_denied");
    expect(await t.server.db.prisma.userConsent.count({ where: { userId: id } })).toBe(0);

    const allowed = await v.post("/ui/login/consent", { authRequest: await ask(), session, decision: "allow" });
    const code = locationOf(allowed.res).searchParams.get("code") as string;
    expect(code).toBeTruthy();
    expect((await t.server.db.prisma.userConsent.findFirstOrThrow({ where: { userId: id } })).scopes).toEqual(["openid", "offline_access"]);
    const tokens = await postForm(t, "/oauth/v2/token", {
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: app.clientId,
      client_secret: app.clientSecret ?? "",
    });
    expect(tokens.body.refresh_token).toBeTruthy();

    const account = await v.get(`/ui/login/account?session=${session}`);
    expect(account.body).toContain("Applications you allowed");
    const revoked = await v.post("/ui/login/account/consent/revoke", { session, appId: app.appId });
    expect(revoked.res.status).toBe(200);
    expect(revoked.body).toContain("The application&#39;s access is revoked");
    expect(await t.server.db.prisma.userConsent.count({ where: { userId: id } })).toBe(0);
    const refresh = await postForm(t, "/oauth/v2/token", {
      grant_type: "refresh_token",
      refresh_token: tokens.body.refresh_token as string,
      client_id: app.clientId,
      client_secret: app.clientSecret ?? "",
    });
    expect([refresh.status, refresh.body.error]).toEqual([400, "invalid_grant"]);
  });
});

describe("finding 12: an application that requires consent asks each user once, and again only for new scopes", () => {
  it("the hosted login asks before the first code, not after; a new scope asks again; prompt=none answers consent_required", async () => {
    const projectId = await project(t, orgId, "Third Party Project");
    const third = await oidcApp(t, projectId, "third-party-rp", { consentRequired: true });
    expect((await admin(t, "GetApplication", { projectId, appId: third.appId })).app.oidc.consentRequired).toBe(true);
    const id = await createHuman(t, orgId, "third-party-user");
    const request = async (extra: Record<string, string> = {}) => {
      const res = await authorizeGet(t, { client_id: third.clientId, redirect_uri: REDIRECT, response_type: "code", scope: "openid", state: "s", ...extra });
      return locationOf(res).searchParams.get("authRequest") as string;
    };
    const v = new Visitor(t);
    const first = await request();
    const { session, next } = await signInThroughPages(v, `third-party-user@${domain}`, PASSWORD, { authRequest: first });
    expect(next.pathname).toBe("/ui/login/consent");
    expect((await v.get(pathOf(next))).body).toContain("third-party-rp");
    const allowed = await v.post("/ui/login/consent", { authRequest: first, session, decision: "allow" });
    expect(locationOf(allowed.res).searchParams.get("code")).toBeTruthy();
    expect((await t.server.db.prisma.userConsent.findFirstOrThrow({ where: { userId: id, appId: third.appId } })).scopes).toEqual(["openid"]);

    // Asked once: the next request of the same scopes gets its code without a page.
    const again = await v.get(`/ui/login/login?authRequest=${await request()}`);
    expect(locationOf(again.res).searchParams.get("code")).toBeTruthy();
    // A scope the user has not allowed yet asks again.
    const wider = await v.get(`/ui/login/login?authRequest=${await request({ scope: "openid email" })}`);
    expect(locationOf(wider.res).pathname).toBe("/ui/login/consent");
    // prompt=none cannot ask: consent_required (OIDC Core §3.1.2.6).
    const silent = await v.get(`/ui/login/login?authRequest=${await request({ scope: "openid email", prompt: "none" })}`);
    expect(locationOf(silent.res).searchParams.get("error")).toBe("consent_required");
    // The first-party application (no consentRequired) never asks.
    const own = await v.get(`/ui/login/login?authRequest=${await authRequest()}`);
    expect(locationOf(own.res).searchParams.get("code")).toBeTruthy();
  });

  it("a login UI of its own is refused Errors.Consent.Required until it finishes with consent_granted", async () => {
    const projectId = await project(t, orgId, "Third Party Project 2");
    const third = await oidcApp(t, projectId, "third-party-rp-2", { consentRequired: true });
    const id = await createHuman(t, orgId, "own-ui-user");
    const login = await loginClient(t, orgId, "consent-login-ui");
    const start = await authorizeGet(t, { client_id: third.clientId, redirect_uri: REDIRECT, response_type: "code", scope: "openid profile", state: "s" });
    const authRequestId = locationOf(start).searchParams.get("authRequest") as string;
    const s = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { userId: id }, password: { password: PASSWORD } } });
    const session = { sessionId: s.sessionId, sessionToken: s.sessionToken };
    const refused = await call(t, "rest", login.pat, "CreateCallback", { authRequestId, session });
    expect([refused.code, refused.reason]).toEqual(["failed_precondition", "Errors.Consent.Required"]);
    const done = await ok(t, "connect", login.pat, "CreateCallback", { authRequestId, session, consentGranted: true });
    expect(new URL(done.callbackUrl).searchParams.get("code")).toBeTruthy();
    expect((await t.server.db.prisma.userConsent.findFirstOrThrow({ where: { userId: id, appId: third.appId } })).scopes).toEqual(["openid", "profile"]);
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: "user.consent.granted" } });
    expect(events.map((e) => e.editorUserId)).toEqual([login.userId]);
  });
});

describe("SessionService tells a login UI of its own the next step, as the hosted login follows it", () => {
  it("first factor, the user's second factor, done; the set-up step when MFA is forced and the user has none", async () => {
    const client = await loginClient(t, orgId, "policy-steps-client");
    const id = await createHuman(t, orgId, "stepper");
    const { secret } = await admin(t, "RegisterTOTP", { userId: id });
    await admin(t, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret, serverNow()) });
    const step = async (s: { sessionId: string; sessionToken: string }) =>
      (await ok(t, "rest", client.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).session.nextStep;
    const made = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: id } } });
    expect(await step(made)).toEqual({ kind: "KIND_FIRST_FACTOR", factors: ["password", "passkey", "idp"] });
    const pw = await ok(t, "rest", client.pat, "SetSession", {
      sessionId: made.sessionId,
      sessionToken: made.sessionToken,
      checks: { password: { password: PASSWORD } },
    });
    const s = { sessionId: made.sessionId, sessionToken: pw.sessionToken };
    expect(await step(s)).toEqual({ kind: "KIND_SECOND_FACTOR", factors: ["totp"] });
    t.advanceClock(30_000);
    const both = await ok(t, "rest", client.pat, "SetSession", { ...s, checks: { totp: { code: totpCode(secret, serverNow()) } } });
    expect(await step({ sessionId: s.sessionId, sessionToken: both.sessionToken })).toEqual({ kind: "KIND_DONE" });

    const forcedOrg = await createOrg(t, "Forced Steps");
    await setLogin(t, forcedOrg, { forceMfa: true });
    const forced = await createHuman(t, forcedOrg, "forced-stepper");
    const f = await ok(t, "rest", client.pat, "CreateSession", { checks: { user: { userId: forced }, password: { password: PASSWORD } } });
    expect(await step(f)).toEqual({ kind: "KIND_SET_UP_SECOND_FACTOR", factors: ["totp", "u2f"] });
    // At that step the session it presents lets the login client set up a TOTP, which then completes the sign-in.
    const reg = await ok(t, "rest", client.pat, "RegisterTOTP", { userId: forced, session: { sessionId: f.sessionId, sessionToken: f.sessionToken } });
    await ok(t, "rest", client.pat, "VerifyTOTPRegistration", {
      userId: forced,
      code: totpCode(reg.secret, serverNow()),
      session: { sessionId: f.sessionId, sessionToken: f.sessionToken },
    });
    expect(await step(f)).toEqual({ kind: "KIND_SECOND_FACTOR", factors: ["totp"] });
  });
});

describe("a password change ends the sessions made with the old one", () => {
  it("the other browser's session and the tokens issued from another session end; the changing session stays", async () => {
    const id = await createHuman(t, orgId, "changer");
    const a = new Visitor(t);
    const b = new Visitor(t);
    const { session: sa } = await signInThroughPages(a, `changer@${domain}`, PASSWORD);
    const { session: sb } = await signInThroughPages(b, `changer@${domain}`, PASSWORD);
    const client = await loginClient(t, orgId, "changer-client");
    const config = await discover(t, app.clientId, app.clientSecret as string);
    const { tokens } = await codeFlow(t, config, client, `changer@${domain}`, { scope: "openid offline_access" });
    await a.get(`/ui/login/account?session=${sa}`);
    const changed = await a.post("/ui/login/account/password", {
      session: sa,
      currentPassword: PASSWORD,
      newPassword: "Changed-Passw0rd!",
      repeatPassword: "Changed-Passw0rd!",
    });
    expect(changed.res.status).toBe(200);
    expect(changed.body).toContain("Your password is changed");
    expect((await t.server.db.prisma.session.findMany({ where: { userId: id }, select: { id: true } })).map((r) => r.id)).toEqual([sa]);
    const other = await b.get(`/ui/login/account?session=${sb}`);
    expect(locationOf(other.res).pathname).toBe("/ui/login/login");
    const refresh = await postForm(t, "/oauth/v2/token", {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
      client_id: app.clientId,
      client_secret: app.clientSecret ?? "",
    });
    expect([refresh.status, refresh.body.error]).toEqual([400, "invalid_grant"]);
    expect((await a.get(`/ui/login/account?session=${sa}`)).res.status).toBe(200);
  });
});
