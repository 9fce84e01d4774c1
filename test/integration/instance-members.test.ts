// Instance administrators: add, list, update, remove IAM_OWNER and the
// read-only IAM_OWNER_VIEWER; the last IAM_OWNER stays, also when the
// organization holding every IAM_OWNER would be deleted or deactivated.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { call, createOrg, defaultOrgId, fails, type Machine, machine, ok, VIAS, type World, world } from "../support/orgs.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;
let defaultOrg: string;

beforeAll(async () => {
  t = await startTestServer();
  defaultOrg = await defaultOrgId(t);
  w = await world(t, "im");
});
afterAll(() => t.stop());

const ids = (body: { result?: { userId: string }[] }) => (body.result ?? []).map((m) => m.userId).sort();
const status = async (pat: string, method: string, path: string, body?: unknown) => (await rest(t.url, pat, method, path, body)).status;

describe("the bootstrap administrators", () => {
  it("are listed as IAM_OWNER", async () => {
    for (const via of VIAS) {
      const listed = await ok(t, via, t.pat, "ListInstanceMembers", { query: { asc: true } });
      expect(listed.details.totalResult).toBe("2");
      expect(listed.result).toEqual([
        expect.objectContaining({
          roles: ["IAM_OWNER"],
          userOrganizationId: defaultOrg,
          details: expect.objectContaining({ resourceOwner: t.server.instanceId }),
        }),
        expect.objectContaining({ roles: ["IAM_OWNER"], userOrganizationId: defaultOrg }),
      ]);
      expect(listed.result.map((m: { preferredLoginName: string }) => m.preferredLoginName.split("@")[0]).sort()).toEqual(["admin", "svc-admin"]);
      expect(listed.result.map((m: { displayName: string }) => m.displayName).sort()).toEqual(["Instance Administrator", "svc-admin"]);
    }
  });
});

