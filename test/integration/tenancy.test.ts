// Tenant isolation across every resource: the owner of organization B sees
// and changes nothing of organization A, over REST and gRPC alike.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type JsonObject, type Rpc, restFetch } from "../support/rest.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { auth, caller, createHuman, createMachine, createOrg, defaultOrgId, grpcClient, json, newPat, rpcError } from "../support/users.js";

let t: TestServer;
let orgA: string;
let orgB: string;
let userA: string;
let patIdA: string;
let ownerB: { userId: string; pat: string };
let userB: string;

beforeAll(async () => {
  t = await startTestServer();
  orgA = await defaultOrgId(t);
  orgB = await createOrg(t, "Tenant B");
  userA = await createMachine(t, orgA, "robot-a");
  patIdA = (await newPat(t, userA)).tokenId;
  await rest(t.url, t.pat, "POST", `/v2/users/${userA}/metadata`, { metadata: [{ key: "k", value: "dg==" }] });
  ownerB = await caller(t, orgB, "owner-b", ["ORG_OWNER"]);
  userB = await createHuman(t, orgB, "person-b");
});
afterAll(() => t.stop());

describe("the owner of organization B", () => {
  it("lists only B's users, even when filtering for A", async () => {
    const all = await json<{ result?: { userId: string; details: { resourceOwner: string } }[]; details: { totalResult: string } }>(
      await rest(t.url, ownerB.pat, "POST", "/v2/users", {}),
    );
    expect(all.result?.every((u) => u.details.resourceOwner === orgB)).toBe(true);
    expect(all.result?.map((u) => u.userId).sort()).toEqual([ownerB.userId, userB].sort());
    expect(all.details.totalResult).toBe("2");
    const forA = await json<{ result?: unknown[]; details: { totalResult: string } }>(
      await rest(t.url, ownerB.pat, "POST", "/v2/users", { queries: [{ organizationIdQuery: { organizationId: orgA } }] }),
    );
    expect(forA.result ?? []).toEqual([]);
    // proto3 JSON leaves out a zero total.
    expect(forA.details.totalResult ?? "0").toBe("0");
  });

  it("gets NotFound for A's user, its tokens, keys, metadata and secret", async () => {
    const calls: [Rpc, JsonObject][] = [
      ["GetUserByID", { userId: userA }],
      ["UpdateUser", { userId: userA, username: "stolen" }],
      ["DeleteUser", { userId: userA }],
      ["DeactivateUser", { userId: userA }],
      ["LockUser", { userId: userA }],
      ["AddPersonalAccessToken", { userId: userA }],
      ["RemovePersonalAccessToken", { userId: userA, tokenId: patIdA }],
      ["ListPersonalAccessTokens", { userId: userA }],
      ["AddKey", { userId: userA }],
      ["ListKeys", { userId: userA }],
      ["AddSecret", { userId: userA }],
      ["SetUserMetadata", { userId: userA, metadata: [{ key: "x", value: "eA==" }] }],
      ["ListUserMetadata", { userId: userA }],
      ["CreateUser", { organizationId: orgA, username: "planted", machine: { name: "p" } }],
      ["GetOrganizationByID", { organizationId: orgA }],
      ["UpdateOrganization", { organizationId: orgA, name: "Renamed" }],
      ["ListOrganizationMembers", { organizationId: orgA }],
      ["ListOrganizationMetadata", { organizationId: orgA }],
      ["GetLockoutSettings", { organizationId: orgA }],
    ];
    for (const [rpc, req] of calls) {
      const res = await restFetch(t.url, ownerB.pat, rpc, req);
      expect([rpc, res.status]).toEqual([rpc, 404]);
    }
    // Nothing changed in A.
    const a = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: userA } });
    expect([a.username, a.state]).toEqual(["robot-a", "ACTIVE"]);
    expect(await t.server.db.prisma.user.count({ where: { username: "planted" } })).toBe(0);
  });

  it("sees only B in organization, token and event lists", async () => {
    const orgs = await json<{ result: { id: string }[] }>(await rest(t.url, ownerB.pat, "POST", "/v2/organizations", {}));
    expect(orgs.result.map((o) => o.id)).toEqual([orgB]);
    const pats = await json<{ result?: { userId: string }[] }>(await rest(t.url, ownerB.pat, "POST", "/v2/users/pats/search", {}));
    expect((pats.result ?? []).every((p) => p.userId === ownerB.userId)).toBe(true);
    const events = await json<{ result: { organizationId?: string }[] }>(await rest(t.url, ownerB.pat, "POST", "/v2/events", {}));
    expect(events.result.length).toBeGreaterThan(0);
    expect(events.result.every((e) => e.organizationId === orgB)).toBe(true);
  });

  it("is held to the same rules over gRPC", async () => {
    const client = grpcClient(t);
    expect((await rpcError(client.getUserByID({ userId: userA }, auth(ownerB.pat)))).code).toBe(Code.NotFound);
    expect((await rpcError(client.deleteUser({ userId: userA }, auth(ownerB.pat)))).code).toBe(Code.NotFound);
    const list = await client.listUsers({}, auth(ownerB.pat));
    expect(list.result.map((u) => u.details?.resourceOwner)).toEqual([orgB, orgB]);
  });
});
