// Issue 23, finding 13 (d): an application's login base URL — where /oauth/v2/authorize sends its users with the auth
// request's id — may only name the instance's own origins (SVC_EXTERNAL_URL's, SVC_LOGIN_URL's) or one that
// SVC_LOGIN_UI_ALLOWED_ORIGINS lists: an ORG_OWNER cannot point its users' sign-ins at a foreign site.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createOrg, machine, project } from "../support/fixtures.js";
import { authorizeGet, oidcApp } from "../support/oidc.js";
import { fails, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let projectId: string;
let ownerPat: string;

const oidcConfig = (loginBaseUrl: string) => ({
  redirectUris: ["https://rp.example.com/cb"],
  grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"],
  loginBaseUrl,
});

beforeAll(async () => {
  t = await startTestServer({ SVC_LOGIN_UI_ALLOWED_ORIGINS: "https://login.example.com, https://auth.example.org:8443" });
  orgId = await createOrg(t, "Login URL Org");
  projectId = await project(t, orgId, "Login URL Project");
  // An ORG_OWNER of that organization (and of nothing else).
  ownerPat = (await machine(t, orgId, "login-url-owner", ["ORG_OWNER"])).pat;
}, 120_000);
afterAll(() => t?.stop());

describe("finding 13d: an app's login base URL", () => {
  it("refuses a foreign origin, on create and on update", async () => {
    for (const foreign of ["https://evil.example.net/login", "https://login.example.com.evil.example.net/", "https://auth.example.org/login"]) {
      await fails(
        t,
        "rest",
        ownerPat,
        "CreateApplication",
        { projectId, name: `foreign ${foreign}`, oidc: oidcConfig(foreign) },
        "invalid_argument",
        "Errors.App.LoginBaseUrl.NotAllowed",
      );
    }
    const app = await ok(t, "rest", ownerPat, "CreateApplication", { projectId, name: "plain", oidc: oidcConfig("") });
    await fails(
      t,
      "connect",
      ownerPat,
      "UpdateApplication",
      { projectId, appId: app.appId, oidc: oidcConfig("https://evil.example.net/login") },
      "invalid_argument",
      "Errors.App.LoginBaseUrl.NotAllowed",
    );
  });

  it("accepts the instance's own origin and the allowed ones; authorize sends the browser there", async () => {
    const own = `${t.server.tokens.issuer}/ui/login/login?brand=own`;
    for (const url of [own, "https://login.example.com/signin?brand=x", "https://auth.example.org:8443/x"]) {
      const app = await oidcApp(t, projectId, `allowed ${url}`, { loginBaseUrl: url });
      const res = await authorizeGet(t, { client_id: app.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid" });
      const location = new URL(res.headers.get("location") as string);
      expect(`${location.origin}${location.pathname}`).toBe(`${new URL(url).origin}${new URL(url).pathname}`);
      expect(location.searchParams.get("authRequest")).toEqual(expect.any(String));
    }
  });

  it("one stored before the rule (a foreign origin in the database) is not followed: the instance's login UI serves it", async () => {
    const app = await oidcApp(t, projectId, "stored before", { loginBaseUrl: "https://login.example.com/signin" });
    const row = await t.server.db.prisma.application.findUniqueOrThrow({ where: { id: app.appId } });
    const config = { ...(row.config as Record<string, unknown>), loginBaseUrl: "https://evil.example.net/login" };
    await t.server.db.prisma.application.update({ where: { id: app.appId }, data: { config } });
    const res = await authorizeGet(t, { client_id: app.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid" });
    const location = new URL(res.headers.get("location") as string);
    expect(location.origin).not.toBe("https://evil.example.net");
  });
});