describe("AddInstanceMember, UpdateInstanceMember, RemoveInstanceMember", () => {
  it("grants read-only, then full administration, then nothing, each at once", async () => {
    for (const via of VIAS) {
      const m = await machine(t, w.orgA, `im-admin-${via}`);
      expect(await status(m.pat, "GET", "/v2/instance")).toBe(403);

      const added = await ok(t, via, t.pat, "AddInstanceMember", { userId: m.userId, roles: ["IAM_OWNER_VIEWER", "IAM_OWNER_VIEWER"] });
      expect(added.creationDate).toEqual(expect.any(String));
      const listed = await ok(t, via, t.pat, "ListInstanceMembers", { queries: [{ userIdQuery: { userId: m.userId } }] });
      expect(listed.result).toEqual([expect.objectContaining({ userId: m.userId, roles: ["IAM_OWNER_VIEWER"], userOrganizationId: w.orgA })]);
      // The viewer reads everything and changes nothing.
      expect(await status(m.pat, "GET", "/v2/instance")).toBe(200);
      expect(await status(m.pat, "GET", `/v2/organizations/${w.orgB}`)).toBe(200);
      expect((await ok(t, via, m.pat, "ListInstanceMembers", {})).result.length).toBeGreaterThanOrEqual(3);
      expect((await ok(t, via, m.pat, "ListOrganizationMembers", { organizationId: w.orgB })).result.length).toBe(1);
      await fails(t, via, m.pat, "CreateOrganization", { name: `im viewer ${via}` }, "permission_denied");
      await fails(t, via, m.pat, "UpdateOrganization", { organizationId: w.orgB, name: "no" }, "permission_denied");
      await fails(t, via, m.pat, "AddInstanceMember", { userId: w.plainA.userId, roles: ["IAM_OWNER"] }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, m.pat, "UpdateInstanceMember", { userId: m.userId, roles: ["IAM_OWNER"] }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, m.pat, "RemoveInstanceMember", { userId: m.userId }, "permission_denied", "Errors.Permission.Denied");

      const updated = await ok(t, via, t.pat, "UpdateInstanceMember", { userId: m.userId, roles: ["IAM_OWNER"] });
      expect(updated.changeDate).toEqual(expect.any(String));
      await ok(t, via, m.pat, "CreateOrganization", { name: `im by new owner ${via}` });
      expect((await ok(t, via, t.pat, "ListInstanceMembers", { queries: [{ userIdQuery: { userId: m.userId } }] })).result[0].roles).toEqual(["IAM_OWNER"]);

      const removed = await ok(t, via, m.pat, "RemoveInstanceMember", { userId: m.userId });
      expect(removed.deletionDate).toEqual(expect.any(String));
      expect(await status(m.pat, "GET", "/v2/instance")).toBe(403);
      const events = await t.server.db.prisma.event.findMany({
        where: { type: { startsWith: "instance.member." }, payload: { path: ["userId"], equals: m.userId } },
      });
      expect(events.map((e) => e.type).sort()).toEqual(["instance.member.added", "instance.member.changed", "instance.member.removed"]);
      expect(events.find((e) => e.type === "instance.member.removed")?.editorUserId).toBe(m.userId);
    }
  });

  it("over gRPC", async () => {
    const m = await machine(t, w.orgB, "im-grpc");
    const client = createClient(InstanceService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${t.pat}` };
    await client.addInstanceMember({ userId: m.userId, roles: ["IAM_OWNER_VIEWER"] }, { headers });
    const listed = await client.listInstanceMembers({ queries: [{ query: { case: "roleQuery", value: { role: "IAM_OWNER_VIEWER" } } }] }, { headers });
    expect(listed.result.map((r) => r.userId)).toEqual([m.userId]);
    await client.updateInstanceMember({ userId: m.userId, roles: ["IAM_OWNER", "IAM_OWNER_VIEWER"] }, { headers });
    await client.removeInstanceMember({ userId: m.userId }, { headers });
    const err = await client.removeInstanceMember({ userId: m.userId }, { headers }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
    const denied = await client.listInstanceMembers({}, { headers: { authorization: `Bearer ${w.ownerA.pat}` } }).catch((e: unknown) => ConnectError.from(e));
    expect((denied as ConnectError).code).toBe(Code.PermissionDenied);
  });

  it("rejects duplicates, unknown users, missing members and invalid roles", async () => {
    const admins = await ok(t, "rest", t.pat, "ListInstanceMembers", {});
    const someOwner = admins.result[0].userId as string;
    for (const via of VIAS) {
      await fails(t, via, t.pat, "AddInstanceMember", { userId: someOwner, roles: ["IAM_OWNER"] }, "already_exists", "Errors.Instance.Member.AlreadyExists");
      await fails(t, via, t.pat, "AddInstanceMember", { userId: "no-such-user", roles: ["IAM_OWNER"] }, "not_found", "Errors.User.NotFound");
      await fails(t, via, t.pat, "AddInstanceMember", { userId: w.plainA.userId, roles: [] }, "invalid_argument", "Errors.Member.Roles.Missing");
      await fails(t, via, t.pat, "AddInstanceMember", { userId: w.plainA.userId, roles: ["ORG_OWNER"] }, "invalid_argument", "Errors.Member.Role.Invalid");
      await fails(t, via, t.pat, "UpdateInstanceMember", { userId: w.plainA.userId, roles: ["IAM_OWNER"] }, "not_found", "Errors.Instance.Member.NotFound");
      await fails(t, via, t.pat, "UpdateInstanceMember", { userId: someOwner, roles: ["SUPERUSER"] }, "invalid_argument", "Errors.Member.Role.Invalid");
      await fails(t, via, t.pat, "RemoveInstanceMember", { userId: w.plainA.userId }, "not_found", "Errors.Instance.Member.NotFound");
      await fails(t, via, t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "ORG_OWNER" } }] }, "invalid_argument", "Errors.Member.Role.Invalid");
      await fails(t, via, t.pat, "ListInstanceMembers", { query: { limit: 5000 } }, "invalid_argument", "Errors.List.LimitTooHigh");
    }
  });

  it("pages and filters by role", async () => {
    const viewers: Machine[] = [];
    for (let i = 0; i < 3; i++) {
      const m = await machine(t, w.orgB, `im-viewer-${i}`);
      await ok(t, "rest", t.pat, "AddInstanceMember", { userId: m.userId, roles: ["IAM_OWNER_VIEWER"] });
      viewers.push(m);
    }
    for (const via of VIAS) {
      const byRole = await ok(t, via, t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER_VIEWER" } }], query: { asc: true, limit: 2 } });
      expect(byRole.details.totalResult).toBe("3");
      expect(byRole.result.map((m: { userId: string }) => m.userId)).toEqual(viewers.slice(0, 2).map((v) => v.userId));
      const newest = await ok(t, via, t.pat, "ListInstanceMembers", { query: { limit: 1 } });
      expect(ids(newest)).toEqual([viewers[2]?.userId]);
      const owners = await ok(t, via, t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER" } }] });
      expect(owners.details.totalResult).toBe("2");
    }
    for (const v of viewers) await ok(t, "rest", t.pat, "RemoveInstanceMember", { userId: v.userId });
  });

  it("is denied to organization roles, whatever the organization", async () => {
    for (const via of VIAS) {
      for (const caller of [w.ownerA, w.userManagerA, w.auditorA, w.plainA]) {
        await fails(t, via, caller.pat, "ListInstanceMembers", {}, "permission_denied", "Errors.Permission.Denied");
        await fails(t, via, caller.pat, "AddInstanceMember", { userId: caller.userId, roles: ["IAM_OWNER"] }, "permission_denied", "Errors.Permission.Denied");
        await fails(
          t,
          via,
          caller.pat,
          "UpdateInstanceMember",
          { userId: caller.userId, roles: ["IAM_OWNER"] },
          "permission_denied",
          "Errors.Permission.Denied",
        );
        await fails(t, via, caller.pat, "RemoveInstanceMember", { userId: caller.userId }, "permission_denied", "Errors.Permission.Denied");
      }
      await fails(t, via, undefined, "ListInstanceMembers", {}, "unauthenticated");
    }
  });
});

describe("the last IAM_OWNER", () => {
  it("cannot be removed or demoted, nor lost with its organization", async () => {
    const bootstrapOwners = ids(await ok(t, "rest", t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER" } }] }));
    expect(bootstrapOwners).toHaveLength(2);
    const orgE = await createOrg(t, "Sole Owners");
    const last = await machine(t, orgE, "im-last-owner");
    await ok(t, "rest", t.pat, "AddInstanceMember", { userId: last.userId, roles: ["IAM_OWNER"] });
    // The new owner removes the bootstrap owners (the bootstrap PAT goes with its rights).
    for (const id of bootstrapOwners) await ok(t, "connect", last.pat, "RemoveInstanceMember", { userId: id });
    expect(await status(t.pat, "GET", "/v2/instance")).toBe(403);

    for (const via of VIAS) {
      await fails(t, via, last.pat, "RemoveInstanceMember", { userId: last.userId }, "failed_precondition", "Errors.Instance.Member.LastOwner");
      await fails(
        t,
        via,
        last.pat,
        "UpdateInstanceMember",
        { userId: last.userId, roles: ["IAM_OWNER_VIEWER"] },
        "failed_precondition",
        "Errors.Instance.Member.LastOwner",
      );
      // Its organization holds every IAM_OWNER: it can be neither deleted nor deactivated.
      await fails(t, via, last.pat, "DeleteOrganization", { organizationId: orgE }, "failed_precondition", "Errors.Org.LastInstanceOwners");
      await fails(t, via, last.pat, "DeactivateOrganization", { organizationId: orgE }, "failed_precondition", "Errors.Org.LastInstanceOwners");
    }
    // Adding the viewer role while keeping IAM_OWNER is fine.
    await ok(t, "rest", last.pat, "UpdateInstanceMember", { userId: last.userId, roles: ["IAM_OWNER_VIEWER", "IAM_OWNER"] });
    // With an owner elsewhere again, all of it is allowed.
    for (const id of bootstrapOwners) await ok(t, "rest", last.pat, "AddInstanceMember", { userId: id, roles: ["IAM_OWNER"] });
    expect(await status(t.pat, "GET", "/v2/instance")).toBe(200);
    await ok(t, "rest", t.pat, "DeactivateOrganization", { organizationId: orgE });
    await ok(t, "rest", t.pat, "DeleteOrganization", { organizationId: orgE });
    expect(ids(await ok(t, "rest", t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER" } }] }))).toEqual(bootstrapOwners);
  });

  it("stays when two owners remove each other at the same time", async () => {
    const a = await machine(t, w.orgA, "im-race-a");
    const b = await machine(t, w.orgB, "im-race-b");
    await ok(t, "rest", t.pat, "AddInstanceMember", { userId: a.userId, roles: ["IAM_OWNER"] });
    await ok(t, "rest", t.pat, "AddInstanceMember", { userId: b.userId, roles: ["IAM_OWNER"] });
    const owners = ids(await ok(t, "rest", t.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER" } }] }));
    // Everyone but a and b steps down first, then a and b race.
    for (const id of owners.filter((id) => id !== a.userId && id !== b.userId)) await ok(t, "rest", a.pat, "RemoveInstanceMember", { userId: id });
    const replies = await Promise.all([
      call(t, "rest", a.pat, "RemoveInstanceMember", { userId: b.userId }),
      call(t, "rest", b.pat, "RemoveInstanceMember", { userId: a.userId }),
    ]);
    const codes = replies.map((r) => r.code);
    expect(codes.filter((c) => c === "ok")).toHaveLength(1);
    // The loser either met the last-owner rule or had already lost its rights.
    expect(["failed_precondition", "permission_denied"]).toContain(codes.find((c) => c !== "ok"));
    const survivor = codes[0] === "ok" ? a : b;
    const left = ids(await ok(t, "rest", survivor.pat, "ListInstanceMembers", { queries: [{ roleQuery: { role: "IAM_OWNER" } }] }));
    expect(left).toEqual([survivor.userId]);
  });
});
