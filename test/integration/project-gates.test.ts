// Issue 11, finding 6: a project's authorizationRequired and projectAccessRequired
// gates hold at every token issuance that names the project (its audience
// scope) and at introspection by the project's applications: a user without a
// grant, or of an organization without access, gets invalid_scope, and a token
// issued before it lost access introspects as inactive.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMachine, createOrg, project } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let owner: string;
let outsider: string;

beforeAll(async () => {
  t = await startTestServer();
  owner = await createOrg(t, "Gate Owner");
  outsider = await createOrg(t, "Gate Outsider");
});
afterAll(() => t.stop());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

async function form(path: string, body: Record<string, string>, auth: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(t.url + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: auth },
    body: new URLSearchParams(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A machine user of `orgId` with a client secret: its client id (username) and secret. */
async function client(orgId: string, username: string): Promise<{ userId: string; auth: string }> {
  const userId = await createMachine(t, orgId, username);
  const { clientSecret } = await admin(t, "AddSecret", { userId });
  return { userId, auth: basic(username, clientSecret) };
}

const aud = (projectId: string) => `urn:svc:iam:org:project:id:${projectId}:aud`;
const token = (c: { auth: string }, projectId: string) => form("/oauth/v2/token", { grant_type: "client_credentials", scope: aud(projectId) }, c.auth);

/** A project of the owner organization with the gates given, its role "reader", and an API app (client secret) to introspect with. */
async function gatedProject(name: string, gates: { authorizationRequired?: boolean; projectAccessRequired?: boolean }) {
  const projectId = await project(t, owner, name, ["reader"]);
  await admin(t, "UpdateProject", { projectId, ...gates });
  const app = await admin(t, "CreateApplication", { projectId, name: `${name} api`, api: { authMethodType: "API_AUTH_METHOD_TYPE_BASIC" } });
  const introspect = async (accessToken: string) => (await form("/oauth/v2/introspect", { token: accessToken }, basic(app.clientId, app.clientSecret))).body;
  return { projectId, introspect };
}

describe("projectAccessRequired", () => {
  it("refuses users of organizations that neither own the project nor were granted it", async () => {
    const p = await gatedProject("gate access", { projectAccessRequired: true });
    const stranger = await client(outsider, "gate-stranger");
    const refused = await token(stranger, p.projectId);
    expect([refused.status, refused.body.error]).toEqual([400, "invalid_scope"]);
    const insider = await client(owner, "gate-insider");
    expect((await token(insider, p.projectId)).status).toBe(200);
    // A project grant to the outsider organization opens it to its users.
    await admin(t, "CreateProjectGrant", { projectId: p.projectId, grantedOrganizationId: outsider, roleKeys: ["reader"] });
    const granted = await token(stranger, p.projectId);
    expect(granted.status).toBe(200);
    expect((await p.introspect(granted.body.access_token as string)).active).toBe(true);
  });

  it("turned on after a token was issued: the project's apps see the token as inactive", async () => {
    const p = await gatedProject("gate later", {});
    const stranger = await client(outsider, "gate-early");
    const issued = await token(stranger, p.projectId);
    expect(issued.status).toBe(200);
    expect((await p.introspect(issued.body.access_token as string)).active).toBe(true);
    await admin(t, "UpdateProject", { projectId: p.projectId, projectAccessRequired: true });
    expect(await p.introspect(issued.body.access_token as string)).toEqual({ active: false });
  });
});

describe("authorizationRequired", () => {
  it("refuses users without a grant of the project's roles, even in the owning organization", async () => {
    const p = await gatedProject("gate authz", { authorizationRequired: true });
    const member = await client(owner, "gate-member");
    const refused = await token(member, p.projectId);
    expect([refused.status, refused.body.error]).toEqual([400, "invalid_scope"]);
    const { grantId } = await admin(t, "AddUserGrant", { userId: member.userId, projectId: p.projectId, roleKeys: ["reader"] });
    const issued = await token(member, p.projectId);
    expect(issued.status).toBe(200);
    expect((await p.introspect(issued.body.access_token as string)).active).toBe(true);
    // The grant removed: the token it was issued under is no longer good for the project.
    await admin(t, "RemoveUserGrant", { grantId });
    expect(await p.introspect(issued.body.access_token as string)).toEqual({ active: false });
    expect((await token(member, p.projectId)).status).toBe(400);
  });

  it("leaves tokens for ungated projects and the management API alone", async () => {
    const p = await gatedProject("gate none", {});
    const stranger = await client(outsider, "gate-free");
    expect((await token(stranger, p.projectId)).status).toBe(200);
    const mgmt = await form("/oauth/v2/token", { grant_type: "client_credentials", scope: "urn:svc:iam:org:project:id:svc:aud" }, stranger.auth);
    expect(mgmt.status).toBe(200);
  });
});
