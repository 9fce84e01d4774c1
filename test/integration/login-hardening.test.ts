// The hosted login against what browsers and attackers can send, without a browser: malformed and oversized forms,
// missing, forged and other browsers' CSRF tokens, unknown and finished auth requests, replayed forms, HTTP/2, and
// the proxy headers (believed only with SVC_TRUST_PROXY). Never a 5xx; always the page that says what happened.
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { h2Request } from "../support/http2.js";
import { authorizeGet, authRequestOf, loginClient, oidcApp } from "../support/oidc.js";
import { admin, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let domain: string;
let clientId: string;

beforeAll(async () => {
  t = await startTestServer({ SVC_TRUST_PROXY: "loopback" });
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const projectId = await project(t, orgId, "Hardening Project");
  clientId = (await oidcApp(t, projectId, "hardening-rp")).clientId;
  await createHuman(t, orgId, "hard-ivan");
}, 120_000);
afterAll(() => t?.stop());

/** A browser without a browser: its cookie and the CSRF token of the last page. */
class Visitor {
  cookie = "";
  csrf = "";
  constructor(private readonly headers: Record<string, string> = {}) {}

  private keep(res: Response): void {
    const set = res.headers.getSetCookie().find((c) => c.startsWith("svc-login="));
    if (set) this.cookie = set.slice(0, set.indexOf(";"));
  }

  async get(path: string): Promise<{ res: Response; body: string }> {
    const res = await fetch(`${t.url}${path}`, { redirect: "manual", headers: { cookie: this.cookie, ...this.headers } });
    this.keep(res);
    const body = await res.text();
    const m = /name="_csrf" value="([^"]+)"/.exec(body);
    if (m) this.csrf = m[1] as string;
    return { res, body };
  }

  async post(path: string, form: Record<string, string> | string, headers: Record<string, string> = {}): Promise<{ res: Response; body: string }> {
    const body = typeof form === "string" ? form : new URLSearchParams({ _csrf: this.csrf, ...form }).toString();
    const res = await fetch(`${t.url}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie, ...this.headers, ...headers },
      body,
    });
    this.keep(res);
    return { res, body: await res.text() };
  }
}

async function newAuthRequest(): Promise<string> {
  return authRequestOf(
    await authorizeGet(t, { client_id: clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid", state: "s" }),
  );
}

/** ivan's newest session. */
const newestSession = async () =>
  (await t.server.db.prisma.session.findFirstOrThrow({ where: { user: { username: "hard-ivan" } }, orderBy: { createdAt: "desc" } })).id;

/** Signs ivan in through the pages (the login name, then the password page for it); the session the password made. */
async function signIn(v: Visitor, authRequest: string): Promise<{ session: string; callback: string }> {
  await v.get(`/ui/login/login?authRequest=${authRequest}`);
  const loginName = `hard-ivan@${domain}`;
  const named = await v.post("/ui/login/login", { authRequest, loginName });
  expect(named.res.status).toBe(303);
  await v.get(`/ui/login/password?authRequest=${authRequest}&loginName=${encodeURIComponent(loginName)}`);
  const done = await v.post("/ui/login/password", { authRequest, loginName, password: PASSWORD });
  expect(done.res.status).toBe(303);
  return { session: await newestSession(), callback: done.res.headers.get("location") as string };
}

describe("forms a browser should never send", () => {
  it("refuses a missing, forged or other browser's CSRF token with the error page", async () => {
    const authRequest = await newAuthRequest();
    const mine = new Visitor();
    const theirs = new Visitor();
    await mine.get(`/ui/login/login?authRequest=${authRequest}`);
    await theirs.get(`/ui/login/login?authRequest=${authRequest}`);
    for (const csrf of ["", "forged", theirs.csrf]) {
      const { res, body } = await mine.post("/ui/login/login", `_csrf=${encodeURIComponent(csrf)}&authRequest=${authRequest}&loginName=x`);
      expect(res.status).toBe(403);
      expect(body).toContain("Your session on this page expired");
    }
    // Without any cookie: the same.
    const { res } = await new Visitor().post("/ui/login/login", { _csrf: mine.csrf, loginName: "x" });
    expect(res.status).toBe(403);
  });

  it("answers malformed, oversized and odd bodies with a 4xx page, on every form", async () => {
    const v = new Visitor();
    await v.get("/ui/login/login");
    const forms = [
      "/ui/login/login",
      "/ui/login/password",
      "/ui/login/accounts",
      "/ui/login/passkey",
      "/ui/login/mfa/u2f",
      "/ui/login/mfa/totp",
      "/ui/login/mfa/email",
      "/ui/login/mfa/email/send",
      "/ui/login/logout",
      "/ui/login/nowhere",
    ];
    const bodies: [string, Record<string, string>][] = [
      [`_csrf=${v.csrf}&loginName=%E0%A4%A`, {}],
      [`_csrf=${v.csrf}&session=a&session=b&loginName=x&loginName=y&password=1&password=2&credential={`, {}],
      [`_csrf=${v.csrf}&${"x=1&".repeat(500)}`, {}],
      [`_csrf=${v.csrf}&loginName=${"a".repeat(70_000)}`, {}],
      [JSON.stringify({ _csrf: v.csrf, loginName: "x" }), { "content-type": "application/json" }],
      [`_csrf=${v.csrf}&loginName=x`, { "content-type": "application/x-www-form-urlencoded; charset=klingon" }],
      [`_csrf=${v.csrf}&session=${"x".repeat(300)}&authRequest=%00%01`, {}],
      [`_csrf=${v.csrf}&credential=${encodeURIComponent('{"id":"x","response":{}}')}&session=nope`, {}],
    ];
    for (const path of forms) {
      for (const [body, headers] of bodies) {
        const { res, body: page } = await v.post(path, body, headers);
        expect(res.status).toBeLessThan(500);
        if (res.status !== 303) expect(page).toMatch(/<h1>/);
      }
    }
  });

  it("answers unknown, finished and expired auth requests with their own page", async () => {
    const v = new Visitor();
    expect((await v.get("/ui/login/login?authRequest=nope")).res.status).toBe(404);
    expect((await v.get(`/ui/login/login?authRequest=${"x".repeat(500)}`)).res.status).toBe(404);
    const authRequest = await newAuthRequest();
    const { callback } = await signIn(v, authRequest);
    expect(callback).toMatch(/^https:\/\/rp\.example\.com\/cb\?code=/);
    const finished = await new Visitor().get(`/ui/login/login?authRequest=${authRequest}`);
    expect(finished.res.status).toBe(409);
    expect(finished.body).toContain("This sign-in is already done");
    const later = await newAuthRequest();
    t.advanceClock(11 * 60_000);
    const expired = await new Visitor().get(`/ui/login/login?authRequest=${later}`);
    expect(expired.res.status).toBe(410);
    expect(expired.body).toContain("This sign-in has expired");
  });

  it("does not let a replayed password form sign in again on an old session token", async () => {
    const v = new Visitor();
    const first = await newAuthRequest();
    const oldCookie = v.cookie;
    await v.get(`/ui/login/login?authRequest=${first}`);
    const before = v.cookie;
    const { session } = await signIn(v, first);
    // The same form again (with the browser's token after the sign-in): its auth request is done.
    await v.get("/ui/login/login");
    const again = await v.post("/ui/login/password", { authRequest: first, session, password: PASSWORD });
    expect(again.res.status).toBe(409);
    // Replayed for a new auth request with the cookie from before the password step: that cookie holds no session
    // (none exists before a factor succeeded), so the sign-in starts over.
    const second = await newAuthRequest();
    const after = v.csrf;
    v.cookie = before;
    const replay = await v.post("/ui/login/password", { authRequest: second, session, password: PASSWORD });
    expect(replay.res.status).toBe(403);
    await v.get(`/ui/login/login?authRequest=${second}`);
    const retry = await v.post("/ui/login/password", { authRequest: second, session, password: PASSWORD });
    expect(retry.res.status).toBe(303);
    expect(retry.res.headers.get("location")).toContain("/ui/login/login");
    expect(after).not.toBe(v.csrf);
    expect(oldCookie).toBe("");
  });
});

describe("whose settings apply", () => {
  it("uses the default organization's login settings before the organization is known (registration goes there)", async () => {
    await admin(t, "SetLoginSettings", {
      organizationId: orgId,
      settings: { allowUsernamePassword: true, allowRegister: true, allowExternalIdp: true, passkeysAllowed: true },
    });
    try {
      const { body } = await new Visitor().get(`/ui/login/login?authRequest=${await newAuthRequest()}`);
      expect(body).toContain("/ui/login/register");
    } finally {
      await admin(t, "ResetLoginSettings", { organizationId: orgId });
    }
  });
});

describe("transport", () => {
  it("serves the pages over HTTP/1.1 only: an h2c request is refused without reaching Express", async () => {
    const client = http2.connect(t.url);
    try {
      const answer = await h2Request(client, { ":path": "/ui/login/login", ":method": "GET" });
      expect(answer.status).toBe(505);
    } finally {
      client.close();
    }
  });

  it("believes X-Forwarded-For from a trusted proxy (SVC_TRUST_PROXY=loopback) for the session's address", async () => {
    const v = new Visitor({ "x-forwarded-for": "203.0.113.7" });
    const authRequest = await newAuthRequest();
    const { session } = await signIn(v, authRequest);
    const login = await loginClient(t, orgId, `hard-login-${Date.now()}`);
    const got = await ok(t, "rest", login.pat, "GetSession", { sessionId: session });
    expect(got.session.userAgent.ip).toBe("203.0.113.7");
  });

  it("ignores X-Forwarded-For when no proxy is trusted", async () => {
    const other = await startTestServer();
    try {
      const res = await fetch(`${other.url}/ui/login/login`, { headers: { "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.9" } });
      expect(res.status).toBe(200);
      // Not https: the cookie is the plain one, without Secure.
      const set = res.headers.getSetCookie()[0] as string;
      expect(set.startsWith("svc-login=")).toBe(true);
      expect(set).not.toContain("Secure");
    } finally {
      await other.stop();
    }
  });

  it("uses a __Host- Secure cookie when the external URL is https", async () => {
    const tls = await startTestServer({ SVC_EXTERNAL_URL: "https://login.example.com" });
    try {
      const res = await fetch(`${tls.url}/ui/login/login`);
      const set = res.headers.getSetCookie()[0] as string;
      expect(set).toMatch(/^__Host-svc-login=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=\d+$/);
      expect(await res.text()).toContain('action="https://login.example.com/ui/login/login"');
    } finally {
      await tls.stop();
    }
  });
});
