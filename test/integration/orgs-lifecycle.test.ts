// OrganizationService: create (with first admins, all or nothing), get,
// list, rename, deactivate/reactivate, delete with everything it owns; over
// REST and Connect JSON (gRPC for a subset), with allowed and denied callers.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { addMember, call, createOrg, defaultOrgId, fails, machine, ok, VIAS, type World, world } from "../support/orgs.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;
let defaultOrg: string;
let host: string;

beforeAll(async () => {
  t = await startTestServer({ SVC_EXTERNAL_URL: "https://id.example.com" });
  defaultOrg = await defaultOrgId(t);
  host = "id.example.com";
  w = await world(t, "lc");
});
afterAll(() => t.stop());

const STRONG = "Str0ng!Passw0rd";
const grpc = () => createClient(OrganizationService, createGrpcTransport({ baseUrl: t.url }));
const asAdmin = () => ({ headers: { authorization: `Bearer ${t.pat}` } });

describe("CreateOrganization", () => {
  it("creates an organization with a primary domain derived from its name, over REST and Connect", async () => {
    for (const via of VIAS) {
      const out = await ok(t, via, t.pat, "CreateOrganization", { name: `Ünïcode & Sons ${via}` });
      expect(out.organizationId).toEqual(expect.any(String));
      expect(out.details.resourceOwner).toBe(out.organizationId);
      expect(out.createdAdmins ?? []).toEqual([]);
      const got = await ok(t, via, t.pat, "GetOrganizationByID", { organizationId: out.organizationId });
      expect(got.organization).toMatchObject({
        id: out.organizationId,
        name: `Ünïcode & Sons ${via}`,
        state: "ORGANIZATION_STATE_ACTIVE",
        primaryDomain: `unicode-sons-${via}.${host}`,
      });
    }
  });

  it("over gRPC", async () => {
    const out = await grpc().createOrganization({ name: "Grpc Made" }, asAdmin());
    const got = await grpc().getOrganizationByID({ organizationId: out.organizationId }, asAdmin());
    expect(got.organization?.name).toBe("Grpc Made");
    const err = await grpc()
      .createOrganization({ name: "grpc made" }, asAdmin())
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.AlreadyExists);
  });

  it("adds a numeric suffix when the derived domain is taken", async () => {
    const first = await createOrg(t, "Same Slug");
    const second = await createOrg(t, "Same-Slug");
    const third = await createOrg(t, "same  slug!");
    const domains = [];
    for (const id of [first, second, third])
      domains.push((await ok(t, "rest", t.pat, "GetOrganizationByID", { organizationId: id })).organization.primaryDomain);
    expect(domains).toEqual([`same-slug.${host}`, `same-slug-2.${host}`, `same-slug-3.${host}`]);
  });

  it("keeps names unique per instance, case-insensitively", async () => {
    await createOrg(t, "Unique Name");
    for (const via of VIAS) {
      await fails(t, via, t.pat, "CreateOrganization", { name: "Unique Name" }, "already_exists", "Errors.Org.AlreadyExists");
      await fails(t, via, t.pat, "CreateOrganization", { name: "  unique NAME " }, "already_exists", "Errors.Org.AlreadyExists");
    }
  });

  it("keeps names and domains unique under concurrent creation", async () => {
    const sameName = await Promise.all(["Racer", "racer", "RACER", "rAcEr"].map((name) => call(t, "rest", t.pat, "CreateOrganization", { name })));
    expect(sameName.map((r) => r.code).sort()).toEqual(["already_exists", "already_exists", "already_exists", "ok"]);
    const sameSlug = await Promise.all(
      ["Slug Race", "Slug-Race", "slug race!", "Slug.Race"].map((name) => ok(t, "rest", t.pat, "CreateOrganization", { name })),
    );
    const domains = await Promise.all(
      sameSlug.map(async (o) => (await ok(t, "rest", t.pat, "GetOrganizationByID", { organizationId: o.organizationId })).organization.primaryDomain),
    );
    expect(domains.sort()).toEqual([`slug-race-2.${host}`, `slug-race-3.${host}`, `slug-race-4.${host}`, `slug-race.${host}`]);
  });

  it("rejects a missing or invalid name", async () => {
    for (const via of VIAS) {
      await fails(t, via, t.pat, "CreateOrganization", { name: "   " }, "invalid_argument", "Errors.Org.Name.Missing");
      await fails(t, via, t.pat, "CreateOrganization", { name: "x".repeat(201) }, "invalid_argument", "Errors.Org.Name.TooLong");
      await fails(t, via, t.pat, "CreateOrganization", { name: "tab\there" }, "invalid_argument", "Errors.Org.Name.Invalid");
    }
  });

  it("creates the first admins: an existing user of another organization and a new human, ORG_OWNER by default", async () => {
    const existing = await machine(t, defaultOrg, "lc-existing-admin");
    const out = await ok(t, "connect", t.pat, "CreateOrganization", {
      name: "With Admins",
      admins: [
        { userId: existing.userId },
        {
          human: {
            profile: { givenName: "Ada", familyName: "Admin" },
            email: { email: "ada@with-admins.test", isVerified: true },
            password: { password: STRONG },
          },
          roles: ["ORG_USER_MANAGER", "ORG_AUDITOR", "ORG_AUDITOR"],
        },
        {
          human: { profile: { givenName: "Bo", familyName: "Boss" }, email: { email: "bo@with-admins.test" } },
          username: "bo.boss",
        },
      ],
    });
    const orgId = out.organizationId;
    expect(out.createdAdmins).toHaveLength(2);
    const [ada, bo] = out.createdAdmins.map((a: { userId: string }) => a.userId);

    const members = await ok(t, "rest", t.pat, "ListOrganizationMembers", { organizationId: orgId, query: { asc: true } });
    expect(members.details.totalResult).toBe("3");
    const roles = Object.fromEntries(members.result.map((m: { userId: string; roles: string[] }) => [m.userId, m.roles]));
    expect(roles).toEqual({ [existing.userId]: ["ORG_OWNER"], [ada]: ["ORG_USER_MANAGER", "ORG_AUDITOR"], [bo]: ["ORG_OWNER"] });

    // The humans live in the new organization, with its domain in their login names.
    const adaUser = (await (await rest(t.url, t.pat, "GET", `/v2/users/${ada}`)).json()) as { user: Record<string, unknown> };
    expect(adaUser.user).toMatchObject({
      username: "ada@with-admins.test",
      details: { resourceOwner: orgId },
      preferredLoginName: `ada@with-admins.test@with-admins.${host}`,
      state: "USER_STATE_ACTIVE",
    });
    const boUser = (await (await rest(t.url, t.pat, "GET", `/v2/users/${bo}`)).json()) as { user: Record<string, unknown> };
    expect(boUser.user).toMatchObject({ username: "bo.boss", state: "USER_STATE_INITIAL" });

    // The existing user stays in its own organization and now acts as ORG_OWNER of the new one.
    expect((await call(t, "rest", existing.pat, "UpdateOrganization", { organizationId: orgId, name: "With Admins Renamed" })).code).toBe("ok");
  });

  it("rejects invalid admins", async () => {
    const human = { profile: { givenName: "A", familyName: "B" }, email: { email: "bad-admin@x.test" } };
    for (const via of VIAS) {
      const create = (admins: unknown[]) => ({ name: `Bad Admins ${via}`, admins });
      await fails(t, via, t.pat, "CreateOrganization", create([{ userId: "no-such-user" }]), "not_found", "Errors.User.NotFound");
      await fails(
        t,
        via,
        t.pat,
        "CreateOrganization",
        create([{ userId: w.plainA.userId, roles: ["IAM_OWNER"] }]),
        "invalid_argument",
        "Errors.Member.Role.Invalid",
      );
      await fails(
        t,
        via,
        t.pat,
        "CreateOrganization",
        create([{ userId: w.plainA.userId }, { userId: w.plainA.userId }]),
        "invalid_argument",
        "Errors.Org.Admin.Duplicate",
      );
      await fails(t, via, t.pat, "CreateOrganization", create([{ roles: ["ORG_OWNER"] }]), "invalid_argument", "Errors.Org.Admin.Missing");
      await fails(t, via, t.pat, "CreateOrganization", create([{ userId: w.plainA.userId, username: "x" }]), "invalid_argument", "Errors.Org.Admin.Username");
      await fails(
        t,
        via,
        t.pat,
        "CreateOrganization",
        create([{ human: { ...human, password: { password: "weak" } } }]),
        "invalid_argument",
        "Errors.User.Password.Complexity",
      );
      await fails(
        t,
        via,
        t.pat,
        "CreateOrganization",
        create([{ human: { ...human, email: { email: "not-an-email" } } }]),
        "invalid_argument",
        "Errors.User.Email.Invalid",
      );
      await fails(t, via, t.pat, "CreateOrganization", create(Array.from({ length: 21 }, () => ({ human }))), "invalid_argument", "Errors.Org.Admins.TooMany");
      // None of these left an organization behind.
      expect((await ok(t, via, t.pat, "ListOrganizations", { queries: [{ nameQuery: { name: `Bad Admins ${via}` } }] })).result ?? []).toEqual([]);
    }
  });

  it("leaves nothing behind when an admin fails after others were created", async () => {
    const db = t.server.db.prisma;
    const counts = async () => ({
      orgs: await db.organization.count(),
      users: await db.user.count(),
      members: await db.orgMember.count(),
      events: await db.event.count(),
    });
    const before = await counts();
    const existing = await machine(t, defaultOrg, "lc-rollback-existing");
    const afterSetup = await counts();
    expect(afterSetup.users).toBe(before.users + 1);
    const request = {
      name: "Rollback Corp",
      admins: [
        { userId: existing.userId },
        { human: { profile: { givenName: "New", familyName: "One" }, email: { email: "new.one@rollback.test" }, password: { password: STRONG } } },
        // Usernames are unique per organization, case-insensitively: this one takes the previous admin's name and fails last.
        { human: { profile: { givenName: "Dup", familyName: "Licate" }, email: { email: "dup@rollback.test" } }, username: "NEW.ONE@rollback.test" },
      ],
    };
    for (const via of VIAS) {
      await fails(t, via, t.pat, "CreateOrganization", request, "already_exists", "Errors.User.AlreadyExists");
      expect(await counts()).toEqual(afterSetup);
    }
    expect(await db.user.findFirst({ where: { usernameLower: "new.one@rollback.test" } })).toBeNull();
    expect(await db.organization.findFirst({ where: { name: "Rollback Corp" } })).toBeNull();
    // The name and the usernames are free: the corrected request succeeds.
    request.admins[2] = { ...request.admins[2], username: "dup.licate" } as (typeof request.admins)[2];
    const out = await ok(t, "rest", t.pat, "CreateOrganization", request);
    expect(out.createdAdmins).toHaveLength(2);
    expect((await ok(t, "rest", t.pat, "GetOrganizationByID", { organizationId: out.organizationId })).organization.primaryDomain).toBe(
      `rollback-corp.${host}`,
    );
  });

  it("needs org.create: only instance owners", async () => {
    for (const via of VIAS) {
      for (const caller of [w.ownerA, w.userManagerA, w.auditorA, w.plainA]) {
        await fails(t, via, caller.pat, "CreateOrganization", { name: `Denied ${via}` }, "permission_denied", "Errors.Permission.Denied");
      }
      await fails(t, via, undefined, "CreateOrganization", { name: `Denied ${via}` }, "unauthenticated");
    }
  });
});

