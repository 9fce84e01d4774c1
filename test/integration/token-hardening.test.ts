// Issue 23, findings 11 and 13 (b), and issue 25, item 9: what a token still says after the world changed.
// 11: userinfo and introspection apply the project gates the token issuance applies: a user who lost access to an
//     authorizationRequired project gets invalid_token at userinfo and {"active": false} at introspection.
// 13b: a refresh token issued under a confidential client's secret that has since been replaced no longer refreshes.
// 25 #9: a client whose refresh answer was lost (a crash between commit and answer) may present the just-rotated
//     token once more within a short grace window and gets the same new pair; after the window, reuse still revokes
//     the whole family.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { purgeExpiredTokens } from "../../src/domain/oauth/tokens.js";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { basicAuth, codeFlow, discover, loginClient, type OidcApp, oidcApp, postForm } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let domain: string;
let login: Machine;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient(t, orgId, "token-hardening-login");
}, 120_000);
afterAll(() => t?.stop());

async function userinfo(accessToken: string): Promise<{ status: number; body: unknown; challenge: string | null }> {
  const res = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, challenge: res.headers.get("www-authenticate") };
}

const refresh = (app: OidcApp, refreshToken: string, secret = app.clientSecret) =>
  postForm(t, "/oauth/v2/token", { grant_type: "refresh_token", refresh_token: refreshToken }, basicAuth(app.clientId, secret));

describe("finding 11: userinfo and introspection apply the project gates", () => {
  it("a user whose grant of an authorizationRequired project is removed: userinfo invalid_token, introspection inactive", async () => {
    const projectId = await project(t, orgId, "Gated Userinfo", ["reader"]);
    await admin(t, "UpdateProject", { projectId, authorizationRequired: true });
    const app = await oidcApp(t, projectId, "gated userinfo web");
    const userId = await createHuman(t, orgId, "gated-gina");
    const { grantId } = await admin(t, "AddUserGrant", { userId, projectId, roleKeys: ["reader"] });
    const config = await discover(t, app.clientId, app.clientSecret);
    const { tokens } = await codeFlow(t, config, login, `gated-gina@${domain}`);
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    const introspect = async () => (await postForm(t, "/oauth/v2/introspect", { token: tokens.access_token }, basicAuth(app.clientId, app.clientSecret))).body;
    expect((await introspect()).active).toBe(true);

    await admin(t, "RemoveUserGrant", { grantId });
    const after = await userinfo(tokens.access_token);
    expect([after.status, after.body]).toEqual([401, { error: "invalid_token" }]);
    expect(after.challenge).toContain('error="invalid_token"');
    expect(await introspect()).toEqual({ active: false });
  });
});

describe("finding 13b: a refresh token issued under a replaced client secret", () => {
  it("no longer refreshes once the secret is regenerated", async () => {
    const projectId = await project(t, orgId, "Rotated Secret", []);
    const app = await oidcApp(t, projectId, "rotated secret web");
    await createHuman(t, orgId, "rotated-rory");
    const config = await discover(t, app.clientId, app.clientSecret);
    const { tokens } = await codeFlow(t, config, login, `rotated-rory@${domain}`, { scope: "openid offline_access" });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const { clientSecret } = await admin(t, "RegenerateClientSecret", { projectId, appId: app.appId });
    const refused = await refresh(app, tokens.refresh_token as string, clientSecret);
    expect([refused.status, refused.body.error]).toEqual([400, "invalid_grant"]);
    // A sign-in under the new secret gets refresh tokens that work.
    const fresh = await codeFlow(t, await discover(t, app.clientId, clientSecret), login, `rotated-rory@${domain}`, { scope: "openid offline_access" });
    expect((await refresh(app, fresh.tokens.refresh_token as string, clientSecret)).status).toBe(200);
  });
});

describe("issue 25 #9: a lost refresh answer", () => {
  async function offlineSignIn(name: string): Promise<{ app: OidcApp; refreshToken: string }> {
    const projectId = await project(t, orgId, `Grace ${name}`, []);
    const app = await oidcApp(t, projectId, `grace ${name} web`);
    await createHuman(t, orgId, `grace-${name}`);
    const { tokens } = await codeFlow(t, await discover(t, app.clientId, app.clientSecret), login, `grace-${name}@${domain}`, {
      scope: "openid offline_access",
    });
    return { app, refreshToken: tokens.refresh_token as string };
  }

  it("the just-rotated token is accepted once more within the grace window, answering the same new pair", async () => {
    const { app, refreshToken } = await offlineSignIn("gus");
    const first = await refresh(app, refreshToken);
    expect(first.status).toBe(200);
    // The answer was lost (a crash after the commit): the client retries with the token it still holds.
    const retried = await refresh(app, refreshToken);
    expect(retried.status).toBe(200);
    expect(retried.body.refresh_token).toBe(first.body.refresh_token);
    expect(retried.body.access_token).toBe(first.body.access_token);
    expect(retried.body.id_token).toBe(first.body.id_token);
    // The pair works: the access token at userinfo, the refresh token once.
    const info = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${retried.body.access_token}` } });
    expect(info.status).toBe(200);
    const next = await refresh(app, retried.body.refresh_token as string);
    expect(next.status).toBe(200);
    // Once the successor was used, the old token is a replay: the whole family is revoked.
    const replay = await refresh(app, refreshToken);
    expect([replay.status, replay.body.error]).toEqual([400, "invalid_grant"]);
    expect((await refresh(app, next.body.refresh_token as string)).body.error).toBe("invalid_grant");
  });

  it("keeps the sealed answer only until the purge after the interval, never a token in the clear", async () => {
    const { app, refreshToken } = await offlineSignIn("gwen");
    const first = await refresh(app, refreshToken);
    const rows = await t.server.db.prisma.refreshToken.findMany({ where: { appId: app.appId }, orderBy: { createdAt: "asc" } });
    const sealed = rows.find((r) => r.successorSealed !== null)?.successorSealed;
    expect(sealed).toBeDefined();
    const stored = Buffer.from(sealed as Uint8Array).toString("latin1");
    for (const secret of [first.body.refresh_token, first.body.access_token, refreshToken] as string[]) expect(stored).not.toContain(secret);
    t.advanceClock(2 * 3_600_000);
    try {
      await purgeExpiredTokens(t.server.tokens);
      expect(await t.server.db.prisma.refreshToken.count({ where: { appId: app.appId, successorSealed: { not: null } } })).toBe(0);
    } finally {
      t.advanceClock(-2 * 3_600_000);
    }
  });

  it("after the grace window, reuse still revokes the family", async () => {
    const { app, refreshToken } = await offlineSignIn("greta");
    const first = await refresh(app, refreshToken);
    expect(first.status).toBe(200);
    t.advanceClock(31_000);
    try {
      const late = await refresh(app, refreshToken);
      expect([late.status, late.body.error]).toEqual([400, "invalid_grant"]);
      expect((await refresh(app, first.body.refresh_token as string)).body.error).toBe("invalid_grant");
    } finally {
      t.advanceClock(-31_000);
    }
  });

  it("a wrong client presenting the token within the window gets nothing and revokes nothing it should not", async () => {
    const { app, refreshToken } = await offlineSignIn("gil");
    const other = await oidcApp(t, await project(t, orgId, "Grace other", []), "grace other web");
    const first = await refresh(app, refreshToken);
    expect((await refresh(other, refreshToken)).body.error).toBe("invalid_grant");
    expect((await refresh(app, first.body.refresh_token as string)).status).toBe(200);
  });
});
