// User grants: add (roles must exist; through a project grant only granted
// roles, by the receiving organization only), update (replaces), remove,
// list with filters and paging; different roles per organization context;
// the allow/deny table; and roleClaims, the role claim builder of the token
// service.

import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import { roleClaims } from "../../src/domain/access/user-grants.js";
import { machine } from "../support/orgs.js";
import { call, fails, ok, type ProjectWorld, project, projectWorld, sorted, VIAS } from "../support/projects.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: ProjectWorld;

beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "ug");
});
afterAll(() => t.stop());

const instanceId = () => t.server.instanceId;

describe("user grants", () => {
  it("adds, lists, updates and removes direct grants", async () => {
    for (const via of VIAS) {
      const projectId = await project(t, w.orgA, `Direct ${via}`, ["viewer", "editor", "admin"]);
      const user = await machine(t, w.orgA, `ug-direct-${via}`);
      await fails(
        t,
        via,
        w.ppmA.pat,
        "AddUserGrant",
        { userId: user.userId, projectId, roleKeys: ["viewer", "ghost"] },
        "invalid_argument",
        "Errors.Project.Role.Unknown",
      );
      await fails(
        t,
        via,
        w.ppmA.pat,
        "AddUserGrant",
        { userId: user.userId, projectId, roleKeys: ["bad key"] },
        "invalid_argument",
        "Errors.Project.Role.Key.Invalid",
      );
      await fails(t, via, w.ppmA.pat, "AddUserGrant", { userId: "nope", projectId, roleKeys: [] }, "not_found", "Errors.User.NotFound");
      await fails(t, via, w.ppmA.pat, "AddUserGrant", { userId: user.userId, projectId: "nope", roleKeys: [] }, "not_found", "Errors.Project.NotFound");
      const added = await ok(t, via, w.ppmA.pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: ["viewer", "editor", "viewer"] });
      expect(added).toEqual({ grantId: expect.any(String), creationDate: expect.any(String) });
      await fails(t, via, w.ppmA.pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: [] }, "already_exists", "Errors.UserGrant.AlreadyExists");

      const listed = await ok(t, via, w.auditorA.pat, "ListUserGrants", { queries: [{ userIdFilter: { userId: user.userId } }] });
      expect(listed.result).toEqual([
        {
          grantId: added.grantId,
          userId: user.userId,
          organizationId: w.orgA,
          projectId,
          roleKeys: ["viewer", "editor"],
          details: expect.objectContaining({ resourceOwner: w.orgA }),
          state: "USER_GRANT_STATE_ACTIVE",
        },
      ]);
      await ok(t, via, w.ppmA.pat, "UpdateUserGrant", { grantId: added.grantId, userId: user.userId, roleKeys: ["admin"] });
      await fails(t, via, w.ppmA.pat, "UpdateUserGrant", { grantId: added.grantId, roleKeys: ["ghost"] }, "invalid_argument", "Errors.Project.Role.Unknown");
      await fails(
        t,
        via,
        w.ppmA.pat,
        "UpdateUserGrant",
        { grantId: added.grantId, userId: w.plainA.userId, roleKeys: [] },
        "not_found",
        "Errors.UserGrant.NotFound",
      );
      const byRole = await ok(t, via, w.ownerA.pat, "ListUserGrants", {
        queries: [{ roleKeyFilter: { roleKey: "admin" } }, { projectIdFilter: { projectId } }],
      });
      expect(byRole.result.map((g: { roleKeys: string[] }) => g.roleKeys)).toEqual([["admin"]]);
      await ok(t, via, w.ppmA.pat, "RemoveUserGrant", { grantId: added.grantId });
      await fails(t, via, w.ppmA.pat, "RemoveUserGrant", { grantId: added.grantId }, "not_found", "Errors.UserGrant.NotFound");
    }
  });

  it("through a project grant: granted roles only, assigned by the receiving organization only", async () => {
    const projectId = await project(t, w.orgA, "Through", ["read", "write", "admin"]);
    const { projectGrantId } = await ok(t, "rest", w.ownerA.pat, "CreateProjectGrant", {
      projectId,
      grantedOrganizationId: w.orgB,
      roleKeys: ["read", "write"],
    });
    const userB = await machine(t, w.orgB, "ug-through-b");
    for (const via of VIAS) {
      const req = { userId: userB.userId, projectId, organizationId: w.orgB, roleKeys: ["read"] };
      // The owning org cannot assign through the grant.
      await fails(t, via, w.ownerA.pat, "AddUserGrant", req, "permission_denied", "Errors.UserGrant.ReceivingOrgOnly");
      await fails(t, via, w.ownerB.pat, "AddUserGrant", { ...req, roleKeys: ["admin"] }, "invalid_argument", "Errors.UserGrant.RoleNotGranted");
      await fails(t, via, w.ownerB.pat, "AddUserGrant", { ...req, roleKeys: ["ghost"] }, "invalid_argument", "Errors.Project.Role.Unknown");
      // B cannot use the project directly (in A's context).
      await fails(t, via, w.ownerB.pat, "AddUserGrant", { userId: userB.userId, projectId, roleKeys: ["read"] }, "not_found", "Errors.Project.NotFound");
      await fails(t, via, w.ownerB.pat, "AddUserGrant", { ...req, projectGrantId, organizationId: w.orgA }, "invalid_argument", "Errors.UserGrant.OrgMismatch");
      const viaOrg = via === "rest" ? { ...req } : { userId: userB.userId, projectId, projectGrantId, roleKeys: ["read"] };
      const added = await ok(t, via, w.ownerB.pat, "AddUserGrant", viaOrg);
      const listed = await ok(t, via, w.ownerB.pat, "ListUserGrants", { queries: [{ projectGrantIdFilter: { projectGrantId } }] });
      expect(listed.result).toEqual([expect.objectContaining({ grantId: added.grantId, organizationId: w.orgB, projectGrantId, roleKeys: ["read"] })]);
      await fails(
        t,
        via,
        w.ownerB.pat,
        "UpdateUserGrant",
        { grantId: added.grantId, roleKeys: ["read", "admin"] },
        "invalid_argument",
        "Errors.UserGrant.RoleNotGranted",
      );
      await ok(t, via, w.ownerB.pat, "UpdateUserGrant", { grantId: added.grantId, roleKeys: ["read", "write"] });
      // The owning org does not manage the receiving org's grants.
      await fails(t, via, w.ownerA.pat, "UpdateUserGrant", { grantId: added.grantId, roleKeys: [] }, "not_found", "Errors.UserGrant.NotFound");
      await fails(t, via, w.ownerA.pat, "RemoveUserGrant", { grantId: added.grantId }, "not_found", "Errors.UserGrant.NotFound");
      await ok(t, via, w.ownerB.pat, "RemoveUserGrant", { grantId: added.grantId });
    }
    // A deactivated project grant takes no new user grants.
    await ok(t, "rest", w.ownerA.pat, "DeactivateProjectGrant", { projectId, grantedOrganizationId: w.orgB });
    await fails(
      t,
      "rest",
      w.ownerB.pat,
      "AddUserGrant",
      { userId: userB.userId, projectId, organizationId: w.orgB, roleKeys: [] },
      "failed_precondition",
      "Errors.Project.Grant.Inactive",
    );
    // A project not granted to the organization.
    const other = await project(t, w.orgA, "NotGranted", ["x"]);
    await fails(
      t,
      "rest",
      w.ownerB.pat,
      "AddUserGrant",
      { userId: userB.userId, projectId: other, organizationId: w.orgB, roleKeys: [] },
      "not_found",
      "Errors.Project.Grant.NotFound",
    );
  });

  it("a user holds different roles in one project for different organizations", async () => {
    const projectId = await project(t, w.orgA, "TwoContexts", ["read", "write", "admin"]);
    const { projectGrantId } = await ok(t, "rest", w.ownerA.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["read"] });
    const user = await machine(t, w.orgA, "ug-two");
    const inA = await ok(t, "connect", w.ownerA.pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: ["admin", "write"] });
    // B's owner cannot see A's users (404 as for an unknown id); a caller who sees both organizations can.
    await fails(
      t,
      "rest",
      w.ownerB.pat,
      "AddUserGrant",
      { userId: user.userId, projectId, projectGrantId, roleKeys: ["read"] },
      "not_found",
      "Errors.User.NotFound",
    );
    const inB = await ok(t, "connect", t.pat, "AddUserGrant", { userId: user.userId, projectId, projectGrantId, roleKeys: ["read"] });
    const all = await ok(t, "rest", t.pat, "ListUserGrants", { queries: [{ userIdFilter: { userId: user.userId } }], query: { asc: true } });
    expect(all.result.map((g: { grantId: string; organizationId: string; roleKeys: string[] }) => [g.grantId, g.organizationId, g.roleKeys])).toEqual([
      [inA.grantId, w.orgA, ["admin", "write"]],
      [inB.grantId, w.orgB, ["read"]],
    ]);
    // Each org sees its own context only.
    const seenByB = await ok(t, "rest", w.ownerB.pat, "ListUserGrants", { queries: [{ userIdFilter: { userId: user.userId } }] });
    expect(seenByB.result.map((g: { grantId: string }) => g.grantId)).toEqual([inB.grantId]);

    const claims = await roleClaims(t.server.tokens.store, instanceId(), user.userId);
    expect(claims.get(projectId)).toEqual({ admin: { [w.orgA]: "ug Alpha" }, write: { [w.orgA]: "ug Alpha" }, read: { [w.orgB]: "ug Beta" } });
  });

  it("pages and sorts", async () => {
    const projectId = await project(t, w.orgA, "Paging", ["r"]);
    const users = [];
    for (let i = 0; i < 5; i++) users.push((await machine(t, w.orgA, `ug-page-${i}`)).userId);
    const ids = [];
    for (const userId of users) ids.push((await ok(t, "rest", w.ownerA.pat, "AddUserGrant", { userId, projectId, roleKeys: ["r"] })).grantId);
    const q = [{ projectIdFilter: { projectId } }];
    const first = await ok(t, "rest", w.ownerA.pat, "ListUserGrants", { queries: q, query: { limit: 2, asc: true } });
    expect(first.details.totalResult).toBe("5");
    expect(first.result.map((g: { grantId: string }) => g.grantId)).toEqual(ids.slice(0, 2));
    const last = await ok(t, "rest", w.ownerA.pat, "ListUserGrants", { queries: q, query: { offset: 4, limit: 2, asc: true } });
    expect(last.result.map((g: { grantId: string }) => g.grantId)).toEqual(ids.slice(4));
    const desc = await ok(t, "rest", w.ownerA.pat, "ListUserGrants", { queries: q });
    expect(desc.result.map((g: { grantId: string }) => g.grantId)).toEqual([...ids].reverse());
    await fails(t, "rest", w.ownerA.pat, "ListUserGrants", { query: { limit: 1001 } }, "invalid_argument", "Errors.List.LimitTooHigh");
  });

  it("over gRPC", async () => {
    const projectId = await project(t, w.orgA, "gRPC grants", ["r"]);
    const client = createClient(AuthorizationService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${w.ppmA.pat}` };
    const { grantId } = await client.addUserGrant({ userId: w.plainA.userId, projectId, roleKeys: ["r"] }, { headers });
    const listed = await client.listUserGrants({ queries: [{ query: { case: "userIdFilter", value: { userId: w.plainA.userId } } }] }, { headers });
    expect(listed.result.map((g) => g.grantId)).toContain(grantId);
    await client.updateUserGrant({ grantId, roleKeys: [] }, { headers });
    await client.removeUserGrant({ grantId }, { headers });
  });
});

describe("allow/deny", () => {
  type Caller = "ownerA" | "ppmA" | "userManagerA" | "auditorA" | "plainA" | "ownerB";
  const CALLERS: Caller[] = ["ownerA", "ppmA", "userManagerA", "auditorA", "plainA", "ownerB"];
  const code = (o: "ok" | "denied" | "hidden") => (o === "ok" ? "ok" : o === "denied" ? "permission_denied" : "not_found");
  const WRITE = { ownerA: "ok", ppmA: "ok", userManagerA: "denied", auditorA: "denied", plainA: "hidden", ownerB: "hidden" } as const;
  const READ = { ownerA: "ok", ppmA: "ok", userManagerA: "ok", auditorA: "ok", plainA: "denied", ownerB: "ok" } as const;

  it("per RPC and role", async () => {
    const projectId = await project(t, w.orgA, "UgPerm", ["r"]);
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const user = await machine(t, w.orgA, `ug-perm-${via}-${caller}`.toLowerCase());
        const add = await call(t, via, w[caller].pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: ["r"] });
        expect({ via, caller, rpc: "Add", code: add.code }).toEqual({ via, caller, rpc: "Add", code: code(WRITE[caller]) });
        const grantId =
          add.code === "ok" ? add.body.grantId : (await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId, roleKeys: ["r"] })).grantId;
        const list = await call(t, via, w[caller].pat, "ListUserGrants", { queries: [{ userIdFilter: { userId: user.userId } }] });
        expect({ via, caller, rpc: "List", code: list.code }).toEqual({ via, caller, rpc: "List", code: code(READ[caller]) });
        // Only A's readers see the grant (B's owner gets an empty list).
        if (list.code === "ok") expect((list.body.result ?? []).length).toBe(caller === "ownerB" ? 0 : 1);
        const update = await call(t, via, w[caller].pat, "UpdateUserGrant", { grantId, roleKeys: [] });
        expect({ via, caller, rpc: "Update", code: update.code }).toEqual({ via, caller, rpc: "Update", code: code(WRITE[caller]) });
        const remove = await call(t, via, w[caller].pat, "RemoveUserGrant", { grantId });
        expect({ via, caller, rpc: "Remove", code: remove.code }).toEqual({ via, caller, rpc: "Remove", code: code(WRITE[caller]) });
      }
    }
  });
});

describe("roleClaims", () => {
  it("maps project → role → org id → org name from active grants on active projects, in one query", async () => {
    const p1 = await project(t, w.orgA, "Claims1", ["a", "b"]);
    const p2 = await project(t, w.orgA, "Claims2", ["c"]);
    const p3 = await project(t, w.orgA, "Claims3", ["d"]);
    const { projectGrantId } = await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId: p1, grantedOrganizationId: w.orgB, roleKeys: ["b"] });
    const user = await machine(t, w.orgB, "ug-claims");
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId: p1, roleKeys: ["a", "b"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId: p1, projectGrantId, roleKeys: ["b"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId: p2, roleKeys: ["c"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: user.userId, projectId: p3, roleKeys: [] });
    const store = t.server.tokens.store;
    const db = t.server.db.prisma;
    const all = await roleClaims(store, instanceId(), user.userId);
    expect(Object.fromEntries(all)).toEqual({
      [p1]: { a: { [w.orgA]: "ug Alpha" }, b: { [w.orgA]: "ug Alpha", [w.orgB]: "ug Beta" } },
      [p2]: { c: { [w.orgA]: "ug Alpha" } },
      [p3]: {},
    });
    expect([...(await roleClaims(store, instanceId(), user.userId, [p2])).keys()]).toEqual([p2]);
    expect((await roleClaims(store, instanceId(), user.userId, [])).size).toBe(0);
    expect((await roleClaims(store, "other-instance", user.userId)).size).toBe(0);
    // Inactive project grant: its user grants drop out; inactive project: all of it.
    await ok(t, "rest", t.pat, "DeactivateProjectGrant", { projectId: p1, grantedOrganizationId: w.orgB });
    await ok(t, "rest", t.pat, "DeactivateProject", { projectId: p2 });
    const after = await roleClaims(store, instanceId(), user.userId);
    expect(sorted([...after.keys()])).toEqual(sorted([p1, p3]));
    expect(after.get(p1)).toEqual({ a: { [w.orgA]: "ug Alpha" }, b: { [w.orgA]: "ug Alpha" } });
    // Inactive user grant.
    await db.userGrant.updateMany({ where: { userId: user.userId, projectId: p3 }, data: { state: "INACTIVE" } });
    expect(sorted([...(await roleClaims(store, instanceId(), user.userId)).keys()])).toEqual([p1]);
    // A deactivated granting organization's roles drop out too.
    await ok(t, "rest", t.pat, "ReactivateProjectGrant", { projectId: p1, grantedOrganizationId: w.orgB });
    expect((await roleClaims(store, instanceId(), user.userId)).get(p1)?.b).toEqual({ [w.orgA]: "ug Alpha", [w.orgB]: "ug Beta" });
    await db.organization.update({ where: { id: w.orgB }, data: { state: "INACTIVE" } });
    try {
      expect((await roleClaims(store, instanceId(), user.userId)).get(p1)?.b).toEqual({ [w.orgA]: "ug Alpha" });
    } finally {
      await db.organization.update({ where: { id: w.orgB }, data: { state: "ACTIVE" } });
    }
  });
});
