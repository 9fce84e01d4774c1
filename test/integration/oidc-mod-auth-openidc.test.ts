// An independent relying party: Apache's mod_auth_openidc protects /protected/ with svc as its OpenID Provider. It
// reads svc's discovery document, sends the browser to /oauth/v2/authorize (PKCE S256), takes the code at its
// redirect URI, redeems it with client_secret_basic and verifies the ID token (signature over the JWKS, iss, aud,
// exp, nonce, at_hash) before it serves the page. The test plays the browser (a cookie jar, redirects followed by
// hand) and the login UI (SessionService + CreateCallback).
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ApacheRp, apacheAvailable, freePort, startApacheRp } from "../support/apache.js";
import { createHuman, defaultOrgId, machine, PASSWORD, project } from "../support/fixtures.js";
import { admin, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let rp: ApacheRp;
let loginPat: string;
let userId: string;
let clientId: string;

interface Page {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A browser's top-level navigations with a cookie jar, one connection each, read whole. Not fetch: fetch always
 * says Sec-Fetch-Mode: cors, and mod_auth_openidc answers 401 instead of redirecting anything but a navigation. Not
 * node:http either: on an error page Apache appends a second response to the first, which node's strict parser
 * refuses.
 */
class Browser {
  #cookies = new Map<string, string>();

  async get(url: string): Promise<Page> {
    const u = new URL(url);
    const cookie = [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const request = [
      `GET ${u.pathname}${u.search} HTTP/1.1`,
      `Host: ${u.host}`,
      "Accept: text/html,application/xhtml+xml",
      "Sec-Fetch-Mode: navigate",
      "Sec-Fetch-Dest: document",
      ...(cookie ? [`Cookie: ${cookie}`] : []),
      "Connection: close",
    ].join("\r\n");
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(u.port), u.hostname, () => sock.write(`${request}\r\n\r\n`));
      let out = "";
      sock.setEncoding("utf8");
      sock.on("data", (d) => {
        out += d;
      });
      sock.on("end", () => resolve(out));
      sock.on("error", reject);
    });
    const split = raw.indexOf("\r\n\r\n");
    const [statusLine, ...lines] = raw.slice(0, split).split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === "set-cookie") {
        const [pair] = value.split(";");
        const eq = pair.indexOf("=");
        this.#cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
      }
      headers[name] = value;
    }
    return { status: Number(statusLine?.split(" ")[1]), headers, body: raw.slice(split + 4) };
  }
}

async function location(res: Page): Promise<string> {
  const l = res.headers.location;
  if (!l) throw new Error(`expected a redirect, got ${res.status}: ${res.body.slice(0, 300)}\n${(await rp.errorLog()).slice(-1500)}`);
  return l;
}

beforeAll(async () => {
  if (!apacheAvailable()) throw new Error("apache2 with mod_auth_openidc is not installed (apt-get install apache2 libapache2-mod-auth-openidc; .ci/run does)");
  const port = await freePort();
  // Apache is on loopback: svc may POST its back-channel logout tokens there (SVC_ACTIONS_ALLOW_PRIVATE).
  t = await startTestServer({
    SVC_PORT: String(port),
    SVC_EXTERNAL_URL: `http://127.0.0.1:${port}`,
    SVC_ACTIONS_ALLOW_PRIVATE: "true",
    SVC_ACTIONS_DELIVERY_BACKOFF_MS: "250",
  });
  const orgId = await defaultOrgId(t);
  const login = await machine(t, orgId, "apache-login-ui");
  await admin(t, "AddInstanceMember", { userId: login.userId, roles: ["IAM_LOGIN_CLIENT"] });
  loginPat = login.pat;
  userId = await createHuman(t, orgId, "apache-user");
  const projectId = await project(t, orgId, "Apache protected site");
  const rpPort = await freePort();
  const app = await admin(t, "CreateApplication", {
    projectId,
    name: "apache",
    oidc: {
      redirectUris: [`http://127.0.0.1:${rpPort}/protected/redirect_uri`],
      grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
      responseTypes: ["OIDC_RESPONSE_TYPE_CODE"],
      appType: "OIDC_APP_TYPE_WEB",
      authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC",
      devMode: true,
      idTokenUserinfoAssertion: true,
      // mod_auth_openidc takes back-channel logout tokens at its redirect URI (?logout=backchannel).
      backchannelLogoutUri: `http://127.0.0.1:${rpPort}/protected/redirect_uri?logout=backchannel`,
      backchannelLogoutSessionRequired: true,
    },
  });
  clientId = app.clientId;
  rp = await startApacheRp({
    port: rpPort,
    metadataUrl: `${t.url}/.well-known/openid-configuration`,
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    scope: "openid email profile",
  });
}, 120_000);

