// Role claims held through project grants leave tokens already issued at once
// (no waiting out the resolved-token cache): deactivating, updating and
// deleting a project grant, removing a project role, deactivating, updating
// and deleting the project, and deactivating, renaming and deleting the
// organization the roles are held in (or the project's: a project's roles
// count only while the organization that owns it is active). Each case warms the
// cache (userinfo and introspection read twice), makes the change, and reads
// again right away.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createOrg, machine, ok as orgOk } from "../support/orgs.js";
import { ok, project } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { json } from "../support/users.js";

let t: TestServer;
let orgA: string;
let orgB: string;
let orgC: string;
const ORG_B_NAME = "gi Beta";

beforeAll(async () => {
  t = await startTestServer();
  orgA = await createOrg(t, "gi Alpha");
  orgB = await createOrg(t, ORG_B_NAME);
  orgC = await createOrg(t, "gi Gamma");
}, 60_000);
afterAll(() => t.stop());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

async function form(path: string, body: Record<string, string>, clientId: string, secret: string): Promise<Response> {
  return fetch(t.url + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(clientId, secret) },
    body: new URLSearchParams(body),
  });
}

/**
 * A project of `owner` (A) with roles `read` and `write`, asserted in tokens,
 * granted to `granted` (B) with both roles; a machine user of `userOrg` (B)
 * holding both in B's name through that grant, with an opaque token for the
 * project; an API app of the project to introspect it.
 */
