// Authorization hardening found by an audit of every v2 RPC: privilege
// escalation of organization roles onto better-privileged accounts, the last
// active ORG_OWNER, and what project-grant receivers and strangers can learn
// about other organizations' projects.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { patch, scim } from "../fixtures/scim/client.js";
import { addMember, createOrg, type Machine, machine, call as orgCall, ok as orgOk, type World, world } from "../support/orgs.js";
import { call, ok, project } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { createHuman, PASSWORD } from "../support/users.js";

let t: TestServer;
let w: World;
let iamAdminA: Machine;

// biome-ignore lint/suspicious/noExplicitAny: JSON replies are checked field by field
type Json = any;

/** A REST call of the UserService: "ok" or the error's code and reason. */
async function userCall(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; reason?: string; body: Json }> {
  const res = await rest(t.url, token, method, path, body);
  const text = await res.text();
  const json = text ? JSON.parse(text) : {};
  return { status: res.status, reason: json.details?.[0]?.reason, body: json };
}

beforeAll(async () => {
  t = await startTestServer();
  w = await world(t, "hard");
  // An instance administrator whose account lives in organization A.
  iamAdminA = await machine(t, w.orgA, "hard-iam-admin-a");
  await orgOk(t, "rest", t.pat, "AddInstanceMember", { userId: iamAdminA.userId, roles: ["IAM_OWNER"] });
});
afterAll(() => t.stop());

describe("organization roles cannot take over better-privileged accounts", () => {
  it("an ORG_USER_MANAGER cannot give itself the credentials of an ORG_OWNER or an IAM_OWNER", async () => {
    for (const target of [w.ownerA, iamAdminA]) {
      const pat = await userCall(w.userManagerA.pat, "POST", `/v2/users/${target.userId}/pats`, {});
      expect({ target: target.userId, rpc: "AddPersonalAccessToken", status: pat.status, reason: pat.reason }).toEqual({
        target: target.userId,
        rpc: "AddPersonalAccessToken",
        status: 403,
        reason: "Errors.User.MorePrivileged",
      });
      // Had it worked, the new token would act as the owner: prove the stakes.
      if (pat.status === 200) {
        const asVictim = await orgCall(t, "rest", pat.body.token, "ListInstanceMembers", {});
        expect(asVictim.code).not.toBe("ok");
      }
      for (const rpc of ["AddKey", "AddSecret"] as const) {
        const r = await call(t, "rest", w.userManagerA.pat, rpc, { userId: target.userId });
        expect({ rpc, status: r.status, reason: r.reason }).toEqual({ rpc, status: 403, reason: "Errors.User.MorePrivileged" });
      }
    }
    // Ordinary users of the organization stay the user manager's to manage.
    expect((await userCall(w.userManagerA.pat, "POST", `/v2/users/${w.plainA.userId}/pats`, {})).status).toBe(200);
  });

  it("an ORG_USER_MANAGER cannot revoke what a better-privileged user of its organization holds either; its ORG_OWNER can", async () => {
    const pat = await userCall(t.pat, "POST", `/v2/users/${w.ownerA.userId}/pats`, {});
    expect(pat.status).toBe(200);
    expect((await userCall(t.pat, "POST", `/v2/users/${w.ownerA.userId}/secret`, {})).status).toBe(200);
    for (const path of [`/v2/users/${w.ownerA.userId}/pats/${pat.body.id}`, `/v2/users/${w.ownerA.userId}/secret`]) {
      const r = await userCall(w.userManagerA.pat, "DELETE", path);
      expect({ path, status: r.status, reason: r.reason }).toEqual({ path, status: 403, reason: "Errors.User.MorePrivileged" });
    }
    expect((await rest(t.url, pat.body.token, "GET", `/v2/users/${w.ownerA.userId}`)).status).toBe(200);
    // A second owner of A (who could grant ORG_OWNER) may.
    const owner2 = await machine(t, w.orgA, "hard-second-owner-a");
    await addMember(t, w.orgA, owner2.userId, ["ORG_OWNER"]);
    expect((await userCall(owner2.pat, "DELETE", `/v2/users/${w.ownerA.userId}/pats/${pat.body.id}`)).status).toBe(200);
    expect((await userCall(owner2.pat, "DELETE", `/v2/users/${w.ownerA.userId}/secret`)).status).toBe(200);
    expect((await rest(t.url, pat.body.token, "GET", `/v2/users/${w.ownerA.userId}`)).status).toBe(401);
  });

  it("an ORG_USER_MANAGER cannot reset the password of a human ORG_OWNER; the ORG_OWNER can", async () => {
    const human = await createHuman(t, w.orgA, "hard-human-owner");
    await addMember(t, w.orgA, human, ["ORG_OWNER"]);
    const body = { newPassword: { password: "Another-Passw0rd!", changeRequired: false } };
    const denied = await userCall(w.userManagerA.pat, "POST", `/v2/users/${human}/password`, body);
    expect([denied.status, denied.reason]).toEqual([403, "Errors.User.MorePrivileged"]);
    expect((await userCall(w.ownerA.pat, "POST", `/v2/users/${human}/password`, body)).status).toBe(200);
    // Self-service with the current password is unaffected.
    const self = await userCall(t.pat, "POST", `/v2/users/${human}/password`, {
      newPassword: { password: PASSWORD, changeRequired: false },
      currentPassword: "Another-Passw0rd!",
    });
    expect(self.status).toBe(200);
  });

  it("an ORG_OWNER cannot take over an instance administrator of its organization, but manages its users who own other organizations", async () => {
    const pat = await userCall(w.ownerA.pat, "POST", `/v2/users/${iamAdminA.userId}/pats`, {});
    expect([pat.status, pat.reason]).toEqual([403, "Errors.User.MorePrivileged"]);
    // A user of A who owns organization B (B took it with A's consent): A's organization manages it.
    const outsideOwner = await machine(t, w.orgA, "hard-owner-of-b");
    await addMember(t, w.orgB, outsideOwner.userId, ["ORG_OWNER"]);
    const key = await userCall(w.ownerA.pat, "POST", `/v2/users/${outsideOwner.userId}/keys`, {});
    expect(key.status).toBe(200);
    // The account is A's: B's owner cannot reach it at all; an instance administrator can.
    expect((await userCall(w.ownerB.pat, "POST", `/v2/users/${outsideOwner.userId}/keys`, {})).status).toBe(404);
    expect((await userCall(t.pat, "POST", `/v2/users/${outsideOwner.userId}/keys`, {})).status).toBe(200);
  });
});

