// Issue 11, findings 2 and 3. Who manages an account: (2) an organization
// takes a user of another organization as a member only with that
// organization's consent, and the user's own organization keeps managing it
// (guards look at its roles there only; it may withdraw the membership);
// (3) nobody changes an account in any way (state, deletion, credentials,
// e-mail, phone, metadata; v2 and SCIM PUT/PATCH/DELETE/Bulk) when it holds
// roles the caller could not grant.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { BULK_URN, patch, scim, USER_URN } from "../fixtures/scim/client.js";
import { addMember, createHuman, createOrg, type Machine, machine, newPat, project, type World, world } from "../support/fixtures.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;
/** Instance administrators whose accounts live in organization A (a human and a machine), and a human ORG_OWNER of A. */
let iamHuman: string;
let iamMachine: Machine;
let ownerHuman: string;

beforeAll(async () => {
  t = await startTestServer();
  w = await world(t, "mm");
  iamHuman = await createHuman(t, w.orgA, "mm-iam-human");
  await admin(t, "AddInstanceMember", { userId: iamHuman, roles: ["IAM_OWNER"] });
  iamMachine = await machine(t, w.orgA, "mm-iam-machine");
  await admin(t, "AddInstanceMember", { userId: iamMachine.userId, roles: ["IAM_OWNER"] });
  ownerHuman = await createHuman(t, w.orgA, "mm-owner-human");
  await addMember(t, w.orgA, ownerHuman, ["ORG_OWNER"]);
});
afterAll(() => t.stop());

/** Every v2 change of `userId` (a human, or a machine with `machine`), each with a fresh credential to remove where it needs one. */
async function v2Changes(userId: string, kind: "human" | "machine"): Promise<[string, Record<string, unknown>][]> {
  await admin(t, "SetUserMetadata", { userId, metadata: [{ key: "k", value: "dg==" }] });
  const common: [string, Record<string, unknown>][] = [
    ["DeactivateUser", { userId }],
    ["ReactivateUser", { userId }],
    ["LockUser", { userId }],
    ["UnlockUser", { userId }],
    ["DeleteUser", { userId }],
    ["SetUserMetadata", { userId, metadata: [{ key: "k", value: "eA==" }] }],
    ["DeleteUserMetadata", { userId, keys: ["k"] }],
  ];
  if (kind === "human") {
    return [
      ...common,
      ["UpdateUser", { userId, human: { email: { email: "taken@example.com" } } }],
      ["UpdateUser", { userId, human: { email: { email: "taken@example.com", isVerified: true } } }],
      ["UpdateUser", { userId, human: { phone: { phone: "+41790000000", isVerified: true } } }],
      ["UpdateUser", { userId, human: { profile: { displayName: "Taken Over" } } }],
      ["SetPassword", { userId, newPassword: { password: "Taken-0ver-Passw0rd!" } }],
    ];
  }
  const { tokenId } = await newPat(t, userId);
  const key = await admin(t, "AddKey", { userId });
  await admin(t, "AddSecret", { userId });
  return [
    ...common,
    ["RemovePersonalAccessToken", { userId, tokenId }],
    ["RemoveKey", { userId, keyId: key.keyId }],
    ["RemoveSecret", { userId }],
    ["AddSecret", { userId }],
    ["AddKey", { userId }],
    ["AddPersonalAccessToken", { userId }],
    ["UpdateUser", { userId, machine: { name: "Taken Over" } }],
  ];
}

