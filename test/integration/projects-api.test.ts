// Projects and their roles: create/get/list/update/deactivate/reactivate/
// delete with cascades, role rules and removal cascades, visibility of
// granted projects, and the allow/deny table of every project and role RPC.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import { call, fails, ok, type ProjectWorld, project, projectWorld, type Rpc, sorted, VIAS } from "../support/projects.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: ProjectWorld;

beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "pj");
});
afterAll(() => t.stop());

describe("projects", () => {
  it("creates, reads, lists, updates, deactivates, reactivates and deletes", async () => {
    for (const via of VIAS) {
      const created = await ok(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: `Shop ${via}`, projectRoleAssertion: true });
      expect(created).toEqual({ projectId: expect.any(String), creationDate: expect.any(String) });
      const { projectId } = created;
      const got = await ok(t, via, w.auditorA.pat, "GetProject", { projectId });
      expect(got.project).toEqual({
        id: projectId,
        details: expect.objectContaining({ resourceOwner: w.orgA }),
        organizationId: w.orgA,
        name: `Shop ${via}`,
        state: "PROJECT_STATE_ACTIVE",
        projectRoleAssertion: true,
      });
      await ok(t, via, w.ownerA.pat, "UpdateProject", { projectId, name: `Store ${via}`, authorizationRequired: true, projectAccessRequired: true });
      const updated = (await ok(t, via, w.ownerA.pat, "GetProject", { projectId })).project;
      expect(updated).toMatchObject({ name: `Store ${via}`, projectRoleAssertion: true, authorizationRequired: true, projectAccessRequired: true });
      // Unset fields stay.
      await ok(t, via, w.ownerA.pat, "UpdateProject", { projectId, projectRoleAssertion: false });
      expect((await ok(t, via, w.ownerA.pat, "GetProject", { projectId })).project).toMatchObject({ name: `Store ${via}`, authorizationRequired: true });

      const listed = await ok(t, via, w.ownerA.pat, "ListProjects", {
        queries: [{ nameQuery: { name: `store ${via}`, method: "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE" } }],
      });
      expect(listed.result.map((p: { id: string }) => p.id)).toEqual([projectId]);
      expect(listed.details.totalResult).toBe("1");

      await ok(t, via, w.ownerA.pat, "DeactivateProject", { projectId });
      await fails(t, via, w.ownerA.pat, "DeactivateProject", { projectId }, "failed_precondition", "Errors.Project.AlreadyInactive");
      expect((await ok(t, via, w.ownerA.pat, "GetProject", { projectId })).project.state).toBe("PROJECT_STATE_INACTIVE");
      await ok(t, via, w.ownerA.pat, "ReactivateProject", { projectId });
      await fails(t, via, w.ownerA.pat, "ReactivateProject", { projectId }, "failed_precondition", "Errors.Project.NotInactive");
      await ok(t, via, w.ownerA.pat, "DeleteProject", { projectId });
      await fails(t, via, w.ownerA.pat, "GetProject", { projectId }, "not_found", "Errors.Project.NotFound");
    }
  });

  it("keeps names unique per organization and validates input", async () => {
    for (const via of VIAS) {
      await ok(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: `Dup ${via}` });
      await fails(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: `Dup ${via}` }, "already_exists", "Errors.Project.AlreadyExists");
      // Another organization may use the name.
      await ok(t, via, w.ownerB.pat, "CreateProject", { organizationId: w.orgB, name: `Dup ${via}` });
      const other = await ok(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: `Other ${via}` });
      await fails(t, via, w.ownerA.pat, "UpdateProject", { projectId: other.projectId, name: `Dup ${via}` }, "already_exists", "Errors.Project.AlreadyExists");
      await fails(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: "  " }, "invalid_argument", "Errors.Project.Name.Missing");
      await fails(t, via, w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: "x".repeat(201) }, "invalid_argument", "Errors.Project.Name.TooLong");
      await fails(t, via, w.ownerA.pat, "CreateProject", { organizationId: "", name: "n" }, "invalid_argument", "Errors.Org.Id.Missing");
      await fails(t, via, w.ownerA.pat, "CreateProject", { organizationId: "nope", name: "n" }, "not_found", "Errors.Org.NotFound");
    }
  });

  it("deletes a project with its roles, grants, apps and user grants", async () => {
    const projectId = await project(t, w.orgA, "Cascade", ["admin", "viewer"]);
    const { projectGrantId } = await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["viewer"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["admin"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: w.ownerB.userId, projectId, projectGrantId, roleKeys: ["viewer"] });
    await ok(t, "rest", t.pat, "CreateApplication", { projectId, name: "api", api: {} });
    await ok(t, "rest", t.pat, "DeleteProject", { projectId });
    const db = t.server.db.prisma;
    expect(await db.projectRole.count({ where: { projectId } })).toBe(0);
    expect(await db.projectGrant.count({ where: { projectId } })).toBe(0);
    expect(await db.userGrant.count({ where: { projectId } })).toBe(0);
    expect(await db.application.count({ where: { projectId } })).toBe(0);
    const events = await db.event.findMany({ where: { aggregateId: projectId, type: "project.removed" } });
    expect(events[0]?.payload).toMatchObject({ userGrants: 2, apps: 1, grants: 1 });
  });

  it("shows projects granted to an organization to that organization, read-only, with the granted roles", async () => {
    const projectId = await project(t, w.orgA, "Granted", ["r1", "r2"]);
    await fails(t, "rest", w.ownerB.pat, "GetProject", { projectId }, "not_found");
    await ok(t, "rest", w.ownerA.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r1"] });
    for (const via of VIAS) {
      expect((await ok(t, via, w.ownerB.pat, "GetProject", { projectId })).project.organizationId).toBe(w.orgA);
      const listed = await ok(t, via, w.ownerB.pat, "ListProjects", { queries: [{ grantedOrganizationIdQuery: { organizationId: w.orgB } }] });
      expect(listed.result.map((p: { id: string }) => p.id)).toContain(projectId);
      const own = await ok(t, via, w.ownerB.pat, "ListProjects", { queries: [{ organizationIdQuery: { organizationId: w.orgB } }] });
      expect(own.result.map((p: { id: string }) => p.id)).not.toContain(projectId);
      const roles = await ok(t, via, w.ownerB.pat, "ListProjectRoles", { projectId });
      expect(roles.result.map((r: { roleKey: string }) => r.roleKey)).toEqual(["r1"]);
      expect((await ok(t, via, w.ownerA.pat, "ListProjectRoles", { projectId })).result).toHaveLength(2);
      await fails(t, via, w.ownerB.pat, "UpdateProject", { projectId, name: "mine" }, "not_found", "Errors.Project.NotFound");
      await fails(t, via, w.ownerB.pat, "AddProjectRole", { projectId, roleKey: "x", displayName: "X" }, "not_found");
    }
  });
});