describe("the last active ORG_OWNER", () => {
  it("cannot be deactivated or locked", async () => {
    const org = (await orgOk(t, "rest", t.pat, "CreateOrganization", { name: "hard One Owner" })).organizationId as string;
    const owner = await machine(t, org, "hard-sole-owner");
    await addMember(t, org, owner.userId, ["ORG_OWNER"]);
    for (const action of ["deactivate", "lock"]) {
      const r = await userCall(t.pat, "POST", `/v2/users/${owner.userId}/${action}`, {});
      expect({ action, status: r.status, reason: r.reason }).toEqual({ action, status: 400, reason: "Errors.User.LastOrgOwner" });
    }
    // With a second active owner it can.
    const second = await machine(t, org, "hard-second-owner");
    await addMember(t, org, second.userId, ["ORG_OWNER"]);
    expect((await userCall(t.pat, "POST", `/v2/users/${owner.userId}/deactivate`, {})).status).toBe(200);
    // ...and then the remaining one is the last active owner.
    const r = await userCall(t.pat, "POST", `/v2/users/${second.userId}/lock`, {});
    expect([r.status, r.reason]).toEqual([400, "Errors.User.LastOrgOwner"]);
  });

  it("cannot leave the organization's membership while the other owners are deactivated", async () => {
    const org = (await orgOk(t, "rest", t.pat, "CreateOrganization", { name: "hard Two Owners" })).organizationId as string;
    const [active, dormant] = [await machine(t, org, "hard-active-owner"), await machine(t, org, "hard-dormant-owner")];
    await addMember(t, org, active.userId, ["ORG_OWNER"]);
    await addMember(t, org, dormant.userId, ["ORG_OWNER"]);
    expect((await userCall(t.pat, "POST", `/v2/users/${dormant.userId}/deactivate`, {})).status).toBe(200);
    for (const [rpc, req] of [
      ["UpdateOrganizationMember", { organizationId: org, userId: active.userId, roles: ["ORG_AUDITOR"] }],
      ["RemoveOrganizationMember", { organizationId: org, userId: active.userId }],
    ] as const) {
      const r = await orgCall(t, "rest", t.pat, rpc, req);
      expect({ rpc, code: r.code, reason: r.reason }).toEqual({ rpc, code: "failed_precondition", reason: "Errors.Org.Member.LastOwner" });
    }
  });

  // Not fixed here: deleteUser lives in src/domain/users.ts (see the report).
  it("cannot be deleted", async () => {
    const org = (await orgOk(t, "rest", t.pat, "CreateOrganization", { name: "hard Deleted Owner" })).organizationId as string;
    const owner = await machine(t, org, "hard-deleted-owner");
    await addMember(t, org, owner.userId, ["ORG_OWNER"]);
    const r = await userCall(t.pat, "DELETE", `/v2/users/${owner.userId}`);
    expect([r.status, r.reason]).toEqual([400, "Errors.User.LastOrgOwner"]);
  });
});

