// UserService.ListMyPermissions (REST GET /v2/users/me/permissions): any authenticated caller learns its own instance
// roles and, per organization it holds roles in, its roles and what they allow, from the same role table that decides
// the calls (a listed write is accepted, an unlisted one refused); nothing without a token; roles changed later show.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman } from "../support/fixtures.js";
import { addMember, fails, ok, VIAS, type World, world } from "../support/orgs.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;

beforeAll(async () => {
  t = await startTestServer();
  w = await world(t, "mine");
});
afterAll(() => t.stop());

describe("ListMyPermissions", () => {
  it("answers an instance owner with its instance roles and every permission, in every organization", async () => {
    for (const via of VIAS) {
      const mine = await ok(t, via, t.pat, "ListMyPermissions");
      expect(mine.instanceRoles).toEqual(["IAM_OWNER"]);
      expect(mine.instancePermissions).toEqual(expect.arrayContaining(["iam.write", "org.create", "user.write", "user.delete", "idp.write"]));
      expect(mine.userId).toBeTruthy();
      expect(mine.organizationId).toBeTruthy();
    }
  });

  it("answers an organization member with its roles and their permissions there, and nothing instance-wide", async () => {
    for (const via of VIAS) {
      const auditor = await ok(t, via, w.auditorA.pat, "ListMyPermissions");
      expect(auditor).toEqual({ userId: w.auditorA.userId, organizationId: w.orgA, organizations: [expect.any(Object)] });
      expect(auditor.organizations[0]).toEqual({
        organizationId: w.orgA,
        roles: ["ORG_AUDITOR"],
        permissions: expect.arrayContaining(["user.read", "org.read"]),
      });
      expect(auditor.organizations[0].permissions).not.toContain("user.write");
      const manager = await ok(t, via, w.userManagerA.pat, "ListMyPermissions");
      expect(manager.organizations).toEqual([
        { organizationId: w.orgA, roles: ["ORG_USER_MANAGER"], permissions: expect.arrayContaining(["user.read", "user.write", "user.delete"]) },
      ]);
      expect(manager.organizations[0].permissions).not.toContain("org.write");
      // A user without roles may still ask: it may do nothing beyond acting on itself.
      expect(await ok(t, via, w.plainA.pat, "ListMyPermissions")).toEqual({ userId: w.plainA.userId, organizationId: w.orgA });
    }
  });

  it("lists what the API then allows: a listed write is accepted, an unlisted one refused", async () => {
    const userId = await createHuman(t, w.orgA, "mine-target");
    await fails(t, "rest", w.auditorA.pat, "LockUser", { userId }, "permission_denied");
    await ok(t, "rest", w.userManagerA.pat, "LockUser", { userId });
    await ok(t, "rest", w.userManagerA.pat, "UnlockUser", { userId });
  });

  it("shows roles in several organizations, sorted by organization id, and a role added later", async () => {
    await addMember(t, w.orgB, w.auditorA.userId, ["ORG_USER_MANAGER"]);
    const mine = await ok(t, "connect", w.auditorA.pat, "ListMyPermissions");
    const expected = [
      { organizationId: w.orgA, roles: ["ORG_AUDITOR"], permissions: expect.not.arrayContaining(["user.write"]) },
      { organizationId: w.orgB, roles: ["ORG_USER_MANAGER"], permissions: expect.arrayContaining(["user.write"]) },
    ].sort((a, b) => (a.organizationId < b.organizationId ? -1 : 1));
    expect(mine.organizations).toEqual(expected);
  });

  it("refuses a caller without a token", async () => {
    for (const via of VIAS) await fails(t, via, undefined, "ListMyPermissions", {}, "unauthenticated");
  });
});