describe("audit", () => {
  it("records one event per write, in the owning organization, naming the editor", async () => {
    const { projectId } = await ok(t, "rest", w.ownerA.pat, "CreateProject", { organizationId: w.orgA, name: "Audited" });
    await ok(t, "rest", w.ownerA.pat, "UpdateProject", { projectId, name: "Audited 2" });
    await ok(t, "rest", w.ownerA.pat, "AddProjectRole", { projectId, roleKey: "r", displayName: "R" });
    await ok(t, "rest", w.ownerA.pat, "UpdateProjectRole", { projectId, roleKey: "r", displayName: "R2" });
    await ok(t, "rest", w.ownerA.pat, "RemoveProjectRole", { projectId, roleKey: "r" });
    await ok(t, "rest", w.ownerA.pat, "DeactivateProject", { projectId });
    await ok(t, "rest", w.ownerA.pat, "ReactivateProject", { projectId });
    await ok(t, "rest", w.ownerA.pat, "DeleteProject", { projectId });
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: projectId }, orderBy: { createdAt: "asc" } });
    // Writes within one millisecond may tie on createdAt: compare as sets.
    expect(sorted(events.map((e) => e.type))).toEqual(
      sorted([
        "project.added",
        "project.changed",
        "project.role.added",
        "project.role.changed",
        "project.role.removed",
        "project.deactivated",
        "project.reactivated",
        "project.removed",
      ]),
    );
    for (const e of events) expect(e).toMatchObject({ orgId: w.orgA, editorUserId: w.ownerA.userId, aggregateType: "project" });
  });
});

