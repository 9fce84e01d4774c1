// Project grants: a project shared with another organization, which may then
// assign the granted roles only. Create (roles must exist), list from both
// sides ("granted to my org"), update (dropped roles leave the receiving
// org's user grants), deactivate/reactivate, delete (cascading to the user
// grants through it), and the allow/deny table.

import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import { call, fails, ok, type ProjectWorld, project, projectWorld, VIAS } from "../support/projects.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: ProjectWorld;

beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "pg");
});
afterAll(() => t.stop());

describe("project grants", () => {
  it("creates, lists from both sides, updates, deactivates, reactivates and deletes", async () => {
    for (const via of VIAS) {
      const projectId = await project(t, w.orgA, `Shared ${via}`, ["read", "write", "admin"]);
      await fails(
        t,
        via,
        w.ownerA.pat,
        "CreateProjectGrant",
        { projectId, grantedOrganizationId: w.orgB, roleKeys: ["read", "nope"] },
        "invalid_argument",
        "Errors.Project.Role.Unknown",
      );
      await fails(
        t,
        via,
        w.ownerA.pat,
        "CreateProjectGrant",
        { projectId, grantedOrganizationId: w.orgA, roleKeys: [] },
        "invalid_argument",
        "Errors.Project.Grant.OwnOrg",
      );
      await fails(t, via, w.ownerA.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: "nope", roleKeys: [] }, "not_found", "Errors.Org.NotFound");
      const created = await ok(t, via, w.ppmA.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["read", "write", "read"] });
      expect(created).toEqual({ projectGrantId: expect.any(String), creationDate: expect.any(String) });
      await fails(
        t,
        via,
        w.ownerA.pat,
        "CreateProjectGrant",
        { projectId, grantedOrganizationId: w.orgB, roleKeys: [] },
        "already_exists",
        "Errors.Project.Grant.AlreadyExists",
      );

      // The receiving org sees it under "granted to my org".
      const mine = await ok(t, via, w.ownerB.pat, "ListProjectGrants", {
        queries: [{ grantedOrganizationIdQuery: { grantedOrganizationId: w.orgB } }, { projectIdQuery: { projectId } }],
      });
      expect(mine.result).toEqual([
        {
          id: created.projectGrantId,
          projectId,
          grantedOrganizationId: w.orgB,
          roleKeys: ["read", "write"],
          state: "PROJECT_STATE_ACTIVE",
          details: expect.objectContaining({ resourceOwner: w.orgA }),
          projectName: `Shared ${via}`,
          projectOrganizationId: w.orgA,
          grantedOrganizationName: "pg Beta",
        },
      ]);
      const fromOwner = await ok(t, via, w.auditorA.pat, "ListProjectGrants", { queries: [{ projectIdQuery: { projectId } }] });
      expect(fromOwner.result.map((g: { id: string }) => g.id)).toEqual([created.projectGrantId]);
      const byRole = await ok(t, via, w.ownerA.pat, "ListProjectGrants", {
        queries: [{ roleKeyQuery: { roleKey: "admin" } }, { projectIdQuery: { projectId } }],
      });
      expect(byRole.result ?? []).toEqual([]);

      await fails(
        t,
        via,
        w.ownerA.pat,
        "UpdateProjectGrant",
        { projectId, grantedOrganizationId: w.orgB, roleKeys: ["ghost"] },
        "invalid_argument",
        "Errors.Project.Role.Unknown",
      );
      await ok(t, via, w.ownerA.pat, "UpdateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["read", "admin"] });
      await ok(t, via, w.ownerA.pat, "DeactivateProjectGrant", { projectId, grantedOrganizationId: w.orgB });
      await fails(
        t,
        via,
        w.ownerA.pat,
        "DeactivateProjectGrant",
        { projectId, grantedOrganizationId: w.orgB },
        "failed_precondition",
        "Errors.Project.Grant.AlreadyInactive",
      );
      const inactive = await ok(t, via, w.ownerB.pat, "ListProjectGrants", { queries: [{ projectIdQuery: { projectId } }] });
      expect(inactive.result[0]).toMatchObject({ roleKeys: ["read", "admin"], state: "PROJECT_STATE_INACTIVE" });
      await ok(t, via, w.ownerA.pat, "ReactivateProjectGrant", { projectId, grantedOrganizationId: w.orgB });
      await fails(
        t,
        via,
        w.ownerA.pat,
        "ReactivateProjectGrant",
        { projectId, grantedOrganizationId: w.orgB },
        "failed_precondition",
        "Errors.Project.Grant.NotInactive",
      );
      await ok(t, via, w.ownerA.pat, "DeleteProjectGrant", { projectId, grantedOrganizationId: w.orgB });
      await fails(t, via, w.ownerA.pat, "DeleteProjectGrant", { projectId, grantedOrganizationId: w.orgB }, "not_found", "Errors.Project.Grant.NotFound");
    }
  });

  it("dropping a role from the grant removes it from the receiving org's user grants; deleting the grant removes them", async () => {
    const projectId = await project(t, w.orgA, "Dropping", ["a", "b", "c"]);
    const { projectGrantId } = await ok(t, "rest", w.ownerA.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["a", "b"] });
    const direct = await ok(t, "rest", w.ownerA.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["a", "b", "c"] });
    const received = await ok(t, "rest", w.ownerB.pat, "AddUserGrant", { userId: w.ownerB.userId, projectId, projectGrantId, roleKeys: ["a", "b"] });
    await ok(t, "connect", w.ownerA.pat, "UpdateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["b", "c"] });
    const roles = async () =>
      Object.fromEntries(
        (await ok(t, "rest", t.pat, "ListUserGrants", { queries: [{ projectIdFilter: { projectId } }] })).result.map(
          (g: { grantId: string; roleKeys: string[] }) => [g.grantId, g.roleKeys],
        ),
      );
    // The owner's own (direct) grant keeps its roles.
    expect(await roles()).toEqual({ [direct.grantId]: ["a", "b", "c"], [received.grantId]: ["b"] });
    await ok(t, "connect", w.ownerA.pat, "DeleteProjectGrant", { projectId, grantedOrganizationId: w.orgB });
    expect(await roles()).toEqual({ [direct.grantId]: ["a", "b", "c"] });
  });

  it("over gRPC", async () => {
    const projectId = await project(t, w.orgA, "gRPC grants", ["x"]);
    const client = createClient(ProjectService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${w.ppmA.pat}` };
    const out = await client.createProjectGrant({ projectId, grantedOrganizationId: w.orgB, roleKeys: ["x"] }, { headers });
    const listed = await client.listProjectGrants(
      { queries: [{ query: { case: "projectIdQuery", value: { projectId } } }] },
      { headers: { authorization: `Bearer ${w.ownerB.pat}` } },
    );
    expect(listed.result.map((g) => g.id)).toEqual([out.projectGrantId]);
    await client.updateProjectGrant({ projectId, grantedOrganizationId: w.orgB, roleKeys: [] }, { headers });
    await client.deleteProjectGrant({ projectId, grantedOrganizationId: w.orgB }, { headers });
  });
});

describe("allow/deny", () => {
  type Caller = "ownerA" | "ppmA" | "userManagerA" | "auditorA" | "plainA" | "ownerB";
  const CALLERS: Caller[] = ["ownerA", "ppmA", "userManagerA", "auditorA", "plainA", "ownerB"];
  const code = (o: "ok" | "denied" | "hidden") => (o === "ok" ? "ok" : o === "denied" ? "permission_denied" : "not_found");
  const WRITE = { ownerA: "ok", ppmA: "ok", userManagerA: "denied", auditorA: "denied", plainA: "hidden", ownerB: "hidden" } as const;

  it("managing grants: the owning org's ORG_OWNER and ORG_PROJECT_PERMISSION_MANAGER; the receiving org cannot", async () => {
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const projectId = await project(t, w.orgA, `GrantPerm ${via} ${caller}`, ["r"]);
        const create = await call(t, via, w[caller].pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
        expect({ via, caller, rpc: "Create", code: create.code }).toEqual({ via, caller, rpc: "Create", code: code(WRITE[caller]) });
        if (create.code !== "ok") await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
        const target = { projectId, grantedOrganizationId: w.orgB };
        for (const [rpc, req] of [
          ["UpdateProjectGrant", { ...target, roleKeys: [] }],
          ["DeactivateProjectGrant", target],
          ["ReactivateProjectGrant", target],
          ["DeleteProjectGrant", target],
        ] as const) {
          const reply = await call(t, via, w[caller].pat, rpc, req);
          expect({ via, caller, rpc, code: reply.code }).toEqual({ via, caller, rpc, code: code(WRITE[caller]) });
        }
      }
    }
  });

  it("listing grants: readers of either side; others denied", async () => {
    const projectId = await project(t, w.orgA, "GrantList", ["r"]);
    await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["r"] });
    const LIST = { ownerA: "ok", ppmA: "ok", userManagerA: "denied", auditorA: "ok", plainA: "denied", ownerB: "ok" } as const;
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const reply = await call(t, via, w[caller].pat, "ListProjectGrants", { queries: [{ projectIdQuery: { projectId } }] });
        expect({ via, caller, code: reply.code }).toEqual({ via, caller, code: code(LIST[caller]) });
        if (reply.code === "ok") expect(reply.body.result).toHaveLength(1);
      }
    }
    // B's owner sees only grants received by B.
    const all = await ok(t, "rest", w.ownerB.pat, "ListProjectGrants", {});
    expect(new Set(all.result.map((g: { grantedOrganizationId: string }) => g.grantedOrganizationId))).toEqual(new Set([w.orgB]));
  });
});
