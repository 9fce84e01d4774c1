// Organization metadata: set (upsert), list (paging, key filter), delete
// (keys as repeated query parameters over REST); values are bytes.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { createOrg, fails, ok, VIAS, type World, world } from "../support/orgs.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: World;

beforeAll(async () => {
  t = await startTestServer();
  w = await world(t, "md");
});
afterAll(() => t.stop());

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");
const entries = (body: { result?: { key: string; value: string }[] }) => (body.result ?? []).map((e) => [e.key, Buffer.from(e.value, "base64").toString()]);

describe("SetOrganizationMetadata and ListOrganizationMetadata", () => {
  it("stores bytes, replaces existing keys, and lists them", async () => {
    for (const via of VIAS) {
      const org = await createOrg(t, `Meta ${via}`);
      const set = await ok(t, via, t.pat, "SetOrganizationMetadata", {
        organizationId: org,
        metadata: [
          { key: "region", value: b64("eu-west") },
          { key: "tier", value: b64("gold") },
          { key: "binary", value: b64(Buffer.from([0, 255, 10])) },
        ],
      });
      expect(set.setDate).toEqual(expect.any(String));
      await ok(t, via, t.pat, "SetOrganizationMetadata", { organizationId: org, metadata: [{ key: "tier", value: b64("platinum") }] });
      const listed = await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org, query: { asc: true } });
      expect(listed.details.totalResult).toBe("3");
      expect(entries(listed)).toEqual([
        ["binary", Buffer.from([0, 255, 10]).toString()],
        ["region", "eu-west"],
        ["tier", "platinum"],
      ]);
      expect(listed.result[2].details.resourceOwner).toBe(org);
      const tier = listed.result[2].details;
      expect(new Date(tier.changeDate).getTime()).toBeGreaterThanOrEqual(new Date(tier.creationDate).getTime());
    }
  });

  it("pages and filters by key", async () => {
    const org = await createOrg(t, "Meta Paged");
    await ok(t, "rest", t.pat, "SetOrganizationMetadata", {
      organizationId: org,
      metadata: ["app.a", "app.b", "app.c", "other", "app_x"].map((key) => ({ key, value: b64(key) })),
    });
    for (const via of VIAS) {
      const page = await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org, query: { offset: "1", limit: 2, asc: true } });
      expect(page.details.totalResult).toBe("5");
      expect(entries(page).map(([k]) => k)).toEqual(["app.b", "app.c"]);
      const desc = await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org, query: { limit: 1 } });
      expect(entries(desc).map(([k]) => k)).toEqual(["other"]);
      const prefixed = await ok(t, via, t.pat, "ListOrganizationMetadata", {
        organizationId: org,
        query: { asc: true },
        queries: [{ keyQuery: { key: "APP.", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } }],
      });
      // "app_x" must not match: "_" is no wildcard.
      expect(entries(prefixed).map(([k]) => k)).toEqual(["app.a", "app.b", "app.c"]);
      const caseSensitive = await ok(t, via, t.pat, "ListOrganizationMetadata", {
        organizationId: org,
        queries: [{ keyQuery: { key: "APP.", method: "TEXT_QUERY_METHOD_STARTS_WITH" } }],
      });
      expect(caseSensitive.result ?? []).toEqual([]);
      const exact = await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org, queries: [{ keyQuery: { key: "other" } }] });
      expect(entries(exact)).toEqual([["other", "other"]]);
    }
  });

  it("validates keys, values and counts", async () => {
    const org = w.orgA;
    for (const via of VIAS) {
      const set = (metadata: unknown[]) => ({ organizationId: org, metadata });
      await fails(t, via, t.pat, "SetOrganizationMetadata", set([]), "invalid_argument", "Errors.Org.Metadata.Missing");
      await fails(t, via, t.pat, "SetOrganizationMetadata", set([{ key: "", value: b64("v") }]), "invalid_argument", "Errors.Org.Metadata.Key.Missing");
      await fails(
        t,
        via,
        t.pat,
        "SetOrganizationMetadata",
        set([{ key: "k".repeat(201), value: b64("v") }]),
        "invalid_argument",
        "Errors.Org.Metadata.Key.TooLong",
      );
      await fails(t, via, t.pat, "SetOrganizationMetadata", set([{ key: "a\nb", value: b64("v") }]), "invalid_argument", "Errors.Org.Metadata.Key.Invalid");
      await fails(t, via, t.pat, "SetOrganizationMetadata", set([{ key: "k" }]), "invalid_argument", "Errors.Org.Metadata.Value.Missing");
      await fails(
        t,
        via,
        t.pat,
        "SetOrganizationMetadata",
        set([{ key: "big", value: b64(Buffer.alloc(64 * 1024 + 1)) }]),
        "invalid_argument",
        "Errors.Org.Metadata.TooLarge",
      );
      await fails(
        t,
        via,
        t.pat,
        "SetOrganizationMetadata",
        set([
          { key: "d", value: b64("1") },
          { key: "d", value: b64("2") },
        ]),
        "invalid_argument",
        "Errors.Org.Metadata.Duplicate",
      );
      await fails(
        t,
        via,
        t.pat,
        "SetOrganizationMetadata",
        set(Array.from({ length: 101 }, (_, i) => ({ key: `k${i}`, value: b64("v") }))),
        "invalid_argument",
        "Errors.Org.Metadata.TooMany",
      );
      await fails(t, via, t.pat, "SetOrganizationMetadata", set([{ key: "k", value: "not base64!" }]), "invalid_argument");
      await fails(
        t,
        via,
        t.pat,
        "SetOrganizationMetadata",
        { organizationId: "no-such-org", metadata: [{ key: "k", value: b64("v") }] },
        "not_found",
        "Errors.Org.NotFound",
      );
    }
    // 64 KiB exactly is fine; none of the failures stored anything.
    await ok(t, "rest", t.pat, "SetOrganizationMetadata", { organizationId: org, metadata: [{ key: "big", value: b64(Buffer.alloc(64 * 1024)) }] });
    const listed = await ok(t, "rest", t.pat, "ListOrganizationMetadata", { organizationId: org });
    expect(entries(listed).map(([k]) => k)).toEqual(["big"]);
    await ok(t, "rest", t.pat, "DeleteOrganizationMetadata", { organizationId: org, keys: ["big"] });
  });

  it("lets owners write and auditors and user managers read; hides A from B", async () => {
    for (const via of VIAS) {
      await ok(t, via, w.ownerA.pat, "SetOrganizationMetadata", { organizationId: w.orgA, metadata: [{ key: "owner-set", value: b64(via) }] });
      await fails(
        t,
        via,
        w.auditorA.pat,
        "SetOrganizationMetadata",
        { organizationId: w.orgA, metadata: [{ key: "x", value: b64("x") }] },
        "permission_denied",
      );
      await fails(
        t,
        via,
        w.userManagerA.pat,
        "SetOrganizationMetadata",
        { organizationId: w.orgA, metadata: [{ key: "x", value: b64("x") }] },
        "permission_denied",
      );
      for (const reader of [w.auditorA, w.userManagerA]) {
        expect(entries(await ok(t, via, reader.pat, "ListOrganizationMetadata", { organizationId: w.orgA }))).toEqual([["owner-set", via]]);
      }
      await fails(t, via, w.ownerB.pat, "ListOrganizationMetadata", { organizationId: w.orgA }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, w.plainA.pat, "ListOrganizationMetadata", { organizationId: w.orgA }, "not_found", "Errors.Org.NotFound");
      await fails(t, via, w.auditorA.pat, "DeleteOrganizationMetadata", { organizationId: w.orgA, keys: ["owner-set"] }, "permission_denied");
      await fails(t, via, w.ownerB.pat, "DeleteOrganizationMetadata", { organizationId: w.orgA, keys: ["owner-set"] }, "not_found", "Errors.Org.NotFound");
      await ok(t, via, w.ownerA.pat, "DeleteOrganizationMetadata", { organizationId: w.orgA, keys: ["owner-set"] });
    }
  });
});