describe("GetOrganizationByID and ListOrganizations", () => {
  it("lets members read their organization and hides the others", async () => {
    for (const via of VIAS) {
      for (const caller of [w.ownerA, w.userManagerA, w.auditorA]) {
        expect((await ok(t, via, caller.pat, "GetOrganizationByID", { organizationId: w.orgA })).organization.id).toBe(w.orgA);
        await fails(t, via, caller.pat, "GetOrganizationByID", { organizationId: w.orgB }, "not_found", "Errors.Org.NotFound");
      }
      // A user of A without a membership has no role there: A is hidden too.
      await fails(t, via, w.plainA.pat, "GetOrganizationByID", { organizationId: w.orgA }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, t.pat, "GetOrganizationByID", { organizationId: "no-such-org" }, "not_found", "Errors.Org.NotFound");
    }
  });

  it("lists only the organizations the caller may read", async () => {
    for (const via of VIAS) {
      const mine = await ok(t, via, w.ownerA.pat, "ListOrganizations", {});
      expect(mine.result.map((o: { id: string }) => o.id)).toEqual([w.orgA]);
      expect(mine.details.totalResult).toBe("1");
      const theirs = await ok(t, via, w.ownerB.pat, "ListOrganizations", {});
      expect(theirs.result.map((o: { id: string }) => o.id)).toEqual([w.orgB]);
      await fails(t, via, w.plainA.pat, "ListOrganizations", {}, "permission_denied");
      const all = await ok(t, via, t.pat, "ListOrganizations", {});
      expect(all.result.map((o: { id: string }) => o.id)).toEqual(expect.arrayContaining([defaultOrg, w.orgA, w.orgB]));
    }
  });

  it("filters by name, state and id and sorts by name", async () => {
    const list = async (body: object) => (await ok(t, "rest", t.pat, "ListOrganizations", body)).result?.map((o: { name: string }) => o.name) ?? [];
    expect(
      await list({
        queries: [{ nameQuery: { name: "lc ", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } }],
        sortingColumn: "ORGANIZATION_FIELD_NAME_NAME",
        query: { asc: true },
      }),
    ).toEqual(["lc Alpha", "lc Beta"]);
    expect(await list({ queries: [{ idQuery: { id: w.orgB } }] })).toEqual(["lc Beta"]);
    const inactive = await createOrg(t, "Listed Inactive");
    await ok(t, "rest", t.pat, "DeactivateOrganization", { organizationId: inactive });
    expect(await list({ queries: [{ stateQuery: { state: "ORGANIZATION_STATE_INACTIVE" } }] })).toEqual(["Listed Inactive"]);
  });
});