async function grantedHolder(name: string, orgs: { owner?: string; granted?: string; userOrg?: string } = {}) {
  const { owner = orgA, granted = orgB, userOrg = granted } = orgs;
  const projectId = await project(t, owner, name, ["read", "write"]);
  await ok(t, "rest", t.pat, "UpdateProject", { projectId, projectRoleAssertion: true });
  const { projectGrantId } = await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: granted, roleKeys: ["read", "write"] });
  const username = `gi-${name.toLowerCase().replaceAll(" ", "-")}`;
  const user = await machine(t, userOrg, username);
  await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId, projectGrantId, roleKeys: ["read", "write"] });
  const app = await ok(t, "rest", t.pat, "CreateApplication", { projectId, name: `${name} api`, api: {} });
  const s = await rest(t.url, t.pat, "POST", `/v2/users/${user.userId}/secret`, {});
  expect(s.status).toBe(200);
  const { clientSecret } = await json<{ clientSecret: string }>(s);
  const res = await form(
    "/oauth/v2/token",
    { grant_type: "client_credentials", scope: `openid urn:svc:iam:org:project:id:${projectId}:aud` },
    username,
    clientSecret,
  );
  expect(res.status).toBe(200);
  const { access_token: token } = await json<{ access_token: string }>(res);
  const claim = `urn:svc:iam:org:project:${projectId}:roles`;
  return {
    projectId,
    /** The role claim of a token issued now (read from its ID token: claims computed at issuance, which are cached too). */
    async issuedRoles(): Promise<unknown> {
      const r = await form(
        "/oauth/v2/token",
        { grant_type: "client_credentials", scope: `openid urn:svc:iam:org:project:id:${projectId}:aud` },
        username,
        clientSecret,
      );
      expect(r.status).toBe(200);
      const { id_token: idToken } = await json<{ id_token: string }>(r);
      const payload = JSON.parse(Buffer.from(idToken.split(".")[1] as string, "base64url").toString("utf8")) as Record<string, unknown>;
      return payload[claim] ?? {};
    },
    /**
     * The role claim as userinfo and introspection (by the token's own client and,
     * while the project is active, by the project's API app) show it now; they must agree.
     */
    async roles(opts: { viaApp?: boolean } = {}): Promise<unknown> {
      const info = await json<Record<string, unknown>>(await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${token}` } }));
      const seen = [info[claim] ?? {}];
      const callers: [string, string][] = [[username, clientSecret]];
      if (opts.viaApp ?? true) callers.push([app.clientId, app.clientSecret]);
      for (const [id, secret] of callers) {
        const intro = await json<Record<string, unknown>>(await form("/oauth/v2/introspect", { token }, id, secret));
        expect(intro.active).toBe(true);
        seen.push(intro[claim] ?? {});
      }
      for (const s of seen.slice(1)) expect(s).toEqual(seen[0]);
      return seen[0];
    },
  };
}

const both = (org = orgB, name = ORG_B_NAME) => ({ read: { [org]: name }, write: { [org]: name } });
const readOnly = () => ({ read: { [orgB]: ORG_B_NAME } });

/** Reads twice so the resolved token and its role claims sit in the cache. */
async function warm(holder: { roles(opts?: { viaApp?: boolean }): Promise<unknown> }, expected: unknown, opts: { viaApp?: boolean } = {}): Promise<void> {
  expect(await holder.roles(opts)).toEqual(expected);
  expect(await holder.roles(opts)).toEqual(expected);
}

describe("role claims through a project grant change at once", () => {
  it("DeactivateProjectGrant takes them out, ReactivateProjectGrant brings them back", async () => {
    const h = await grantedHolder("Grant state");
    await warm(h, both());
    await ok(t, "rest", t.pat, "DeactivateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB });
    expect(await h.roles()).toEqual({});
    await warm(h, {});
    await ok(t, "rest", t.pat, "ReactivateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB });
    expect(await h.roles()).toEqual(both());
  });

  it("for a holder from a third organization too (tokens are tagged with the user's own organization)", async () => {
    const h = await grantedHolder("Grant state other org", { userOrg: orgC });
    await warm(h, both());
    await ok(t, "rest", t.pat, "DeactivateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB });
    expect(await h.roles()).toEqual({});
  });

  it("tokens issued after a change carry the new roles at once (issuance claims are cached per user)", async () => {
    const h = await grantedHolder("Issued after change", { userOrg: orgC });
    expect(await h.issuedRoles()).toEqual(both());
    expect(await h.issuedRoles()).toEqual(both());
    await ok(t, "rest", t.pat, "UpdateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB, roleKeys: ["read"] });
    expect(await h.issuedRoles()).toEqual(readOnly());
    await ok(t, "rest", t.pat, "DeactivateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB });
    expect(await h.issuedRoles()).toEqual({});
  });

  it("UpdateProjectGrant dropping a role takes it out", async () => {
    const h = await grantedHolder("Grant update");
    await warm(h, both());
    await ok(t, "rest", t.pat, "UpdateProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB, roleKeys: ["read"] });
    expect(await h.roles()).toEqual(readOnly());
  });

  it("DeleteProjectGrant takes them out", async () => {
    const h = await grantedHolder("Grant delete");
    await warm(h, both());
    await ok(t, "rest", t.pat, "DeleteProjectGrant", { projectId: h.projectId, grantedOrganizationId: orgB });
    expect(await h.roles()).toEqual({});
  });

  it("RemoveProjectRole takes the role out", async () => {
    const h = await grantedHolder("Role remove");
    await warm(h, both());
    await ok(t, "rest", t.pat, "RemoveProjectRole", { projectId: h.projectId, roleKey: "write" });
    expect(await h.roles()).toEqual(readOnly());
  });

  it("DeactivateProject takes them out, ReactivateProject brings them back", async () => {
    const h = await grantedHolder("Project state");
    // The API app stops authenticating with its project deactivated: userinfo and the token's own client only.
    const viaApp = false;
    await warm(h, both(), { viaApp });
    await ok(t, "rest", t.pat, "DeactivateProject", { projectId: h.projectId });
    expect(await h.roles({ viaApp })).toEqual({});
    await warm(h, {}, { viaApp });
    await ok(t, "rest", t.pat, "ReactivateProject", { projectId: h.projectId });
    expect(await h.roles({ viaApp })).toEqual(both());
  });

  it("UpdateProject turning role assertion off takes them out of tokens that did not ask for roles", async () => {
    const h = await grantedHolder("Project assertion");
    await warm(h, both());
    await ok(t, "rest", t.pat, "UpdateProject", { projectId: h.projectId, projectRoleAssertion: false });
    expect(await h.roles()).toEqual({});
  });

  it("DeleteProject takes them out", async () => {
    const h = await grantedHolder("Project delete");
    const viaApp = false;
    await warm(h, both(), { viaApp });
    await ok(t, "rest", t.pat, "DeleteProject", { projectId: h.projectId });
    expect(await h.roles({ viaApp })).toEqual({});
  });
});

describe("role claims held in an organization's name change at once", () => {
  // The holders are users of C: their tokens stay valid while the organizations the roles come from change.
  it("DeactivateOrganization takes them out, ReactivateOrganization brings them back", async () => {
    const orgD = await createOrg(t, "gi Delta");
    const h = await grantedHolder("Org state", { granted: orgD, userOrg: orgC });
    await warm(h, both(orgD, "gi Delta"));
    await orgOk(t, "rest", t.pat, "DeactivateOrganization", { organizationId: orgD });
    expect(await h.roles()).toEqual({});
    await warm(h, {});
    await orgOk(t, "rest", t.pat, "ReactivateOrganization", { organizationId: orgD });
    expect(await h.roles()).toEqual(both(orgD, "gi Delta"));
  });

  it("DeactivateOrganization of the project's owner takes its roles out of other organizations' tokens, Reactivate brings them back", async () => {
    const owner = await createOrg(t, "gi Theta");
    const h = await grantedHolder("Org state owner", { owner, userOrg: orgC });
    // The project's API app stops authenticating with its organization deactivated.
    const viaApp = false;
    await warm(h, both(), { viaApp });
    expect(await h.issuedRoles()).toEqual(both());
    await orgOk(t, "rest", t.pat, "DeactivateOrganization", { organizationId: owner });
    expect(await h.roles({ viaApp })).toEqual({});
    expect(await h.issuedRoles()).toEqual({});
    await warm(h, {}, { viaApp });
    await orgOk(t, "rest", t.pat, "ReactivateOrganization", { organizationId: owner });
    expect(await h.roles({ viaApp })).toEqual(both());
    expect(await h.issuedRoles()).toEqual(both());
  });

  it("UpdateOrganization's new name shows in the claims", async () => {
    const orgD = await createOrg(t, "gi Epsilon");
    const h = await grantedHolder("Org rename", { granted: orgD, userOrg: orgC });
    await warm(h, both(orgD, "gi Epsilon"));
    await orgOk(t, "rest", t.pat, "UpdateOrganization", { organizationId: orgD, name: "gi Epsilon Renamed" });
    expect(await h.roles()).toEqual(both(orgD, "gi Epsilon Renamed"));
  });

  it("DeleteOrganization takes out the roles held in its name", async () => {
    const orgD = await createOrg(t, "gi Zeta");
    const h = await grantedHolder("Org delete granted", { granted: orgD, userOrg: orgC });
    await warm(h, both(orgD, "gi Zeta"));
    await orgOk(t, "rest", t.pat, "DeleteOrganization", { organizationId: orgD });
    expect(await h.roles()).toEqual({});
  });

  it("DeleteOrganization takes out the roles of its projects, held in other organizations' names", async () => {
    const owner = await createOrg(t, "gi Eta");
    const h = await grantedHolder("Org delete owner", { owner, userOrg: orgC });
    const viaApp = false;
    await warm(h, both(), { viaApp });
    await orgOk(t, "rest", t.pat, "DeleteOrganization", { organizationId: owner });
    expect(await h.roles({ viaApp })).toEqual({});
  });
});

describe("the requesting project's role claim", () => {
  it("introspection shows each asking app its own project's roles as urn:svc:iam:org:project:roles, whoever asked first", async () => {
    const p1 = await project(t, orgA, "Primary one", ["p1-role"]);
    const p2 = await project(t, orgA, "Primary two", ["p2-role"]);
    const user = await machine(t, orgA, "gi-primary");
    const apps: Record<string, { clientId: string; clientSecret: string }> = {};
    for (const [projectId, role] of [
      [p1, "p1-role"],
      [p2, "p2-role"],
    ] as const) {
      await ok(t, "rest", t.pat, "UpdateProject", { projectId, projectRoleAssertion: true });
      await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: [role] });
      apps[projectId] = await ok(t, "rest", t.pat, "CreateApplication", { projectId, name: `${role} api`, api: {} });
    }
    const s = await json<{ clientSecret: string }>(await rest(t.url, t.pat, "POST", `/v2/users/${user.userId}/secret`, {}));
    const res = await form(
      "/oauth/v2/token",
      { grant_type: "client_credentials", scope: `urn:svc:iam:org:project:id:${p1}:aud urn:svc:iam:org:project:id:${p2}:aud` },
      "gi-primary",
      s.clientSecret,
    );
    const { access_token: token } = await json<{ access_token: string }>(res);
    const primaryOf = async (projectId: string) => {
      const app = apps[projectId] as { clientId: string; clientSecret: string };
      const intro = await json<Record<string, unknown>>(await form("/oauth/v2/introspect", { token }, app.clientId, app.clientSecret));
      expect(intro.active).toBe(true);
      return intro["urn:svc:iam:org:project:roles"];
    };
    // Project two asks first (and fills the cache), then project one, then two again.
    expect(await primaryOf(p2)).toEqual({ "p2-role": { [orgA]: "gi Alpha" } });
    expect(await primaryOf(p1)).toEqual({ "p1-role": { [orgA]: "gi Alpha" } });
    expect(await primaryOf(p2)).toEqual({ "p2-role": { [orgA]: "gi Alpha" } });
  });
});