describe("DeleteOrganizationMetadata", () => {
  it("removes the given keys (query parameters over REST), all or nothing", async () => {
    for (const via of VIAS) {
      const org = await createOrg(t, `Meta Delete ${via}`);
      const keys = ["plain", "with space", "slash/and&amp", "ünï", "keep"];
      await ok(t, via, t.pat, "SetOrganizationMetadata", { organizationId: org, metadata: keys.map((key) => ({ key, value: b64(key) })) });
      // One missing key: NotFound, and nothing is removed.
      await fails(t, via, t.pat, "DeleteOrganizationMetadata", { organizationId: org, keys: ["plain", "absent"] }, "not_found", "Errors.Org.Metadata.NotFound");
      expect((await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org })).details.totalResult).toBe("5");
      const out = await ok(t, via, t.pat, "DeleteOrganizationMetadata", {
        organizationId: org,
        keys: ["plain", "with space", "slash/and&amp", "ünï", "plain"],
      });
      expect(out.deletionDate).toEqual(expect.any(String));
      expect(entries(await ok(t, via, t.pat, "ListOrganizationMetadata", { organizationId: org })).map(([k]) => k)).toEqual(["keep"]);
      await fails(t, via, t.pat, "DeleteOrganizationMetadata", { organizationId: org, keys: [] }, "invalid_argument", "Errors.Org.Metadata.Missing");
      const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: org, type: { startsWith: "org.metadata." } }, orderBy: { type: "asc" } });
      expect(events.map((e) => [e.type, e.payload])).toEqual([
        ["org.metadata.removed", { keys: ["plain", "with space", "slash/and&amp", "ünï"] }],
        ["org.metadata.set", { keys }],
      ]);
    }
  });

  it("over gRPC", async () => {
    const org = await createOrg(t, "Meta Grpc");
    const client = createClient(OrganizationService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${t.pat}` };
    await client.setOrganizationMetadata({ organizationId: org, metadata: [{ key: "k", value: new Uint8Array([1, 2, 3]) }] }, { headers });
    const listed = await client.listOrganizationMetadata({ organizationId: org }, { headers });
    expect(listed.result.map((e) => [e.key, [...e.value]])).toEqual([["k", [1, 2, 3]]]);
    await client.deleteOrganizationMetadata({ organizationId: org, keys: ["k"] }, { headers });
    const err = await client.deleteOrganizationMetadata({ organizationId: org, keys: ["k"] }, { headers }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("metadata limits per organization (issue 11, finding 11)", () => {
  const set = (orgId: string, metadata: { key: string; value: Buffer }[]) =>
    ok(t, "rest", t.pat, "SetOrganizationMetadata", { organizationId: orgId, metadata: metadata.map((m) => ({ key: m.key, value: b64(m.value) })) });
  const count = async (orgId: string) =>
    (await ok(t, "rest", t.pat, "ListOrganizationMetadata", { organizationId: orgId, query: { limit: 1 } })).details.totalResult;

  it("at most 500 entries: a request that would pass them is refused whole; replacing stays possible", async () => {
    const orgId = await createOrg(t, "md limit count");
    for (let r = 0; r < 5; r++)
      await set(
        orgId,
        Array.from({ length: 100 }, (_, i) => ({ key: `k${r}-${i}`, value: Buffer.from("v") })),
      );
    const over = await fails(
      t,
      "rest",
      t.pat,
      "SetOrganizationMetadata",
      {
        organizationId: orgId,
        metadata: [
          { key: "k0-0", value: b64("changed") },
          { key: "one-more", value: b64("v") },
        ],
      },
      "failed_precondition",
      "Errors.Org.Metadata.LimitReached",
    );
    expect(over.status).toBe(400);
    expect(await count(orgId)).toBe("500");
    const first = await ok(t, "rest", t.pat, "ListOrganizationMetadata", { organizationId: orgId, queries: [{ keyQuery: { key: "k0-0" } }] });
    expect(entries(first)).toEqual([["k0-0", "v"]]);
    await set(orgId, [{ key: "k0-0", value: Buffer.from("w") }]);
  });

  it("at most 1 MiB of keys and values, also when concurrent requests each fit alone", async () => {
    const orgId = await createOrg(t, "md limit bytes");
    const value = Buffer.alloc(60 * 1024, 97);
    for (let i = 0; i < 16; i++) await set(orgId, [{ key: `b${i}`, value }]);
    // 16 × 60 KiB fit; two more writers each fit alone, not both.
    const both = await Promise.all(
      ["x", "y"].map((key) =>
        fetch(`${t.url}/v2/organizations/${orgId}/metadata`, {
          method: "POST",
          headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/json" },
          body: JSON.stringify({ metadata: [{ key, value: b64(value) }] }),
        }),
      ),
    );
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await count(orgId)).toBe("17");
    // Another organization is not affected by this one's usage.
    await set(w.orgB, [{ key: "elsewhere", value }]);
  });
});
