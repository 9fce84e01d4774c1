// Organization members: add, list (paging, filters), update roles, remove;
// roles validated, the last ORG_OWNER kept, role changes effective at once;
// the allow/deny table of every OrganizationService RPC per org role.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { addMember, call, createOrg, defaultOrgId, fails, type Machine, machine, ok, type Rpc, VIAS, type World, world } from "../support/orgs.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;
let defaultOrg: string;

beforeAll(async () => {
  t = await startTestServer();
  defaultOrg = await defaultOrgId(t);
  w = await world(t, "mb");
});
afterAll(() => t.stop());

const memberIds = (body: { result?: { userId: string }[] }) => (body.result ?? []).map((m) => m.userId).sort();

describe("AddOrganizationMember", () => {
  it("adds users of the organization and of other organizations, deduplicating roles", async () => {
    for (const via of VIAS) {
      const local = await machine(t, w.orgA, `mb-local-${via}`);
      const outsider = await machine(t, defaultOrg, `mb-outsider-${via}`);
      const out = await ok(t, via, w.ownerA.pat, "AddOrganizationMember", {
        organizationId: w.orgA,
        userId: local.userId,
        roles: ["ORG_AUDITOR", "ORG_PROJECT_PERMISSION_MANAGER", "ORG_AUDITOR"],
      });
      expect(out.creationDate).toEqual(expect.any(String));
      await ok(t, via, t.pat, "AddOrganizationMember", { organizationId: w.orgA, userId: outsider.userId, roles: ["ORG_USER_MANAGER"] });
      const listed = await ok(t, via, w.ownerA.pat, "ListOrganizationMembers", {
        organizationId: w.orgA,
        queries: [{ userIdQuery: { userId: local.userId } }],
      });
      expect(listed.result).toEqual([
        expect.objectContaining({
          userId: local.userId,
          roles: ["ORG_AUDITOR", "ORG_PROJECT_PERMISSION_MANAGER"],
          displayName: `mb-local-${via}`,
          preferredLoginName: expect.stringMatching(new RegExp(`^mb-local-${via}@mb-alpha\\.`)),
          userOrganizationId: w.orgA,
          details: expect.objectContaining({ resourceOwner: w.orgA }),
        }),
      ]);
      const other = await ok(t, via, w.ownerA.pat, "ListOrganizationMembers", {
        organizationId: w.orgA,
        queries: [{ userIdQuery: { userId: outsider.userId } }],
      });
      expect(other.result[0]).toMatchObject({ userId: outsider.userId, userOrganizationId: defaultOrg, roles: ["ORG_USER_MANAGER"] });
      // The role works at once: the outsider manages A's users but still cannot read its own organization's.
      expect((await rest(t.url, outsider.pat, "POST", "/v2/users", { queries: [{ organizationIdQuery: { organizationId: w.orgA } }] })).status).toBe(200);
      expect((await rest(t.url, outsider.pat, "GET", `/v2/organizations/${defaultOrg}`)).status).toBe(404);
    }
  });

  it("over gRPC", async () => {
    const m = await machine(t, w.orgB, "mb-grpc");
    const client = createClient(OrganizationService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${w.ownerB.pat}` };
    await client.addOrganizationMember({ organizationId: w.orgB, userId: m.userId, roles: ["ORG_AUDITOR"] }, { headers });
    const listed = await client.listOrganizationMembers(
      { organizationId: w.orgB, queries: [{ query: { case: "roleQuery", value: { role: "ORG_AUDITOR" } } }] },
      { headers },
    );
    expect(listed.result.map((r) => r.userId)).toEqual([m.userId]);
    expect(listed.details?.totalResult).toBe(1n);
    await client.updateOrganizationMember({ organizationId: w.orgB, userId: m.userId, roles: ["ORG_OWNER"] }, { headers });
    await client.removeOrganizationMember({ organizationId: w.orgB, userId: m.userId }, { headers });
    const err = await client.removeOrganizationMember({ organizationId: w.orgB, userId: m.userId }, { headers }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("rejects duplicates, unknown users and organizations, and invalid roles", async () => {
    for (const via of VIAS) {
      const add = (userId: string, roles: string[], organizationId = w.orgA) => ({ organizationId, userId, roles });
      await fails(t, via, t.pat, "AddOrganizationMember", add(w.ownerA.userId, ["ORG_OWNER"]), "already_exists", "Errors.Org.Member.AlreadyExists");
      await fails(t, via, t.pat, "AddOrganizationMember", add("no-such-user", ["ORG_OWNER"]), "not_found", "Errors.User.NotFound");
      await fails(t, via, t.pat, "AddOrganizationMember", add(w.plainA.userId, ["ORG_OWNER"], "no-such-org"), "not_found", "Errors.Org.NotFound");
      await fails(t, via, t.pat, "AddOrganizationMember", add(w.plainA.userId, []), "invalid_argument", "Errors.Member.Roles.Missing");
      await fails(t, via, t.pat, "AddOrganizationMember", add(w.plainA.userId, ["IAM_OWNER"]), "invalid_argument", "Errors.Member.Role.Invalid");
      await fails(t, via, t.pat, "AddOrganizationMember", add(w.plainA.userId, ["org_owner"]), "invalid_argument", "Errors.Member.Role.Invalid");
      await fails(t, via, t.pat, "AddOrganizationMember", add("", ["ORG_OWNER"]), "invalid_argument", "Errors.User.Id.Missing");
    }
  });
});

describe("ListOrganizationMembers", () => {
  let org: string;
  let users: Machine[];

  beforeAll(async () => {
    org = await createOrg(t, "Paged Members");
    users = [];
    for (let i = 0; i < 5; i++) users.push(await machine(t, org, `mb-paged-${i}`));
    for (const [i, u] of users.entries()) await addMember(t, org, u.userId, i % 2 === 0 ? ["ORG_OWNER"] : ["ORG_AUDITOR", "ORG_USER_MANAGER"]);
  });

  it("pages in creation order, ascending or descending, with the total", async () => {
    for (const via of VIAS) {
      const first = await ok(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, query: { limit: 2, asc: true } });
      expect(first.details.totalResult).toBe("5");
      expect(first.result.map((m: { userId: string }) => m.userId)).toEqual([users[0]?.userId, users[1]?.userId]);
      const rest_ = await ok(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, query: { offset: "2", limit: 10, asc: true } });
      expect(rest_.result.map((m: { userId: string }) => m.userId)).toEqual(users.slice(2).map((u) => u.userId));
      const desc = await ok(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, query: { limit: 1 } });
      expect(desc.result.map((m: { userId: string }) => m.userId)).toEqual([users[4]?.userId]);
      await fails(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, query: { limit: 1001 } }, "invalid_argument", "Errors.List.LimitTooHigh");
    }
  });

  it("filters by user id and by role", async () => {
    for (const via of VIAS) {
      const byRole = await ok(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, queries: [{ roleQuery: { role: "ORG_USER_MANAGER" } }] });
      expect(memberIds(byRole)).toEqual([users[1]?.userId, users[3]?.userId].sort());
      const both = await ok(t, via, t.pat, "ListOrganizationMembers", {
        organizationId: org,
        queries: [{ roleQuery: { role: "ORG_OWNER" } }, { userIdQuery: { userId: users[2]?.userId } }],
      });
      expect(memberIds(both)).toEqual([users[2]?.userId]);
      const none = await ok(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, queries: [{ userIdQuery: { userId: w.ownerA.userId } }] });
      expect(none.result ?? []).toEqual([]);
      await fails(
        t,
        via,
        t.pat,
        "ListOrganizationMembers",
        { organizationId: org, queries: [{ roleQuery: { role: "NOPE" } }] },
        "invalid_argument",
        "Errors.Member.Role.Invalid",
      );
      await fails(t, via, t.pat, "ListOrganizationMembers", { organizationId: org, queries: [{}] }, "invalid_argument", "Errors.Query.Empty");
    }
  });
});

describe("UpdateOrganizationMember and RemoveOrganizationMember", () => {
  it("replaces roles and removes, effective at once", async () => {
    for (const via of VIAS) {
      const m = await machine(t, w.orgA, `mb-changing-${via}`);
      const canListUsers = async () => (await rest(t.url, m.pat, "POST", "/v2/users", {})).status;
      await ok(t, via, w.ownerA.pat, "AddOrganizationMember", { organizationId: w.orgA, userId: m.userId, roles: ["ORG_AUDITOR"] });
      expect(await canListUsers()).toBe(200);
      expect((await call(t, "rest", m.pat, "UpdateOrganization", { organizationId: w.orgA, name: "x" })).code).toBe("permission_denied");

      const out = await ok(t, via, w.ownerA.pat, "UpdateOrganizationMember", {
        organizationId: w.orgA,
        userId: m.userId,
        roles: ["ORG_PROJECT_PERMISSION_MANAGER", "ORG_OWNER"],
      });
      expect(out.changeDate).toEqual(expect.any(String));
      const listed = await ok(t, via, w.ownerA.pat, "ListOrganizationMembers", { organizationId: w.orgA, queries: [{ userIdQuery: { userId: m.userId } }] });
      expect(listed.result[0].roles).toEqual(["ORG_PROJECT_PERMISSION_MANAGER", "ORG_OWNER"]);
      expect((await call(t, "rest", m.pat, "UpdateOrganization", { organizationId: w.orgA, name: "mb Alpha" })).code).toBe("ok");

      const removed = await ok(t, via, w.ownerA.pat, "RemoveOrganizationMember", { organizationId: w.orgA, userId: m.userId });
      expect(removed.deletionDate).toEqual(expect.any(String));
      expect(await canListUsers()).toBe(403);
      expect((await call(t, "rest", m.pat, "GetOrganizationByID", { organizationId: w.orgA })).code).toBe("not_found");
      const events = await t.server.db.prisma.event.findMany({
        where: { aggregateId: w.orgA, payload: { path: ["userId"], equals: m.userId } },
        orderBy: { createdAt: "asc" },
      });
      expect(events.map((e) => e.type)).toEqual(["org.member.added", "org.member.changed", "org.member.removed"]);
      expect(events[1]?.editorUserId).toBe(w.ownerA.userId);
    }
  });

  it("answers NotFound for a user who is not a member, and validates roles", async () => {
    for (const via of VIAS) {
      await fails(
        t,
        via,
        t.pat,
        "UpdateOrganizationMember",
        { organizationId: w.orgA, userId: w.plainA.userId, roles: ["ORG_OWNER"] },
        "not_found",
        "Errors.Org.Member.NotFound",
      );
      await fails(t, via, t.pat, "RemoveOrganizationMember", { organizationId: w.orgA, userId: w.plainA.userId }, "not_found", "Errors.Org.Member.NotFound");
      await fails(
        t,
        via,
        t.pat,
        "UpdateOrganizationMember",
        { organizationId: w.orgA, userId: w.auditorA.userId, roles: [] },
        "invalid_argument",
        "Errors.Member.Roles.Missing",
      );
      await fails(
        t,
        via,
        t.pat,
        "UpdateOrganizationMember",
        { organizationId: w.orgA, userId: w.auditorA.userId, roles: ["IAM_OWNER_VIEWER"] },
        "invalid_argument",
        "Errors.Member.Role.Invalid",
      );
    }
  });

  it("keeps the last ORG_OWNER", async () => {
    const org = await createOrg(t, "One Owner");
    const [first, second] = [await machine(t, org, "mb-owner-1"), await machine(t, org, "mb-owner-2")];
    await addMember(t, org, first.userId, ["ORG_OWNER"]);
    await addMember(t, org, second.userId, ["ORG_AUDITOR"]);
    for (const via of VIAS) {
      await fails(
        t,
        via,
        first.pat,
        "RemoveOrganizationMember",
        { organizationId: org, userId: first.userId },
        "failed_precondition",
        "Errors.Org.Member.LastOwner",
      );
      await fails(
        t,
        via,
        t.pat,
        "UpdateOrganizationMember",
        { organizationId: org, userId: first.userId, roles: ["ORG_AUDITOR"] },
        "failed_precondition",
        "Errors.Org.Member.LastOwner",
      );
      // Keeping ORG_OWNER among other roles is fine.
      await ok(t, via, t.pat, "UpdateOrganizationMember", { organizationId: org, userId: first.userId, roles: ["ORG_AUDITOR", "ORG_OWNER"] });
    }
    // With a second owner, the first may step down.
    await ok(t, "rest", first.pat, "UpdateOrganizationMember", { organizationId: org, userId: second.userId, roles: ["ORG_OWNER"] });
    await ok(t, "rest", first.pat, "RemoveOrganizationMember", { organizationId: org, userId: first.userId });
    await fails(
      t,
      "rest",
      second.pat,
      "UpdateOrganizationMember",
      { organizationId: org, userId: second.userId, roles: ["ORG_USER_MANAGER"] },
      "failed_precondition",
      "Errors.Org.Member.LastOwner",
    );
  });

  it("keeps one owner when two owners remove each other at the same time", async () => {
    const org = await createOrg(t, "Racing Owners");
    const [a, b] = [await machine(t, org, "mb-race-a"), await machine(t, org, "mb-race-b")];
    await addMember(t, org, a.userId, ["ORG_OWNER"]);
    await addMember(t, org, b.userId, ["ORG_OWNER"]);
    const replies = await Promise.all([
      call(t, "rest", a.pat, "RemoveOrganizationMember", { organizationId: org, userId: b.userId }),
      call(t, "rest", b.pat, "RemoveOrganizationMember", { organizationId: org, userId: a.userId }),
    ]);
    // The loser either saw the winner's owner as the last one, or (authenticated after the
    // winner's commit) is no member any more and finds the organization hidden.
    const codes = replies.map((r) => r.code);
    expect(codes.filter((c) => c === "ok")).toHaveLength(1);
    expect(["failed_precondition", "not_found"]).toContain(codes.find((c) => c !== "ok"));
    const owners = await ok(t, "rest", t.pat, "ListOrganizationMembers", { organizationId: org, queries: [{ roleQuery: { role: "ORG_OWNER" } }] });
    expect(owners.details.totalResult).toBe("1");
  });
});

describe("allow/deny table per org role (target: organization A)", () => {
  type Caller = "iam" | "ownerA" | "userManagerA" | "auditorA" | "plainA" | "ownerB";
  const pat = (c: Caller) => (c === "iam" ? t.pat : w[c].pat);
  const ALLOWED = "ok";
  const DENIED = "permission_denied";
  const HIDDEN = "not_found";

  // Requests that leave A as it was (or fail before changing anything). Deactivate and
  // delete get their allow/deny cases in orgs-lifecycle.test.ts.
  const requests = (): Record<string, () => Record<string, unknown>> => ({
    GetOrganizationByID: () => ({ organizationId: w.orgA }),
    ListOrganizationMetadata: () => ({ organizationId: w.orgA }),
    ListOrganizationMembers: () => ({ organizationId: w.orgA }),
    // Unknown key: a permitted caller reaches the NotFound of the key, a forbidden one stops earlier.
    DeleteOrganizationMetadata: () => ({ organizationId: w.orgA, keys: ["absent-key"] }),
    SetOrganizationMetadata: () => ({ organizationId: w.orgA, metadata: [{ key: "table", value: "dGFibGU=" }] }),
    UpdateOrganization: () => ({ organizationId: w.orgA, name: "mb Alpha" }),
    AddOrganizationMember: () => ({ organizationId: w.orgA, userId: w.ownerA.userId, roles: ["ORG_OWNER"] }),
    UpdateOrganizationMember: () => ({ organizationId: w.orgA, userId: w.auditorA.userId, roles: ["ORG_AUDITOR"] }),
    RemoveOrganizationMember: () => ({ organizationId: w.orgA, userId: w.plainA.userId }),
  });

  // What each caller gets; for write RPCs "ok" may show as the request's own domain error.
  const table: Record<string, Record<Caller, string>> = {
    GetOrganizationByID: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: ALLOWED, auditorA: ALLOWED, plainA: HIDDEN, ownerB: HIDDEN },
    ListOrganizationMetadata: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: ALLOWED, auditorA: ALLOWED, plainA: HIDDEN, ownerB: HIDDEN },
    ListOrganizationMembers: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: DENIED, auditorA: ALLOWED, plainA: HIDDEN, ownerB: HIDDEN },
    DeleteOrganizationMetadata: {
      iam: "not_found:Errors.Org.Metadata.NotFound",
      ownerA: "not_found:Errors.Org.Metadata.NotFound",
      userManagerA: DENIED,
      auditorA: DENIED,
      plainA: HIDDEN,
      ownerB: HIDDEN,
    },
    SetOrganizationMetadata: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: DENIED, auditorA: DENIED, plainA: HIDDEN, ownerB: HIDDEN },
    UpdateOrganization: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: DENIED, auditorA: DENIED, plainA: HIDDEN, ownerB: HIDDEN },
    AddOrganizationMember: { iam: "already_exists", ownerA: "already_exists", userManagerA: DENIED, auditorA: DENIED, plainA: HIDDEN, ownerB: HIDDEN },
    UpdateOrganizationMember: { iam: ALLOWED, ownerA: ALLOWED, userManagerA: DENIED, auditorA: DENIED, plainA: HIDDEN, ownerB: HIDDEN },
    RemoveOrganizationMember: {
      iam: "not_found:Errors.Org.Member.NotFound",
      ownerA: "not_found:Errors.Org.Member.NotFound",
      userManagerA: DENIED,
      auditorA: DENIED,
      plainA: HIDDEN,
      ownerB: HIDDEN,
    },
  };

  for (const [rpc, row] of Object.entries(table)) {
    it(`${rpc}`, async () => {
      for (const via of VIAS) {
        for (const [caller, expected] of Object.entries(row) as [Caller, string][]) {
          const reply = await call(t, via, pat(caller), rpc as Rpc, requests()[rpc]?.() ?? {});
          const [code, reason] = expected.split(":");
          const got = reason ? `${reply.code}:${reply.reason}` : reply.code;
          const want = reason ? `${code}:${reason}` : code;
          expect({ rpc, via, caller, result: got }).toEqual({ rpc, via, caller, result: want });
          if (!reason && expected === HIDDEN) expect(reply.reason).toBe("Errors.Org.NotFound");
        }
      }
    });
  }

  it("ListOrganizations shows each caller only its own organization", async () => {
    for (const via of VIAS) {
      for (const caller of ["ownerA", "userManagerA", "auditorA"] as const) {
        expect(memberIds({ result: (await ok(t, via, pat(caller), "ListOrganizations", {})).result.map((o: { id: string }) => ({ userId: o.id })) })).toEqual([
          w.orgA,
        ]);
      }
      expect(memberIds({ result: (await ok(t, via, pat("ownerB"), "ListOrganizations", {})).result.map((o: { id: string }) => ({ userId: o.id })) })).toEqual([
        w.orgB,
      ]);
      await fails(t, via, pat("plainA"), "ListOrganizations", {}, DENIED);
    }
  });

  it("members of B learn nothing about A's members or metadata, and cannot touch them", async () => {
    for (const via of VIAS) {
      for (const rpc of Object.keys(table) as Rpc[]) {
        const reply = await call(t, via, w.ownerB.pat, rpc, requests()[rpc]?.() ?? {});
        expect({ rpc, code: reply.code, reason: reply.reason }).toEqual({ rpc, code: HIDDEN, reason: "Errors.Org.NotFound" });
      }
    }
  });
});
