// RFC 8693 token exchange through the real token endpoint: a user's access token (from the code flow, signed in by a
// login UI) traded by a machine user. Refused by default (no role, an application, a role in another organization),
// narrowed with IAM_TOKEN_EXCHANGER / ORG_TOKEN_EXCHANGER (openid-client's genericGrantRequest), widenings refused, the
// act claim of a delegation verified against the JWKS, a revoked or expired subject token refused, the lifetime bound
// by the subject token's, and each exchange an audit event.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { createHuman, createOrg, defaultOrgId, machine, project } from "../support/fixtures.js";
import { basicAuth, codeFlow, discover, issuerOf, loginClient, oidc, oidcApp, postForm } from "../support/oidc.js";
import type { Json } from "../support/rpc.js";
import { admin } from "../support/rpc.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { addMachineSecret } from "../support/users.js";

const GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const JWT = "urn:ietf:params:oauth:token-type:jwt";

let t: TestServer;
let orgId: string;
let projectId: string;
let secondProject: string;
let app: { clientId: string; clientSecret: string };
let aliceId: string;
/** Alice's access token from the code flow: scopes openid profile email and the second project's, audience both projects. */
let subject: { token: string; expiresIn: number; idToken: string };

interface Exchanger {
  userId: string;
  username: string;
  secret: string;
}

async function exchanger(username: string, instanceRoles: string[] = [], org?: { id: string; roles: string[] }): Promise<Exchanger> {
  const m = await machine(t, orgId, username);
  if (instanceRoles.length) await admin(t, "AddInstanceMember", { userId: m.userId, roles: instanceRoles });
  if (org) await admin(t, "AddOrganizationMember", { organizationId: org.id, userId: m.userId, roles: org.roles });
  return { userId: m.userId, username, secret: await addMachineSecret(t, m.userId) };
}

const exchange = (who: { username: string; secret: string }, body: Record<string, string>) =>
  postForm(t, "/oauth/v2/token", { grant_type: GRANT, subject_token: subject.token, subject_token_type: ACCESS, ...body }, basicAuth(who.username, who.secret));

async function introspect(token: string): Promise<Json> {
  return (await postForm(t, "/oauth/v2/introspect", { token }, basicAuth(app.clientId, app.clientSecret))).body;
}

const projectScope = (id: string) => `urn:svc:iam:org:project:id:${id}:aud`;

async function aliceToken(): Promise<{ token: string; expiresIn: number; idToken: string }> {
  const config = await discover(t, app.clientId, app.clientSecret);
  const login = await loginClient(t, orgId, `xlogin-${Math.random().toString(36).slice(2, 8)}`);
  const { tokens } = await codeFlow(t, config, login, "alice", { scope: `openid profile email ${projectScope(secondProject)}` });
  return { token: tokens.access_token, expiresIn: tokens.expires_in ?? 0, idToken: tokens.id_token as string };
}

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  projectId = await project(t, orgId, "exchange-target");
  secondProject = await project(t, orgId, "exchange-second");
  app = await oidcApp(t, projectId, "exchange-rp");
  aliceId = await createHuman(t, orgId, "alice");
  subject = await aliceToken();
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

describe("refused by default", () => {
  it("a machine user without the role: unauthorized_client, and discovery lists the grant", async () => {
    const doc = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as { grant_types_supported: string[] };
    expect(doc.grant_types_supported).toContain(GRANT);
    const plain = await exchanger("x-plain");
    const res = await exchange(plain, {});
    expect([res.status, res.body.error]).toEqual([400, "unauthorized_client"]);
    // An instance administrator is not an exchanger either: the permission is a role of its own.
    const owner = await exchanger("x-owner", ["IAM_OWNER"]);
    expect((await exchange(owner, {})).body.error).toBe("unauthorized_client");
  });

  it("an OIDC application, and a client without credentials: refused", async () => {
    const res = await exchange({ username: app.clientId, secret: app.clientSecret }, {});
    expect([res.status, res.body.error]).toEqual([400, "unauthorized_client"]);
    const anonymous = await postForm(t, "/oauth/v2/token", { grant_type: GRANT, subject_token: subject.token, subject_token_type: ACCESS });
    expect([anonymous.status, anonymous.body.error]).toEqual([401, "invalid_client"]);
  });

  it("ORG_TOKEN_EXCHANGER in another organization does not reach this organization's users", async () => {
    const other = await createOrg(t, "exchange-elsewhere");
    const foreign = await exchanger("x-foreign", [], { id: other, roles: ["ORG_TOKEN_EXCHANGER"] });
    expect((await exchange(foreign, {})).body.error).toBe("unauthorized_client");
  });
});

