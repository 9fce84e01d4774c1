// SCIM Bulk through the real server: POST/PUT/PATCH/DELETE with bulkId
// references, per-operation results and permissions, failOnErrors, and the
// 413 limits (operations, payload) that apply nothing.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Body, BULK_URN, DETAIL_URN, ERROR_URN, expectError, newUser, PATCH_URN, scim, USER_URN } from "../fixtures/scim/client.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { caller, createOrg } from "../support/users.js";

let t: TestServer;
let base: string;
let orgId: string;
let manager: string;
let auditor: string;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await createOrg(t, "Bulk");
  base = `/scim/v2/${orgId}`;
  manager = (await caller(t, orgId, "bulk-manager", ["ORG_USER_MANAGER"])).pat;
  auditor = (await caller(t, orgId, "bulk-auditor", ["ORG_AUDITOR"])).pat;
});
afterAll(() => t.stop());

const bulk = (Operations: unknown[], extra: Record<string, unknown> = {}) => ({ schemas: [BULK_URN], Operations, ...extra });
const userCount = () => t.server.db.prisma.user.count({ where: { orgId, type: "HUMAN" } });

describe("Bulk", () => {
  it("POST with bulkId, then PATCH, PUT and DELETE referring to it by bulkId:<id>", async () => {
    const r = await scim(
      t,
      manager,
      "POST",
      `${base}/Bulk`,
      bulk([
        { method: "POST", path: "/Users", bulkId: "u1", data: newUser("bulk-one") },
        { method: "POST", path: "/Users", bulkId: "u2", data: newUser("bulk-two") },
        { method: "PATCH", path: "/Users/bulkId:u1", data: { schemas: [PATCH_URN], Operations: [{ op: "replace", path: "title", value: "Bulked" }] } },
        { method: "PUT", path: "/Users/bulkId:u2", data: newUser("bulk-two-renamed") },
        { method: "DELETE", path: "/Users/bulkId:u2" },
      ]),
    );
    expect(r.status).toBe(200);
    expect(r.body.schemas).toEqual(["urn:ietf:params:scim:api:messages:2.0:BulkResponse"]);
    const ops = r.body.Operations as Body[];
    expect(ops.map((o) => [o.method, o.bulkId, o.status])).toEqual([
      ["POST", "u1", "201"],
      ["POST", "u2", "201"],
      ["PATCH", undefined, "200"],
      ["PUT", undefined, "200"],
      ["DELETE", undefined, "204"],
    ]);
    expect(ops[0].location).toMatch(new RegExp(`${base}/Users/[^/]+$`));
    expect(ops[2].location).toBe(ops[0].location);
    const one = await scim(t, manager, "GET", new URL(ops[0].location).pathname);
    expect(one.body).toMatchObject({ userName: "bulk-one", title: "Bulked" });
    expectError(await scim(t, manager, "GET", new URL(ops[1].location).pathname), 404, "noTarget");
  });

  it("each operation is atomic on its own and reports its own SCIM error", async () => {
    const r = await scim(
      t,
      manager,
      "POST",
      `${base}/Bulk`,
      bulk([
        { method: "POST", path: "/Users", bulkId: "ok", data: newUser("bulk-ok") },
        { method: "POST", path: "/Users", bulkId: "dup", data: newUser("BULK-OK") },
        { method: "POST", path: "/Users", bulkId: "bad", data: { schemas: [USER_URN] } },
        { method: "DELETE", path: "/Users/no-such-user" },
        { method: "PATCH", path: "/Users/bulkId:never", data: { schemas: [PATCH_URN], Operations: [] } },
        { method: "GET", path: "/Users" },
      ]),
    );
    const ops = r.body.Operations as Body[];
    expect(ops.map((o) => o.status)).toEqual(["201", "409", "400", "404", "409", "400"]);
    expect(ops[1].response).toMatchObject({ schemas: [ERROR_URN, DETAIL_URN], status: "409", scimType: "uniqueness" });
    expect(ops[2].response).toMatchObject({ status: "400", scimType: "invalidValue" });
    expect(ops[3].response).toMatchObject({ status: "404", scimType: "noTarget" });
  });

  it("failOnErrors stops after that many failures", async () => {
    const r = await scim(
      t,
      manager,
      "POST",
      `${base}/Bulk`,
      bulk(
        [
          { method: "DELETE", path: "/Users/missing-1" },
          { method: "DELETE", path: "/Users/missing-2" },
          { method: "POST", path: "/Users", bulkId: "late", data: newUser("bulk-never") },
        ],
        { failOnErrors: 2 },
      ),
    );
    expect(r.body.Operations.map((o: Body) => o.status)).toEqual(["404", "404"]);
    const list = await scim(t, manager, "GET", `${base}/Users?filter=${encodeURIComponent('userName eq "bulk-never"')}`);
    expect(list.body.totalResults).toBe(0);
  });

  it("each operation checks its own permission", async () => {
    const r = await scim(t, auditor, "POST", `${base}/Bulk`, bulk([{ method: "POST", path: "/Users", bulkId: "x", data: newUser("bulk-by-auditor") }]));
    expect(r.status).toBe(200);
    expect(r.body.Operations[0]).toMatchObject({ status: "403", response: { status: "403" } });
  });

  it("more than 100 operations or more than 1,000,000 bytes: 413, nothing applied", async () => {
    const before = await userCount();
    const ops = Array.from({ length: 101 }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `b${i}`, data: newUser(`bulk-many-${i}`) }));
    expectError(await scim(t, manager, "POST", `${base}/Bulk`, bulk(ops)), 413);
    const big = bulk([{ method: "POST", path: "/Users", bulkId: "big", data: newUser("bulk-big", { title: "x".repeat(1_000_001) }) }]);
    expectError(await scim(t, manager, "POST", `${base}/Bulk`, big), 413);
    expect(await userCount()).toBe(before);
  });

  it("100 creates in one request", async () => {
    const ops = Array.from({ length: 100 }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `c${i}`, data: newUser(`bulk-hundred-${i}`) }));
    const r = await scim(t, manager, "POST", `${base}/Bulk`, bulk(ops));
    expect(r.body.Operations.filter((o: Body) => o.status === "201")).toHaveLength(100);
  });

  it("a body without the BulkRequest schema: 400 invalidSyntax; no token: 401", async () => {
    expectError(await scim(t, manager, "POST", `${base}/Bulk`, { Operations: [] }), 400, "invalidSyntax");
    expectError(await scim(t, undefined, "POST", `${base}/Bulk`, bulk([])), 401);
  });
});

