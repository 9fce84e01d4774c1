// The totals of v2 lists (ListDetails): exact up to max(1000, offset + limit) matches, a flagged lower bound above,
// and exact on request (ListQuery.exactTotal), over the ListUsers statements, the shared list statement of the other
// lists (pageOnDriver: events, organizations) and a list still read through Prisma (user metadata), through REST,
// Connect JSON and gRPC. SCIM's totalResults stays exact.
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { BULK_URN, newUser, scim } from "../fixtures/scim/client.js";
import { call, type Json, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { createOrg } from "../support/users.js";

let t: TestServer;
let orgId: string;
/** SCIM-created humans of orgId: more than the bound of 1000. */
const CREATED = 1010;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await createOrg(t, "Totals");
  for (let done = 0; done < CREATED; ) {
    const n = Math.min(100, CREATED - done);
    const Operations = Array.from({ length: n }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `b${done + i}`, data: newUser(`tot-${done + i}`) }));
    const r = await scim(t, t.pat, "POST", `/scim/v2/${orgId}/Bulk`, { schemas: [BULK_URN], Operations });
    expect(r.status).toBe(200);
    done += n;
  }
}, 120_000);
afterAll(() => t.stop());

const inOrg = () => [{ organizationIdQuery: { organizationId: orgId } }];
const users = (query: Json, queries: Json[] = inOrg()) => ok(t, "rest", t.pat, "ListUsers", { query, queries });

describe("v2 list totals", () => {
  it("counts up to 1000 and flags more as a lower bound, REST and Connect alike", async () => {
    for (const via of VIAS) {
      const body = await ok(t, via, t.pat, "ListUsers", { query: { limit: 10 }, queries: [{ organizationIdQuery: { organizationId: orgId } }] });
      expect(body.details.totalResult).toBe("1000");
      expect(body.details.totalResultIsLowerBound).toBe(true);
      expect(body.result).toHaveLength(10);
    }
  });

  it("counts every match when asked for the exact total", async () => {
    const body = await users({ limit: 10, exactTotal: true });
    expect(body.details.totalResult).toBe(String(CREATED));
    // proto3 JSON leaves a false bool out.
    expect(body.details.totalResultIsLowerBound).toBeUndefined();
  });

  it("counts to the end of a page past the bound, and exactly when the page reaches the last match", async () => {
    const deep = await users({ offset: 1000, limit: 5 });
    expect(deep.details).toMatchObject({ totalResult: "1005", totalResultIsLowerBound: true });
    expect(deep.result).toHaveLength(5);
    const last = await users({ offset: 1005, limit: 10 });
    expect(last.details.totalResult).toBe(String(CREATED));
    expect(last.details.totalResultIsLowerBound).toBeUndefined();
    expect(last.result).toHaveLength(5);
  });

  it("stays exact for filtered results under the bound", async () => {
    // tot-100 .. tot-109 and tot-1000 .. tot-1009, and tot-10 itself.
    const body = await users({ limit: 5 }, [...inOrg(), { userNameQuery: { userName: "tot-10", method: "TEXT_QUERY_METHOD_STARTS_WITH" } }]);
    expect(body.details.totalResult).toBe("21");
    expect(body.details.totalResultIsLowerBound).toBeUndefined();
    expect(body.result).toHaveLength(5);
  });

  it("bounds the other lists the same way (events: one per created user), exact when small", async () => {
    const bounded = await ok(t, "connect", t.pat, "ListEvents", { query: { limit: 3 }, organizationId: orgId });
    expect(bounded.details).toMatchObject({ totalResult: "1000", totalResultIsLowerBound: true });
    expect(bounded.result).toHaveLength(3);
    const exact = await ok(t, "connect", t.pat, "ListEvents", { query: { limit: 3, exactTotal: true }, organizationId: orgId });
    expect(Number(exact.details.totalResult)).toBeGreaterThanOrEqual(CREATED);
    expect(exact.details.totalResultIsLowerBound).toBeUndefined();
    const small = await ok(t, "rest", t.pat, "ListOrganizations", { query: { limit: 1 } });
    expect(Number(small.details.totalResult)).toBeGreaterThan(1);
    expect(small.details.totalResultIsLowerBound).toBeUndefined();
    const someone = (await users({ limit: 1 })).result[0].userId;
    const metadata = Array.from({ length: 3 }, (_, i) => ({ key: `k${i}`, value: Buffer.from("v").toString("base64") }));
    await ok(t, "rest", t.pat, "SetUserMetadata", { userId: someone, metadata });
    const viaPrisma = await ok(t, "rest", t.pat, "ListUserMetadata", { userId: someone, query: { limit: 2 } });
    expect(viaPrisma.details.totalResult).toBe("3");
    expect(viaPrisma.details.totalResultIsLowerBound).toBeUndefined();
    expect(viaPrisma.result).toHaveLength(2);
  });

  it("carries the flag to gRPC clients (protobuf binary)", async () => {
    const transport = createGrpcTransport({ baseUrl: t.url });
    const headers = { authorization: `Bearer ${t.pat}` };
    const u = await createClient(UserService, transport).listUsers(
      { query: { limit: 1 }, queries: [{ query: { case: "organizationIdQuery", value: { organizationId: orgId } } }] },
      { headers },
    );
    expect(u.details?.totalResult).toBe(1000n);
    expect(u.details?.totalResultIsLowerBound).toBe(true);
    const exact = await createClient(UserService, transport).listUsers(
      { query: { limit: 1, exactTotal: true }, queries: [{ query: { case: "organizationIdQuery", value: { organizationId: orgId } } }] },
      { headers },
    );
    expect(exact.details?.totalResult).toBe(BigInt(CREATED));
    expect(exact.details?.totalResultIsLowerBound).toBe(false);
    const e = await createClient(EventService, transport).listEvents({ query: { limit: 1 }, organizationId: orgId }, { headers });
    expect(e.details?.totalResultIsLowerBound).toBe(true);
  });

  it("refuses a limit above 1000 whatever the total asked for", async () => {
    const r = await call(t, "rest", t.pat, "ListUsers", { query: { limit: 1001, exactTotal: true } });
    expect(r.code).toBe("invalid_argument");
  });

  it("leaves SCIM's totalResults exact (RFC 7644)", async () => {
    const r = await scim(t, t.pat, "GET", `/scim/v2/${orgId}/Users?count=1`);
    expect(r.status).toBe(200);
    expect((r.body as { totalResults: number }).totalResults).toBe(CREATED);
  });
});