describe("what other organizations learn about a project", () => {
  it("a project-grant receiver cannot find out to which other organizations the project is granted", async () => {
    const orgC = (await orgOk(t, "rest", t.pat, "CreateOrganization", { name: "hard Gamma" })).organizationId as string;
    const projectId = await project(t, w.orgA, "hard shared", ["r"]);
    await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
    await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: orgC, roleKeys: ["r"] });
    for (const via of ["rest", "connect"] as const) {
      const seen = await ok(t, via, w.ownerB.pat, "ListProjects", { queries: [{ grantedOrganizationIdQuery: { organizationId: orgC } }] });
      expect({ via, total: seen.details?.totalResult ?? "0", ids: (seen.result ?? []).map((p: Json) => p.id) }).toEqual({ via, total: "0", ids: [] });
      // Its own grant it does see, and the owner sees every grant.
      const own = await ok(t, via, w.ownerB.pat, "ListProjects", { queries: [{ grantedOrganizationIdQuery: { organizationId: w.orgB } }] });
      expect(own.result.map((p: Json) => p.id)).toEqual([projectId]);
      const byOwner = await ok(t, via, w.ownerA.pat, "ListProjects", { queries: [{ grantedOrganizationIdQuery: { organizationId: orgC } }] });
      expect(byOwner.result.map((p: Json) => p.id)).toEqual([projectId]);
    }
  });

  it("AddUserGrant with a project grant id tells a stranger nothing about another organization's project", async () => {
    const projectId = await project(t, w.orgA, "hard probed", ["r"]);
    const { projectGrantId } = await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
    // plainA holds no role anywhere; ownerB's organization is not the one the grant is for in the last probe.
    const probes = [
      { userId: w.plainA.userId, projectId: "no-such-project", projectGrantId: "no-such-grant", roleKeys: [] },
      { userId: w.plainA.userId, projectId, projectGrantId: "no-such-grant", roleKeys: [] },
      { userId: w.plainA.userId, projectId, projectGrantId, organizationId: "elsewhere", roleKeys: [] },
    ];
    for (const via of ["rest", "connect"] as const) {
      for (const req of probes) {
        const r = await call(t, via, w.plainA.pat, "AddUserGrant", req);
        expect({ via, req, code: r.code, reason: r.reason }).toEqual({ via, req, code: "not_found", reason: "Errors.Project.NotFound" });
      }
    }
    // The receiving organization still gets the precise answers.
    const r = await call(t, "rest", w.ownerB.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, projectGrantId: "no-such-grant", roleKeys: [] });
    expect([r.code, r.reason]).toEqual(["not_found", "Errors.Project.Grant.NotFound"]);
  });
});