describe("with the permission", () => {
  let ex: Exchanger;
  beforeAll(async () => {
    ex = await exchanger("x-robot", ["IAM_TOKEN_EXCHANGER"]);
  });

  it("impersonation narrowed to a scope and an audience (openid-client), answered with issued_token_type, audited", async () => {
    const config = await discover(t, ex.username, {}, oidc.ClientSecretBasic(ex.secret));
    const got = await oidc.genericGrantRequest(config, GRANT, {
      subject_token: subject.token,
      subject_token_type: ACCESS,
      scope: "openid email",
      audience: projectId,
    });
    expect(got.issued_token_type).toBe(ACCESS);
    expect(got.scope).toBe("openid email");
    expect(got.id_token).toBeUndefined();
    expect(got.expires_in).toBeLessThanOrEqual(subject.expiresIn);
    const seen = await introspect(got.access_token);
    expect(seen).toMatchObject({ active: true, sub: aliceId, client_id: ex.username, scope: "openid email", aud: [projectId] });
    // The token acts for Alice where it was meant to: userinfo answers with her claims.
    const info = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${got.access_token}` } });
    expect(((await info.json()) as Json).sub).toBe(aliceId);
    const events = await rest(t.url, t.pat, "POST", "/v2/events", {
      aggregateType: "user",
      aggregateId: aliceId,
      eventTypes: ["oauth.token.exchanged.impersonation"],
    });
    const found = ((await events.json()) as { result?: { editorUserId?: string; payload?: Json }[] }).result ?? [];
    expect(found.map((e) => [e.editorUserId, e.payload?.clientId, e.payload?.actor])).toEqual([[ex.userId, ex.username, null]]);
  });

  it("without scope or audience: the subject token's own", async () => {
    const res = await exchange(ex, {});
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe(`openid profile email ${projectScope(secondProject)}`);
    expect(((await introspect(res.body.access_token as string)).aud as string[]).sort()).toEqual([projectId, secondProject].sort());
  });

  it("a widened scope is invalid_scope, a widened audience or resource invalid_target", async () => {
    const scope = await exchange(ex, { scope: "openid phone" });
    expect([scope.status, scope.body.error]).toEqual([400, "invalid_scope"]);
    const management = await exchange(ex, { scope: "urn:svc:iam:org:project:id:svc:aud" });
    expect(management.body.error).toBe("invalid_scope");
    const audience = await exchange(ex, { audience: "svc" });
    expect([audience.status, audience.body.error]).toEqual([400, "invalid_target"]);
    const resource = await exchange(ex, { resource: "https://elsewhere.example.com/api" });
    expect(resource.body.error).toBe("invalid_target");
  });

  it("delegation: the actor is the client, named by act in a JWT that verifies against the JWKS", async () => {
    const own = await postForm(t, "/oauth/v2/token", { grant_type: "client_credentials", scope: "openid" }, basicAuth(ex.username, ex.secret));
    const res = await exchange(ex, { actor_token: own.body.access_token as string, actor_token_type: ACCESS, audience: projectId });
    expect(res.status).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const { payload } = await jwtVerify(res.body.access_token as string, jwks, { issuer: issuerOf(t), audience: projectId, typ: "at+jwt" });
    expect(payload).toMatchObject({ sub: aliceId, client_id: ex.username, act: { sub: ex.userId } });
    expect((await introspect(res.body.access_token as string)).active).toBe(true);
    const events = await rest(t.url, t.pat, "POST", "/v2/events", {
      aggregateType: "user",
      aggregateId: aliceId,
      eventTypes: ["oauth.token.exchanged.delegation"],
    });
    expect(((await events.json()) as { result?: { payload?: Json }[] }).result?.map((e) => e.payload?.actor)).toEqual([ex.userId]);
  });

  it("a delegated token exchanged again: its actors nest (act.act), introspection names them, an impersonation keeps them, at most 5", async () => {
    const second = await exchanger("x-second", ["IAM_TOKEN_EXCHANGER"]);
    const own = async (who: Exchanger) =>
      (await postForm(t, "/oauth/v2/token", { grant_type: "client_credentials", scope: "openid" }, basicAuth(who.username, who.secret))).body
        .access_token as string;
    const swap = (who: Exchanger, subjectToken: string, actor?: string) =>
      postForm(
        t,
        "/oauth/v2/token",
        { grant_type: GRANT, subject_token: subjectToken, subject_token_type: ACCESS, ...(actor ? { actor_token: actor, actor_token_type: ACCESS } : {}) },
        basicAuth(who.username, who.secret),
      );
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    const actOf = async (token: string) => (await jwtVerify(token, jwks, { issuer: issuerOf(t) })).payload.act;

    const first = await swap(ex, subject.token, await own(ex));
    expect(first.status).toBe(200);
    const once = { sub: ex.userId };
    expect(await actOf(first.body.access_token as string)).toEqual(once);
    expect((await introspect(first.body.access_token as string)).act).toEqual(once);

    // The delegate's token, delegated on by another: the new actor first, the earlier one nested (RFC 8693 §4.1).
    const again = await swap(second, first.body.access_token as string, await own(second));
    expect(again.status).toBe(200);
    const twice = { sub: second.userId, act: once };
    expect(await actOf(again.body.access_token as string)).toEqual(twice);
    expect((await introspect(again.body.access_token as string)).act).toEqual(twice);

    // Impersonation of a delegated token does not wash the actors out of it.
    const posing = await swap(second, again.body.access_token as string);
    expect(posing.status).toBe(200);
    expect(await actOf(posing.body.access_token as string)).toEqual(twice);
    expect((await introspect(posing.body.access_token as string)).act).toEqual(twice);
    // And a token nobody acted for carries no act.
    expect((await introspect(subject.token)).act).toBeUndefined();

    // At most five actors.
    let token = again.body.access_token as string;
    for (let n = 3; n <= 5; n++) {
      const next = await swap(ex, token, await own(ex));
      expect(next.status).toBe(200);
      token = next.body.access_token as string;
    }
    const sixth = await swap(second, token, await own(second));
    expect([sixth.status, sixth.body.error]).toEqual([400, "invalid_request"]);
  });

  it("an actor token of someone else, or an actor_token_type alone: invalid_request", async () => {
    const other = await exchanger("x-other");
    const theirs = await postForm(t, "/oauth/v2/token", { grant_type: "client_credentials", scope: "openid" }, basicAuth(other.username, other.secret));
    const res = await exchange(ex, { actor_token: theirs.body.access_token as string, actor_token_type: ACCESS });
    expect([res.status, res.body.error]).toEqual([400, "invalid_request"]);
    expect((await exchange(ex, { actor_token_type: ACCESS })).body.error).toBe("invalid_request");
  });

  it("requested_token_type jwt gives a JWT; unsupported types and a non-JWT subject as jwt are invalid_request", async () => {
    const res = await exchange(ex, { requested_token_type: JWT });
    expect(res.body.issued_token_type).toBe(JWT);
    expect((res.body.access_token as string).split(".")).toHaveLength(3);
    expect((await exchange(ex, { requested_token_type: "urn:ietf:params:oauth:token-type:refresh_token" })).body.error).toBe("invalid_request");
    expect((await exchange(ex, { subject_token_type: "urn:ietf:params:oauth:token-type:id_token" })).body.error).toBe("invalid_request");
    expect((await exchange(ex, { subject_token_type: JWT })).body.error).toBe("invalid_request");
    expect((await exchange(ex, { subject_token: "not-a-token" })).body.error).toBe("invalid_request");
  });

  it("the issued token lives no longer than the subject token", async () => {
    const robot = await machine(t, orgId, "x-short-lived");
    const expirationDate = new Date(Date.now() + 600_000).toISOString();
    const { token } = await admin(t, "AddPersonalAccessToken", { userId: robot.userId, expirationDate });
    const res = await exchange(ex, { subject_token: token });
    expect(res.status).toBe(200);
    expect(res.body.expires_in as number).toBeGreaterThan(500);
    expect(res.body.expires_in as number).toBeLessThanOrEqual(600);
  });

  it("ORG_TOKEN_EXCHANGER in the subject's organization may exchange", async () => {
    const orgEx = await exchanger("x-org", [], { id: orgId, roles: ["ORG_TOKEN_EXCHANGER"] });
    expect((await exchange(orgEx, { scope: "openid" })).status).toBe(200);
  });

  it("the issued token ends with the user's session", async () => {
    const own = await aliceToken();
    const res = await exchange(ex, { subject_token: own.token, scope: "openid" });
    expect((await introspect(res.body.access_token as string)).active).toBe(true);
    const logout = await fetch(`${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: own.idToken })}`, { redirect: "manual" });
    expect(logout.status).toBeLessThan(400);
    expect((await introspect(res.body.access_token as string)).active).toBe(false);
  });

  it("a revoked subject token is refused", async () => {
    const revoked = await aliceToken();
    const rv = await postForm(t, "/oauth/v2/revoke", { token: revoked.token }, basicAuth(app.clientId, app.clientSecret));
    expect(rv.status).toBe(200);
    const res = await exchange(ex, { subject_token: revoked.token });
    expect([res.status, res.body.error]).toEqual([400, "invalid_request"]);
  });
});