describe("organization roles cannot change better-privileged accounts (finding 3)", () => {
  const cases: [string, () => Machine, () => string][] = [
    ["ORG_USER_MANAGER on an IAM_OWNER", () => w.userManagerA, () => iamHuman],
    ["ORG_OWNER on an IAM_OWNER", () => w.ownerA, () => iamHuman],
    ["ORG_USER_MANAGER on an ORG_OWNER", () => w.userManagerA, () => ownerHuman],
  ];
  const machineCases: [string, () => Machine, () => string][] = [
    ["ORG_USER_MANAGER on an IAM_OWNER", () => w.userManagerA, () => iamMachine.userId],
    ["ORG_OWNER on an IAM_OWNER", () => w.ownerA, () => iamMachine.userId],
    ["ORG_USER_MANAGER on an ORG_OWNER", () => w.userManagerA, () => w.ownerA.userId],
  ];

  async function refusedAll(who: Machine, userId: string, kind: "human" | "machine"): Promise<void> {
    const changes = await v2Changes(userId, kind);
    const before = await admin(t, "GetUserByID", { userId });
    for (const [rpc, req] of changes) {
      const r = await call(t, "rest", who.pat, rpc as never, req);
      expect({ rpc, req, code: r.code, reason: r.reason }).toEqual({ rpc, req, code: "permission_denied", reason: "Errors.User.MorePrivileged" });
    }
    const after = await admin(t, "GetUserByID", { userId });
    expect(after.user).toEqual({ ...before.user, details: after.user.details });
    expect(after.user.state).toBe("USER_STATE_ACTIVE");
    const metadata = (await admin(t, "ListUserMetadata", { userId })).result;
    expect(metadata.map((m: { key: string; value: string }) => [m.key, m.value])).toEqual([["k", "dg=="]]);
  }

  it.each(cases)("%s (human): every v2 change is PermissionDenied and changes nothing", async (_, who, target) => {
    await refusedAll(who(), target(), "human");
  });

  it.each(machineCases)("%s (machine): every v2 change, credentials included, is PermissionDenied", async (_, who, target) => {
    await refusedAll(who(), target(), "machine");
  });

  it.each(cases)("%s: SCIM PUT, PATCH, DELETE and Bulk are 403 and change nothing", async (_, who, target) => {
    const userId = target();
    const base = `/scim/v2/${w.orgA}/Users/${userId}`;
    const current = (await scim(t, t.pat, "GET", base)).body;
    const put = { ...current, active: false, emails: [{ value: "taken@example.com", primary: true }] };
    expect((await scim(t, who().pat, "PUT", base, put)).status).toBe(403);
    for (const op of [
      { op: "replace", path: "active", value: false },
      { op: "replace", path: "emails", value: [{ value: "taken@example.com", primary: true }] },
      { op: "replace", path: "name.givenName", value: "Taken" },
    ]) {
      expect({ op: op.path, status: (await scim(t, who().pat, "PATCH", base, patch(op))).status }).toEqual({ op: op.path, status: 403 });
    }
    expect((await scim(t, who().pat, "DELETE", base)).status).toBe(403);
    const bulk = await scim(t, who().pat, "POST", `/scim/v2/${w.orgA}/Bulk`, {
      schemas: [BULK_URN],
      Operations: [
        { method: "PATCH", path: `/Users/${userId}`, data: patch({ op: "replace", path: "active", value: false }) },
        { method: "DELETE", path: `/Users/${userId}` },
      ],
    });
    expect(bulk.status).toBe(200);
    expect(bulk.body.Operations.map((o: { status: string }) => o.status)).toEqual(["403", "403"]);
    const after = (await scim(t, t.pat, "GET", base)).body;
    expect([after.active, after.emails, after.name]).toEqual([current.active, current.emails, current.name]);
    expect(after.schemas).toContain(USER_URN);
  });

  it("whoever could grant the roles may: an ORG_OWNER changes another ORG_OWNER of its organization", async () => {
    const target = await createHuman(t, w.orgA, "mm-second-owner");
    await addMember(t, w.orgA, target, ["ORG_OWNER"]);
    for (const [rpc, req] of (await v2Changes(target, "human")).filter(([rpc]) => rpc !== "DeleteUser" && rpc !== "ReactivateUser" && rpc !== "UnlockUser")) {
      const r = await call(t, "rest", w.ownerA.pat, rpc as never, req);
      expect({ rpc, code: r.code }).toEqual({ rpc, code: "ok" });
      if (rpc === "DeactivateUser") await ok(t, "rest", w.ownerA.pat, "ReactivateUser", { userId: target });
      if (rpc === "LockUser") await ok(t, "rest", w.ownerA.pat, "UnlockUser", { userId: target });
    }
    await ok(t, "rest", w.ownerA.pat, "DeleteUser", { userId: target });
  });
});