describe("read-only and narrow roles never write outside their remit", () => {
  it("IAM_OWNER_VIEWER reads everywhere and is refused every write, whatever the service", async () => {
    const viewer = await machine(t, w.orgB, "hard-iam-viewer");
    await orgOk(t, "rest", t.pat, "AddInstanceMember", { userId: viewer.userId, roles: ["IAM_OWNER_VIEWER"] });
    const projectId = await project(t, w.orgA, "hard viewed", ["r"]);
    const { appId } = await ok(t, "rest", t.pat, "CreateApplication", { projectId, name: "hard app", api: { authMethodType: "API_AUTH_METHOD_TYPE_BASIC" } });
    const { grantId } = await ok(t, "rest", t.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["r"] });
    for (const via of ["rest", "connect"] as const) {
      for (const [rpc, req] of [
        ["GetProject", { projectId }],
        ["ListProjectGrants", {}],
        ["ListUserGrants", {}],
        ["GetApplication", { projectId, appId }],
      ] as const) {
        expect({ via, rpc, code: (await call(t, via, viewer.pat, rpc, req)).code }).toEqual({ via, rpc, code: "ok" });
      }
      for (const [rpc, req] of [
        ["CreateProject", { organizationId: w.orgA, name: "viewer made" }],
        ["UpdateProject", { projectId, name: "viewer renamed" }],
        ["AddProjectRole", { projectId, roleKey: "v", displayName: "V" }],
        ["CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] }],
        ["AddUserGrant", { userId: viewer.userId, projectId, roleKeys: ["r"] }],
        ["UpdateUserGrant", { grantId, roleKeys: [] }],
        ["CreateApplication", { projectId, name: "viewer app", api: { authMethodType: "API_AUTH_METHOD_TYPE_BASIC" } }],
        ["RegenerateClientSecret", { projectId, appId }],
        ["AddApplicationKey", { projectId, appId }],
        ["DeleteProject", { projectId }],
      ] as const) {
        const r = await call(t, via, viewer.pat, rpc, req);
        expect({ via, rpc, code: r.code }).toEqual({ via, rpc, code: "permission_denied" });
      }
      for (const [rpc, req] of [
        ["CreateOrganization", { name: "viewer org" }],
        ["UpdateOrganization", { organizationId: w.orgA, name: "viewer renamed" }],
        ["SetOrganizationMetadata", { organizationId: w.orgA, metadata: [{ key: "k", value: "dg==" }] }],
        ["AddOrganizationMember", { organizationId: w.orgA, userId: viewer.userId, roles: ["ORG_OWNER"] }],
        ["AddInstanceMember", { userId: w.plainA.userId, roles: ["IAM_OWNER"] }],
        ["UpdateInstanceMember", { userId: viewer.userId, roles: ["IAM_OWNER"] }],
      ] as const) {
        const r = await orgCall(t, via, viewer.pat, rpc, req);
        expect({ via, rpc, code: r.code }).toEqual({ via, rpc, code: "permission_denied" });
      }
    }
    for (const [rpc, req] of [
      ["CreateUser", { organizationId: w.orgA, username: "viewer-made", machine: { name: "x" } }],
      ["UpdateUser", { userId: w.plainA.userId, machine: { name: "renamed" } }],
      ["AddPersonalAccessToken", { userId: w.plainA.userId }],
      ["LockUser", { userId: w.plainA.userId }],
      ["DeleteUser", { userId: w.plainA.userId }],
      ["RotateSigningKey", {}],
    ] as const) {
      const r = await call(t, "rest", viewer.pat, rpc, req);
      expect({ rpc, status: r.status }).toEqual({ rpc, status: 403 });
    }
    expect((await userCall(viewer.pat, "POST", "/v2/events", {})).status).toBe(200);
  });

  it("ORG_PROJECT_PERMISSION_MANAGER manages grants and nothing else", async () => {
    const ppm = await machine(t, w.orgA, "hard-ppm");
    await addMember(t, w.orgA, ppm.userId, ["ORG_PROJECT_PERMISSION_MANAGER"]);
    const projectId = await project(t, w.orgA, "hard ppm", ["r"]);
    // Its remit.
    await ok(t, "rest", ppm.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
    await ok(t, "rest", ppm.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["r"] });
    for (const [rpc, req] of [
      ["CreateProject", { organizationId: w.orgA, name: "ppm made" }],
      ["UpdateProject", { projectId, projectRoleAssertion: true }],
      ["AddProjectRole", { projectId, roleKey: "admin", displayName: "Admin" }],
      ["CreateApplication", { projectId, name: "ppm app", api: { authMethodType: "API_AUTH_METHOD_TYPE_BASIC" } }],
      ["ListApplications", { projectId }],
    ] as const) {
      const r = await call(t, "rest", ppm.pat, rpc, req);
      expect({ rpc, code: r.code }).toEqual({ rpc, code: "permission_denied" });
    }
    for (const [rpc, req] of [
      ["UpdateOrganization", { organizationId: w.orgA, name: "ppm renamed" }],
      ["AddOrganizationMember", { organizationId: w.orgA, userId: w.plainA.userId, roles: ["ORG_OWNER"] }],
      ["UpdateOrganizationMember", { organizationId: w.orgA, userId: ppm.userId, roles: ["ORG_OWNER"] }],
      ["SetOrganizationMetadata", { organizationId: w.orgA, metadata: [{ key: "k", value: "dg==" }] }],
    ] as const) {
      const r = await orgCall(t, "rest", ppm.pat, rpc, req);
      expect({ rpc, code: r.code }).toEqual({ rpc, code: "permission_denied" });
    }
    for (const [rpc, req] of [
      ["CreateUser", { organizationId: w.orgA, username: "ppm-made", machine: { name: "x" } }],
      ["AddPersonalAccessToken", { userId: w.plainA.userId }],
      ["DeactivateUser", { userId: w.plainA.userId }],
      ["ListEvents", {}],
    ] as const) {
      const r = await call(t, "rest", ppm.pat, rpc, req);
      expect({ rpc, status: r.status }).toEqual({ rpc, status: 403 });
    }
  });
});