afterAll(async () => {
  await rp?.stop();
  await t?.stop();
});

describe("mod_auth_openidc against svc", () => {
  it("signs a user in through the authorization code flow and serves the protected page with its claims", async () => {
    const browser = new Browser();
    // The protected page sends the browser to svc's authorization endpoint ...
    const authorize = await location(await browser.get(`${rp.url}/protected/`));
    const auth = new URL(authorize);
    expect(`${auth.origin}${auth.pathname}`).toBe(`${t.url}/oauth/v2/authorize`);
    expect(auth.searchParams.get("client_id")).toBe(clientId);
    expect(auth.searchParams.get("code_challenge_method")).toBe("S256");
    // ... which sends it on to the login UI with the auth request.
    const toLogin = new URL(await location(await browser.get(authorize)));
    const authRequest = toLogin.searchParams.get("authRequest");
    expect(authRequest).toEqual(expect.any(String));
    // The login UI signs the user in and finishes the auth request.
    const session = await ok(t, "rest", loginPat, "CreateSession", { checks: { user: { userId }, password: { password: PASSWORD } } });
    const { callbackUrl } = await ok(t, "rest", loginPat, "CreateCallback", {
      authRequestId: authRequest,
      session: { sessionId: session.sessionId, sessionToken: session.sessionToken },
    });
    expect(callbackUrl.startsWith(rp.redirectUri)).toBe(true);
    // mod_auth_openidc redeems the code, verifies the ID token and sends the browser back to the page.
    const back = await browser.get(callbackUrl);
    if (back.status !== 302) throw new Error(`redirect URI answered ${back.status}: ${(await rp.errorLog()).slice(-3000)}`);
    const page = await browser.get(new URL(await location(back), rp.url).toString());
    expect(page.status).toBe(200);
    expect(page.body).toContain("protected page");
    expect(page.headers["x-oidc-sub"]).toBe(userId);
    expect(page.headers["x-oidc-email"]).toBe("apache-user@example.com");
    // The session cookie keeps the user signed in without another round trip to svc.
    expect((await browser.get(`${rp.url}/protected/`)).status).toBe(200);
  });

  it("ends its own session when svc's session ends: the back-channel logout token reaches it (issue 29)", async () => {
    const browser = new Browser();
    const toLogin = new URL(await location(await browser.get(await location(await browser.get(`${rp.url}/protected/`)))));
    const session = await ok(t, "rest", loginPat, "CreateSession", { checks: { user: { userId }, password: { password: PASSWORD } } });
    const { callbackUrl } = await ok(t, "rest", loginPat, "CreateCallback", {
      authRequestId: toLogin.searchParams.get("authRequest"),
      session: { sessionId: session.sessionId, sessionToken: session.sessionToken },
    });
    const back = await browser.get(callbackUrl);
    expect(back.status).toBe(302);
    expect((await browser.get(`${rp.url}/protected/`)).status).toBe(200);

    await ok(t, "rest", loginPat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
    // The outbox delivers the logout token; mod_auth_openidc answers 200 once it has ended the session the sid names.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await t.server.db.prisma.delivery.findMany({ where: { eventType: "oidc.backchannel_logout" } });
      const row = rows.find((r) => (r.payload as { sid?: string }).sid === session.sessionId);
      if (row?.state === "delivered") break;
      if (Date.now() > deadline) throw new Error(`logout token not delivered: ${JSON.stringify(row)}\n${(await rp.errorLog()).slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The same browser, with its session cookie, is sent to sign in again.
    const after = await browser.get(`${rp.url}/protected/`);
    expect(after.status).toBe(302);
    const again = new URL(await location(after));
    expect(`${again.origin}${again.pathname}`).toBe(`${t.url}/oauth/v2/authorize`);
  });

  it("refuses a logout token for another audience, or with a nonce, and keeps its session (issue 29)", async () => {
    const browser = new Browser();
    const toLogin = new URL(await location(await browser.get(await location(await browser.get(`${rp.url}/protected/`)))));
    const session = await ok(t, "rest", loginPat, "CreateSession", { checks: { user: { userId }, password: { password: PASSWORD } } });
    const { callbackUrl } = await ok(t, "rest", loginPat, "CreateCallback", {
      authRequestId: toLogin.searchParams.get("authRequest"),
      session: { sessionId: session.sessionId, sessionToken: session.sessionToken },
    });
    expect((await browser.get(callbackUrl)).status).toBe(302);
    expect((await browser.get(`${rp.url}/protected/`)).status).toBe(200);
    // Signed by svc's own key, as svc signs its logout tokens: only the claims are wrong.
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: t.server.tokens.issuer,
      aud: clientId,
      iat: now,
      exp: now + 120,
      jti: `jti-${now}`,
      events: { "http://schemas.openid.net/event/backchannel-logout": {} },
      sub: userId,
      sid: session.sessionId,
    };
    const post = async (c: Record<string, unknown>) => {
      const token = await t.server.tokens.keys.sign(c, "logout+jwt", "RS256");
      const res = await fetch(`${rp.redirectUri}?logout=backchannel`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ logout_token: token }),
      });
      return res.status;
    };
    expect(await post({ ...claims, aud: "another-client" })).toBe(400);
    expect(await post({ ...claims, jti: `${claims.jti}-n`, nonce: "n-1" })).toBe(400);
    expect((await browser.get(`${rp.url}/protected/`)).status).toBe(200);
    // The same claims, right: the session ends (the refusals above were for the claims, not the key or the request).
    expect(await post({ ...claims, jti: `${claims.jti}-ok` })).toBe(200);
    expect((await browser.get(`${rp.url}/protected/`)).status).toBe(302);
  });

  it("refuses the code a second time: a replayed callback gets no page", async () => {
    const browser = new Browser();
    const toLogin = new URL(await location(await browser.get(await location(await browser.get(`${rp.url}/protected/`)))));
    const session = await ok(t, "rest", loginPat, "CreateSession", { checks: { user: { userId }, password: { password: PASSWORD } } });
    const { callbackUrl } = await ok(t, "rest", loginPat, "CreateCallback", {
      authRequestId: toLogin.searchParams.get("authRequest"),
      session: { sessionId: session.sessionId, sessionToken: session.sessionToken },
    });
    expect((await browser.get(callbackUrl)).status).toBe(302);
    // Another browser replaying the same callback: its state does not match, and the code is spent.
    const replay = await new Browser().get(callbackUrl);
    expect(replay.status).not.toBe(200);
    expect(replay.headers["x-oidc-sub"]).not.toBe(userId);
  });

  it("gets an error, not a page, when the login UI denies access", async () => {
    const browser = new Browser();
    const toLogin = new URL(await location(await browser.get(await location(await browser.get(`${rp.url}/protected/`)))));
    const { callbackUrl } = await ok(t, "rest", loginPat, "CreateCallback", {
      authRequestId: toLogin.searchParams.get("authRequest"),
      error: { error: "ACCESS_DENIED", errorDescription: "the user cancelled" },
    });
    expect(new URL(callbackUrl).searchParams.get("error")).toBe("access_denied");
    // mod_auth_openidc shows an error page, never the protected page. (Version 2.4.12 takes the `iss` that RFC 9207
    // puts into error responses too for a third-party-initiated login, so its page does not repeat svc's error.)
    const res = await browser.get(callbackUrl);
    expect(res.body).toContain("Error");
    expect(res.body).not.toContain("protected page");
    expect(res.headers["x-oidc-sub"] ?? "(null)").toBe("(null)");
  });
});