describe("project roles", () => {
  it("adds, lists, updates and removes roles; keys unique and URL-safe", async () => {
    for (const via of VIAS) {
      const projectId = await project(t, w.orgA, `Roles ${via}`);
      await ok(t, via, w.ownerA.pat, "AddProjectRole", { projectId, roleKey: "admin", displayName: "Administrator", group: "ops" });
      await ok(t, via, w.ownerA.pat, "AddProjectRole", { projectId, roleKey: "app:reader.v1-x_y", displayName: "Reader" });
      await fails(
        t,
        via,
        w.ownerA.pat,
        "AddProjectRole",
        { projectId, roleKey: "admin", displayName: "Again" },
        "already_exists",
        "Errors.Project.Role.AlreadyExists",
      );
      for (const bad of ["", "has space", "a/b", "é", "x".repeat(101)]) {
        await fails(
          t,
          via,
          w.ownerA.pat,
          "AddProjectRole",
          { projectId, roleKey: bad, displayName: "d" },
          "invalid_argument",
          "Errors.Project.Role.Key.Invalid",
        );
      }
      await fails(
        t,
        via,
        w.ownerA.pat,
        "AddProjectRole",
        { projectId, roleKey: "ok", displayName: "" },
        "invalid_argument",
        "Errors.Project.Role.DisplayName.Missing",
      );
      const listed = await ok(t, via, w.auditorA.pat, "ListProjectRoles", { projectId, query: { asc: true } });
      expect(listed.result).toEqual([
        { projectId, roleKey: "admin", displayName: "Administrator", group: "ops", details: expect.objectContaining({ resourceOwner: w.orgA }) },
        { projectId, roleKey: "app:reader.v1-x_y", displayName: "Reader", details: expect.any(Object) },
      ]);
      const filtered = await ok(t, via, w.ownerA.pat, "ListProjectRoles", {
        projectId,
        queries: [{ keyQuery: { key: "app:", method: "TEXT_QUERY_METHOD_STARTS_WITH" } }],
      });
      expect(filtered.result.map((r: { roleKey: string }) => r.roleKey)).toEqual(["app:reader.v1-x_y"]);
      await ok(t, via, w.ownerA.pat, "UpdateProjectRole", { projectId, roleKey: "app:reader.v1-x_y", displayName: "Readers", group: "apps" });
      await ok(t, via, w.ownerA.pat, "UpdateProjectRole", { projectId, roleKey: "admin", displayName: "Admins" });
      const after = await ok(t, via, w.ownerA.pat, "ListProjectRoles", { projectId, query: { asc: true } });
      expect(after.result.map((r: { displayName: string; group?: string }) => [r.displayName, r.group])).toEqual([
        ["Admins", "ops"],
        ["Readers", "apps"],
      ]);
      await fails(t, via, w.ownerA.pat, "UpdateProjectRole", { projectId, roleKey: "nope", displayName: "x" }, "not_found", "Errors.Project.Role.NotFound");
      await ok(t, via, w.ownerA.pat, "RemoveProjectRole", { projectId, roleKey: "admin" });
      await fails(t, via, w.ownerA.pat, "RemoveProjectRole", { projectId, roleKey: "admin" }, "not_found", "Errors.Project.Role.NotFound");
    }
  });

  it("removing a role removes it from every user grant and project grant", async () => {
    const projectId = await project(t, w.orgA, "RoleCascade", ["a", "b", "c"]);
    const { projectGrantId } = await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["a", "b"] });
    const direct = await ok(t, "rest", t.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["a", "b", "c"] });
    const viaGrant = await ok(t, "rest", t.pat, "AddUserGrant", { userId: w.ownerB.userId, projectId, projectGrantId, roleKeys: ["a", "b"] });
    await ok(t, "connect", w.ownerA.pat, "RemoveProjectRole", { projectId, roleKey: "a" });
    const grants = await ok(t, "rest", t.pat, "ListUserGrants", { queries: [{ projectIdFilter: { projectId } }] });
    const roles = Object.fromEntries(grants.result.map((g: { grantId: string; roleKeys: string[] }) => [g.grantId, g.roleKeys]));
    expect(roles).toEqual({ [direct.grantId]: ["b", "c"], [viaGrant.grantId]: ["b"] });
    const pg = await ok(t, "rest", t.pat, "ListProjectGrants", { queries: [{ projectIdQuery: { projectId } }] });
    expect(pg.result[0].roleKeys).toEqual(["b"]);
  });

  it("over gRPC", async () => {
    const client = createClient(ProjectService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${w.ownerB.pat}` };
    const { projectId } = await client.createProject({ organizationId: w.orgB, name: "gRPC project" }, { headers });
    await client.addProjectRole({ projectId, roleKey: "k", displayName: "K" }, { headers });
    const roles = await client.listProjectRoles({ projectId }, { headers });
    expect(roles.result.map((r) => r.roleKey)).toEqual(["k"]);
    expect(roles.details?.totalResult).toBe(1n);
    const got = await client.getProject({ projectId }, { headers });
    expect(got.project?.name).toBe("gRPC project");
    await client.deleteProject({ projectId }, { headers });
    const err = await client.getProject({ projectId }, { headers }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("allow/deny", () => {
  type Caller = "ownerA" | "ppmA" | "userManagerA" | "auditorA" | "plainA" | "ownerB";
  const CALLERS: Caller[] = ["ownerA", "ppmA", "userManagerA", "auditorA", "plainA", "ownerB"];
  // ok, denied (PermissionDenied: a member lacking the permission) or hidden (NotFound: no membership).
  type Outcome = "ok" | "denied" | "hidden";
  const READ: Record<Caller, Outcome> = { ownerA: "ok", ppmA: "ok", userManagerA: "denied", auditorA: "ok", plainA: "hidden", ownerB: "hidden" };
  const WRITE: Record<Caller, Outcome> = { ownerA: "ok", ppmA: "denied", userManagerA: "denied", auditorA: "denied", plainA: "hidden", ownerB: "hidden" };
  const TABLE: [Rpc, Record<Caller, Outcome>, (p: string) => Record<string, unknown>][] = [
    ["GetProject", READ, (projectId) => ({ projectId })],
    ["UpdateProject", WRITE, (projectId) => ({ projectId, projectRoleAssertion: true })],
    ["DeactivateProject", WRITE, (projectId) => ({ projectId })],
    ["ReactivateProject", WRITE, (projectId) => ({ projectId })],
    ["AddProjectRole", WRITE, (projectId) => ({ projectId, roleKey: "new", displayName: "New" })],
    ["ListProjectRoles", READ, (projectId) => ({ projectId })],
    ["UpdateProjectRole", WRITE, (projectId) => ({ projectId, roleKey: "r", displayName: "R2" })],
    ["RemoveProjectRole", WRITE, (projectId) => ({ projectId, roleKey: "r" })],
    ["DeleteProject", WRITE, (projectId) => ({ projectId })],
  ];

  it("per RPC and role, over REST and Connect", async () => {
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const projectId = await project(t, w.orgA, `Perm ${via} ${caller}`, ["r"]);
        if (caller === "ownerA") await ok(t, "rest", t.pat, "DeactivateProject", { projectId }); // so Reactivate has something to do after Deactivate fails
        for (const [rpc, table, req] of TABLE) {
          if (caller === "ownerA" && rpc === "DeactivateProject") await ok(t, "rest", t.pat, "ReactivateProject", { projectId });
          if (caller === "ownerA" && rpc === "ReactivateProject") continue;
          const reply = await call(t, via, w[caller].pat, rpc, req(projectId));
          const expected = table[caller];
          const code = expected === "ok" ? "ok" : expected === "denied" ? "permission_denied" : "not_found";
          expect({ via, caller, rpc, code: reply.code }).toEqual({ via, caller, rpc, code });
        }
      }
    }
  });

  it("creating and listing projects", async () => {
    const create: Record<Caller, Outcome> = { ...WRITE };
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const reply = await call(t, via, w[caller].pat, "CreateProject", { organizationId: w.orgA, name: `New ${via} ${caller}` });
        const code = create[caller] === "ok" ? "ok" : create[caller] === "denied" ? "permission_denied" : "not_found";
        expect({ via, caller, code: reply.code }).toEqual({ via, caller, code });
        const list = await call(t, via, w[caller].pat, "ListProjects", { queries: [{ organizationIdQuery: { organizationId: w.orgA } }] });
        const listCode = READ[caller] === "ok" || caller === "ownerB" ? "ok" : "permission_denied";
        expect({ via, caller, list: list.code }).toEqual({ via, caller, list: listCode });
        // B sees A's projects granted to B only.
        if (caller === "ownerB") for (const p of list.body.result ?? []) expect(["Granted", "RoleCascade"]).toContain(p.name);
      }
    }
    const names = (
      await ok(t, "rest", w.auditorA.pat, "ListProjects", { queries: [{ nameQuery: { name: "New ", method: "TEXT_QUERY_METHOD_STARTS_WITH" } }] })
    ).result.map((p: { name: string }) => p.name);
    expect(sorted(names)).toEqual(["New connect ownerA", "New rest ownerA"]);
  });
});