describe("SCIM provisioning by an ORG_USER_MANAGER", () => {
  it("cannot set the password of a human ORG_OWNER", async () => {
    const human = await createHuman(t, w.orgA, "hard-scim-owner");
    await addMember(t, w.orgA, human, ["ORG_OWNER"]);
    const r = await scim(
      t,
      w.userManagerA.pat,
      "PATCH",
      `/scim/v2/${w.orgA}/Users/${human}`,
      patch({ op: "replace", path: "password", value: "Taken-0ver-Passw0rd!" }),
    );
    expect(r.status).toBe(403);
  });

  it("cannot deactivate the last active ORG_OWNER of an organization", async () => {
    const orgId = await createOrg(t, "hard scim owners");
    const owner = await createHuman(t, orgId, "hard-scim-last-owner");
    await addMember(t, orgId, owner, ["ORG_OWNER"]);
    const manager = await machine(t, orgId, "hard-scim-manager");
    await addMember(t, orgId, manager.userId, ["ORG_USER_MANAGER"]);
    const owners = await orgOk(t, "rest", t.pat, "ListOrganizationMembers", { organizationId: orgId });
    expect((owners.result as { userId: string; roles: string[] }[]).filter((m) => m.roles.includes("ORG_OWNER")).map((m) => m.userId)).toEqual([owner]);
    const deactivate = patch({ op: "replace", path: "active", value: false });
    // The manager could not make an ORG_OWNER: it changes nothing about one.
    expect((await scim(t, manager.pat, "PATCH", `/scim/v2/${orgId}/Users/${owner}`, deactivate)).status).toBe(403);
    const r = await scim(t, t.pat, "PATCH", `/scim/v2/${orgId}/Users/${owner}`, deactivate);
    // A failed precondition is a conflict with the resource's state in SCIM terms.
    expect(r.status).toBe(409);
    expect((await scim(t, manager.pat, "GET", `/scim/v2/${orgId}/Users/${owner}`)).body.active).toBe(true);
  });
});