describe("members from other organizations (finding 2)", () => {
  it("an ORG_OWNER cannot make another organization's user a member: NotFound, as for an unknown id", async () => {
    const victim = await machine(t, w.orgB, "mm-victim-b");
    const ownerC = await machine(t, await createOrg(t, "mm Gamma"), "mm-owner-c");
    const orgC = (await admin(t, "GetUserByID", { userId: ownerC.userId })).user.details.resourceOwner;
    await addMember(t, orgC, ownerC.userId, ["ORG_OWNER"]);
    const foreign = await fails(
      t,
      "rest",
      ownerC.pat,
      "AddOrganizationMember",
      { organizationId: orgC, userId: victim.userId, roles: ["ORG_OWNER"] },
      "not_found",
    );
    const unknown = await fails(
      t,
      "rest",
      ownerC.pat,
      "AddOrganizationMember",
      { organizationId: orgC, userId: "000000000000000000", roles: ["ORG_OWNER"] },
      "not_found",
    );
    expect(foreign.body).toEqual(unknown.body);
    // A caller who administers memberships in both organizations gives the consent.
    await addMember(t, w.orgB, ownerC.userId, ["ORG_OWNER"]);
    await ok(t, "rest", ownerC.pat, "AddOrganizationMember", { organizationId: orgC, userId: victim.userId, roles: ["ORG_AUDITOR"] });
  });

  it("the user's own organization keeps managing it and may withdraw it; an IAM_OWNER resolves what is left", async () => {
    const orgC = await createOrg(t, "mm Delta");
    const pinned = await machine(t, w.orgB, "mm-pinned-b");
    // The instance administrator made B's user the only owner of C.
    await addMember(t, orgC, pinned.userId, ["ORG_OWNER"]);
    // B still issues credentials for, deactivates and reactivates its own user.
    await ok(t, "rest", w.ownerB.pat, "AddPersonalAccessToken", { userId: pinned.userId });
    await ok(t, "rest", w.ownerB.pat, "DeactivateUser", { userId: pinned.userId });
    await ok(t, "rest", w.ownerB.pat, "ReactivateUser", { userId: pinned.userId });
    // ... and takes it out of C, though it is C's last owner.
    await ok(t, "rest", w.ownerB.pat, "RemoveOrganizationMember", { organizationId: orgC, userId: pinned.userId });
    expect((await admin(t, "ListOrganizationMembers", { organizationId: orgC })).result ?? []).toEqual([]);
    // Withdrawing is only for the user's own organization; nothing else of C is B's.
    await addMember(t, orgC, pinned.userId, ["ORG_OWNER"]);
    const other = await machine(t, orgC, "mm-local-c");
    await addMember(t, orgC, other.userId, ["ORG_AUDITOR"]);
    await fails(t, "rest", w.ownerB.pat, "RemoveOrganizationMember", { organizationId: orgC, userId: other.userId }, "not_found");
    // The instance administrator deletes organization B though its user owns C, and gives C a new owner.
    const orgB2 = await createOrg(t, "mm Epsilon");
    const pinned2 = await machine(t, orgB2, "mm-pinned-e");
    const orgF = await createOrg(t, "mm Phi");
    await addMember(t, orgF, pinned2.userId, ["ORG_OWNER"]);
    await admin(t, "DeleteOrganization", { organizationId: orgB2 });
    expect((await admin(t, "ListOrganizationMembers", { organizationId: orgF })).result ?? []).toEqual([]);
    await addMember(t, orgF, other.userId, ["ORG_OWNER"]);
  });
});

describe("existence oracles (finding 12)", () => {
  it("AddUserGrant answers a user of an organization the caller cannot see exactly as an unknown id", async () => {
    const projectId = await project(t, w.orgA, "mm oracle", ["r"]);
    const elsewhere = await machine(t, w.orgB, "mm-oracle-b");
    const foreign = await fails(t, "rest", w.ownerA.pat, "AddUserGrant", { userId: elsewhere.userId, projectId, roleKeys: ["r"] }, "not_found");
    const unknown = await fails(t, "rest", w.ownerA.pat, "AddUserGrant", { userId: "000000000000000000", projectId, roleKeys: ["r"] }, "not_found");
    expect(foreign.body).toEqual(unknown.body);
    // Its own users, and (for a caller who sees both organizations) others', are granted as before.
    await ok(t, "rest", w.ownerA.pat, "AddUserGrant", { userId: w.plainA.userId, projectId, roleKeys: ["r"] });
    await ok(t, "rest", t.pat, "AddUserGrant", { userId: elsewhere.userId, projectId, roleKeys: ["r"] });
  });
});