describe("UpdateOrganization", () => {
  it("renames for ORG_OWNER and IAM_OWNER; the primary domain stays", async () => {
    const before = (await ok(t, "rest", t.pat, "GetOrganizationByID", { organizationId: w.orgA })).organization;
    for (const via of VIAS) {
      const out = await ok(t, via, w.ownerA.pat, "UpdateOrganization", { organizationId: w.orgA, name: `lc Alpha ${via}` });
      expect(out.changeDate).toEqual(expect.any(String));
      const got = (await ok(t, via, t.pat, "GetOrganizationByID", { organizationId: w.orgA })).organization;
      expect(got).toMatchObject({ name: `lc Alpha ${via}`, primaryDomain: before.primaryDomain });
    }
    await ok(t, "rest", t.pat, "UpdateOrganization", { organizationId: w.orgA, name: "lc Alpha" });
    // Same name again: nothing to change, no error.
    await ok(t, "rest", t.pat, "UpdateOrganization", { organizationId: w.orgA, name: "lc Alpha" });
    const events = await t.server.db.prisma.event.count({ where: { aggregateId: w.orgA, type: "org.changed" } });
    expect(events).toBe(3);
  });

  it("over gRPC", async () => {
    await grpc().updateOrganization({ organizationId: w.orgB, name: "lc Beta Grpc" }, asAdmin());
    await grpc().updateOrganization({ organizationId: w.orgB, name: "lc Beta" }, asAdmin());
    const err = await grpc()
      .updateOrganization({ organizationId: w.orgB, name: "x" }, { headers: { authorization: `Bearer ${w.ownerA.pat}` } })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("keeps names unique and validates them", async () => {
    for (const via of VIAS) {
      await fails(t, via, w.ownerA.pat, "UpdateOrganization", { organizationId: w.orgA, name: "LC BETA" }, "already_exists", "Errors.Org.AlreadyExists");
      await fails(t, via, w.ownerA.pat, "UpdateOrganization", { organizationId: w.orgA, name: "" }, "invalid_argument", "Errors.Org.Name.Missing");
    }
  });

  it("denies user managers, auditors and other organizations", async () => {
    for (const via of VIAS) {
      await fails(t, via, w.userManagerA.pat, "UpdateOrganization", { organizationId: w.orgA, name: "no" }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, w.auditorA.pat, "UpdateOrganization", { organizationId: w.orgA, name: "no" }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, w.plainA.pat, "UpdateOrganization", { organizationId: w.orgA, name: "no" }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, w.ownerB.pat, "UpdateOrganization", { organizationId: w.orgA, name: "no" }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, t.pat, "UpdateOrganization", { organizationId: "no-such-org", name: "no" }, "not_found", "Errors.Org.NotFound");
    }
  });
});

describe("DeactivateOrganization and ReactivateOrganization", () => {
  const works = async (pat: string) => (await rest(t.url, pat, "POST", "/v2/organizations", {})).status;

  it("refuses the PATs of the organization's users at once; reactivation does not bring them back (issue 11, finding 9)", async () => {
    for (const via of VIAS) {
      const d = await world(t, `deact-${via}`);
      expect(await works(d.ownerA.pat)).toBe(200);
      await ok(t, via, t.pat, "DeactivateOrganization", { organizationId: d.orgA });
      expect((await ok(t, via, t.pat, "GetOrganizationByID", { organizationId: d.orgA })).organization.state).toBe("ORGANIZATION_STATE_INACTIVE");
      for (const m of [d.ownerA, d.userManagerA, d.auditorA, d.plainA]) {
        expect(await works(m.pat)).toBe(401);
        expect((await call(t, "connect", m.pat, "ListOrganizations", {})).code).toBe("unauthenticated");
      }
      // Users of other organizations are unaffected.
      expect(await works(d.ownerB.pat)).toBe(200);
      await fails(t, via, t.pat, "DeactivateOrganization", { organizationId: d.orgA }, "failed_precondition", "Errors.Org.AlreadyInactive");

      await ok(t, via, t.pat, "ReactivateOrganization", { organizationId: d.orgA });
      expect(await works(d.ownerA.pat)).toBe(401);
      // Its users are usable again with credentials issued after the reactivation; another org's PAT never stopped.
      const { token } = await ok(t, "rest", t.pat, "AddPersonalAccessToken", { userId: d.ownerA.userId });
      expect(await works(token)).toBe(200);
      expect(await works(d.ownerB.pat)).toBe(200);
      await fails(t, via, t.pat, "ReactivateOrganization", { organizationId: d.orgA }, "failed_precondition", "Errors.Org.NotInactive");
    }
  });

  it("over gRPC", async () => {
    const id = await createOrg(t, "Grpc Toggle");
    await grpc().deactivateOrganization({ organizationId: id }, asAdmin());
    const err = await grpc()
      .deactivateOrganization({ organizationId: id }, asAdmin())
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    await grpc().reactivateOrganization({ organizationId: id }, asAdmin());
  });

  it("lets an ORG_OWNER deactivate its own organization; denies user managers, auditors and outsiders", async () => {
    const d = await world(t, "deact-perm");
    for (const via of VIAS) {
      for (const rpc of ["DeactivateOrganization", "ReactivateOrganization"] as const) {
        await fails(t, via, d.userManagerA.pat, rpc, { organizationId: d.orgA }, "permission_denied", "Errors.Permission.Denied");
        await fails(t, via, d.auditorA.pat, rpc, { organizationId: d.orgA }, "permission_denied", "Errors.Permission.Denied");
        await fails(t, via, d.ownerB.pat, rpc, { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
        await fails(t, via, d.plainA.pat, rpc, { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
      }
    }
    // The owner may deactivate; its own token then stops working with everyone else's in A.
    await ok(t, "rest", d.ownerA.pat, "DeactivateOrganization", { organizationId: d.orgA });
    expect(await works(d.ownerA.pat)).toBe(401);
    await ok(t, "rest", t.pat, "ReactivateOrganization", { organizationId: d.orgA });
    // An owner of B who also owns A (a member from another org) may reactivate A.
    await addMember(t, d.orgA, d.ownerB.userId, ["ORG_OWNER"]);
    await ok(t, "rest", d.ownerB.pat, "DeactivateOrganization", { organizationId: d.orgA });
    expect(await works(d.ownerB.pat)).toBe(200);
    await ok(t, "connect", d.ownerB.pat, "ReactivateOrganization", { organizationId: d.orgA });
  });

  it("refuses to deactivate the organization holding every IAM_OWNER", async () => {
    for (const via of VIAS) {
      await fails(t, via, t.pat, "DeactivateOrganization", { organizationId: defaultOrg }, "failed_precondition", "Errors.Org.LastInstanceOwners");
    }
    expect(await works(t.pat)).toBe(200);
  });
});

describe("DeleteOrganization", () => {
  it("removes everything the organization owns, and nothing else", async () => {
    for (const via of VIAS) {
      const d = await world(t, `del-${via}`);
      const db = t.server.db.prisma;
      // A user of A is a member of B; an owner of B is a member of A.
      await addMember(t, d.orgB, d.plainA.userId, ["ORG_AUDITOR"]);
      await addMember(t, d.orgA, d.ownerB.userId, ["ORG_AUDITOR"]);
      await ok(t, "rest", t.pat, "SetOrganizationMetadata", { organizationId: d.orgA, metadata: [{ key: "k", value: "dg==" }] });
      expect((await rest(t.url, t.pat, "POST", `/v2/users/${d.plainA.userId}/keys`, {})).status).toBe(200);
      const override = { organizationId: d.orgA, settings: { minLength: "12", requiresUppercase: true } };
      expect((await rest(t.url, t.pat, "PUT", "/v2/settings/password/complexity", override)).status).toBe(200);
      expect(await db.machineKey.count({ where: { userId: d.plainA.userId } })).toBe(1);
      expect(await db.setting.count({ where: { ownerId: d.orgA } })).toBe(1);
      const usersOfA = [d.ownerA, d.userManagerA, d.auditorA, d.plainA];

      const out = await ok(t, via, t.pat, "DeleteOrganization", { organizationId: d.orgA });
      expect(out.deletionDate).toEqual(expect.any(String));

      await fails(t, via, t.pat, "GetOrganizationByID", { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
      for (const m of usersOfA) {
        expect((await rest(t.url, t.pat, "GET", `/v2/users/${m.userId}`)).status).toBe(404);
        expect((await rest(t.url, m.pat, "POST", "/v2/organizations", {})).status).toBe(401);
      }
      const userIds = usersOfA.map((m) => m.userId);
      expect(await db.personalAccessToken.count({ where: { userId: { in: userIds } } })).toBe(0);
      expect(await db.machineKey.count({ where: { userId: { in: userIds } } })).toBe(0);
      expect(await db.orgMember.count({ where: { OR: [{ orgId: d.orgA }, { userId: { in: userIds } }] } })).toBe(0);
      expect(await db.orgMetadata.count({ where: { orgId: d.orgA } })).toBe(0);
      expect(await db.setting.count({ where: { ownerId: d.orgA } })).toBe(0);
      // B keeps its own member; the user of B that was a member of A still exists and works.
      const membersOfB = await ok(t, "rest", t.pat, "ListOrganizationMembers", { organizationId: d.orgB });
      expect(membersOfB.result.map((m: { userId: string }) => m.userId)).toEqual([d.ownerB.userId]);
      expect((await rest(t.url, d.ownerB.pat, "GET", `/v2/organizations/${d.orgB}`)).status).toBe(200);
      // The audit trail stays.
      expect(await db.event.count({ where: { aggregateId: d.orgA, type: "org.removed" } })).toBe(1);
      // Deleting again: NotFound. The name is free again.
      await fails(t, via, t.pat, "DeleteOrganization", { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
      await createOrg(t, `del-${via} Alpha`);
    }
  });

  it("over gRPC", async () => {
    const id = await createOrg(t, "Grpc Doomed");
    await grpc().deleteOrganization({ organizationId: id }, asAdmin());
    const err = await grpc()
      .getOrganizationByID({ organizationId: id }, asAdmin())
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("refuses the default organization", async () => {
    for (const via of VIAS) await fails(t, via, t.pat, "DeleteOrganization", { organizationId: defaultOrg }, "failed_precondition", "Errors.Org.Default");
  });

  it("lets an ORG_OWNER delete its organization; denies user managers, auditors and outsiders", async () => {
    const d = await world(t, "del-perm");
    for (const via of VIAS) {
      await fails(t, via, d.userManagerA.pat, "DeleteOrganization", { organizationId: d.orgA }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, d.auditorA.pat, "DeleteOrganization", { organizationId: d.orgA }, "permission_denied", "Errors.Permission.Denied");
      await fails(t, via, d.plainA.pat, "DeleteOrganization", { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, d.ownerB.pat, "DeleteOrganization", { organizationId: d.orgA }, "not_found", "Errors.Org.NotFound");
    }
    await ok(t, "connect", d.ownerA.pat, "DeleteOrganization", { organizationId: d.orgA });
    expect((await rest(t.url, d.ownerA.pat, "POST", "/v2/organizations", {})).status).toBe(401);
  });
});