describe("after a burst", () => {
  it("refreshes the user tables' statistics once a Bulk wrote 100 users (prepared plans stay good)", async () => {
    if (!process.env.SVC_TEST_DATABASE_URL) return;
    // A server of its own: a refresh happens at most once a minute per server.
    const own = await startTestServer();
    try {
      const ownOrg = await createOrg(own, "Burst");
      const ownManager = (await caller(own, ownOrg, "burst-manager", ["ORG_USER_MANAGER"])).pat;
      const analyzed = async () =>
        (await own.server.db.prisma.$queryRaw<{ at: Date | null }[]>`SELECT last_analyze AS at FROM pg_stat_user_tables WHERE relname = 'User'`)[0]?.at ?? null;
      const before = await analyzed();
      const ops = Array.from({ length: 100 }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `b${i}`, data: newUser(`burst-${i}`) }));
      const r = await scim(own, ownManager, "POST", `/scim/v2/${ownOrg}/Bulk`, bulk(ops));
      expect(r.status).toBe(200);
      let after = await analyzed();
      for (let i = 0; i < 50 && (after === null || after === before); i++) {
        await new Promise((res) => setTimeout(res, 100));
        after = await analyzed();
      }
      expect(after).not.toBeNull();
      expect(after).not.toEqual(before);
    } finally {
      await own.stop();
    }
  });
});
