// SetUserMetadata / ListUserMetadata / DeleteUserMetadata through the real
// server: upsert, paging, key filters, all-or-nothing deletes with `keys`
// query parameters, validation, and allowed and denied callers.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { TextQueryMethod } from "../../gen/svc/object/v2/object_pb.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { auth, b64, type Caller, connectClient, createHuman, grpcClient, json, restError, rpcError, userCallers } from "../support/users.js";

let t: TestServer;
let orgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

interface ListBody {
  details: { totalResult: string };
  result?: { key: string; value: string; details: { resourceOwner: string; creationDate: string } }[];
}

async function list(userId: string, body: unknown = {}, token = t.pat): Promise<ListBody> {
  const res = await rest(t.url, token, "POST", `/v2/users/${userId}/metadata/search`, body);
  expect(res.status).toBe(200);
  return json<ListBody>(res);
}

const entries = (body: ListBody) => (body.result ?? []).map((m) => [m.key, Buffer.from(m.value, "base64").toString()]);

beforeAll(async () => {
  t = await startTestServer();
  ({ orgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

describe("user metadata", () => {
  it("creates, replaces, lists and deletes entries (REST)", async () => {
    const id = await createHuman(t, orgId, "meta-rest");
    const set = (metadata: { key: string; value: string }[]) =>
      rest(t.url, t.pat, "POST", `/v2/users/${id}/metadata`, { metadata: metadata.map((m) => ({ key: m.key, value: b64(m.value) })) });
    expect(
      (
        await set([
          { key: "team", value: "red" },
          { key: "cost-center", value: "42" },
        ])
      ).status,
    ).toBe(200);
    const res = await set([
      { key: "team", value: "blue" },
      { key: "tier", value: "gold" },
    ]);
    expect(res.status).toBe(200);
    expect((await json<{ setDate: string }>(res)).setDate).toBeTruthy();

    const all = await list(id, { query: { asc: true } });
    expect(all.details.totalResult).toBe("3");
    expect(entries(all)).toEqual([
      ["cost-center", "42"],
      ["team", "blue"],
      ["tier", "gold"],
    ]);
    expect(all.result?.[0]?.details.resourceOwner).toBe(orgId);
    expect(entries(await list(id, { query: { asc: false, limit: 1, offset: 1 } }))).toEqual([["team", "blue"]]);
    const filtered = await list(id, { queries: [{ keyQuery: { key: "T", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } }], query: { asc: true } });
    expect(entries(filtered)).toEqual([
      ["team", "blue"],
      ["tier", "gold"],
    ]);
    expect(filtered.details.totalResult).toBe("2");
    expect(entries(await list(id, { queries: [{ keyQuery: { key: "T" } }] }))).toEqual([]);

    const deleted = await fetch(`${t.url}/v2/users/${id}/metadata?keys=team&keys=tier`, { method: "DELETE", headers: { authorization: `Bearer ${t.pat}` } });
    expect(deleted.status).toBe(200);
    expect(entries(await list(id))).toEqual([["cost-center", "42"]]);

    const events = await t.server.db.prisma.event.findMany({
      where: { aggregateId: id, type: { startsWith: "user.metadata" } },
      orderBy: { createdAt: "asc" },
    });
    expect(events.map((e) => [e.type, e.payload])).toEqual([
      ["user.metadata.set", { keys: ["team", "cost-center"] }],
      ["user.metadata.set", { keys: ["team", "tier"] }],
      ["user.metadata.removed", { keys: ["team", "tier"] }],
    ]);
    expect(JSON.stringify(events)).not.toContain("gold");
  });

  it("deletes nothing when one key is missing, and needs at least one key", async () => {
    const id = await createHuman(t, orgId, "meta-delete");
    await rest(t.url, t.pat, "POST", `/v2/users/${id}/metadata`, { metadata: [{ key: "a", value: b64("1") }] });
    const del = (query: string) => fetch(`${t.url}/v2/users/${id}/metadata${query}`, { method: "DELETE", headers: { authorization: `Bearer ${t.pat}` } });
    expect(await restError(await del("?keys=a&keys=missing"))).toEqual({ status: 404, reason: "Errors.User.Metadata.NotFound" });
    expect(entries(await list(id))).toEqual([["a", "1"]]);
    expect(await restError(await del(""))).toEqual({ status: 400, reason: "Errors.User.Metadata.Keys.Missing" });
    // Query parameters are strict: an unknown one is refused.
    expect((await del("?key=a")).status).toBe(400);
  });

  it("validates entries", async () => {
    const id = await createHuman(t, orgId, "meta-invalid");
    const set = (metadata: unknown) => rest(t.url, t.pat, "POST", `/v2/users/${id}/metadata`, { metadata });
    expect(await restError(await set([]))).toEqual({ status: 400, reason: "Errors.User.Metadata.Missing" });
    expect(
      await restError(
        await set([
          { key: "k", value: b64("1") },
          { key: "k", value: b64("2") },
        ]),
      ),
    ).toEqual({ status: 400, reason: "Errors.User.Metadata.Duplicate" });
    expect(await restError(await set([{ key: "", value: b64("1") }]))).toEqual({ status: 400, reason: "Errors.User.metadata_key.Missing" });
    expect(await restError(await set([{ key: "big", value: Buffer.alloc(64 * 1024 + 1).toString("base64") }]))).toEqual({
      status: 400,
      reason: "Errors.User.Metadata.TooLarge",
    });
    expect(await restError(await set(Array.from({ length: 101 }, (_, i) => ({ key: `k${i}`, value: b64("v") }))))).toEqual({
      status: 400,
      reason: "Errors.User.Metadata.TooMany",
    });
    expect(await restError(await rest(t.url, t.pat, "POST", "/v2/users/nobody-here/metadata", { metadata: [{ key: "a", value: b64("1") }] }))).toEqual({
      status: 404,
      reason: "Errors.User.NotFound",
    });
    expect(entries(await list(id))).toEqual([]);
  });

  it("works over Connect and gRPC", async () => {
    const id = await createHuman(t, orgId, "meta-rpc");
    const client = connectClient(t);
    await client.setUserMetadata({ userId: id, metadata: [{ key: "bin", value: new Uint8Array([0, 255, 1]) }] }, auth(t.pat));
    const listed = await grpcClient(t).listUserMetadata(
      { userId: id, queries: [{ query: { case: "keyQuery", value: { key: "bin", method: TextQueryMethod.EQUALS } } }] },
      auth(t.pat),
    );
    expect(listed.details?.totalResult).toBe(1n);
    expect(listed.result[0]?.value).toEqual(new Uint8Array([0, 255, 1]));
    expect((await client.listUserMetadata({ userId: id }, auth(t.pat))).result.map((m) => m.key)).toEqual(["bin"]);
    await client.deleteUserMetadata({ userId: id, keys: ["bin"] }, auth(t.pat));
    expect(await rpcError(client.deleteUserMetadata({ userId: id, keys: ["bin"] }, auth(t.pat)))).toEqual({
      code: Code.NotFound,
      reason: "Errors.User.Metadata.NotFound",
    });
  });

  it("lets users read, but not write, their own metadata", async () => {
    await rest(t.url, t.pat, "POST", `/v2/users/${nobody.userId}/metadata`, { metadata: [{ key: "mine", value: b64("yes") }] });
    expect(entries(await list(nobody.userId, {}, nobody.pat))).toEqual([["mine", "yes"]]);
    const write = await rest(t.url, nobody.pat, "POST", `/v2/users/${nobody.userId}/metadata`, { metadata: [{ key: "mine", value: b64("no") }] });
    expect(await restError(write)).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
  });

  it("allows user managers and denies others", async () => {
    const id = await createHuman(t, orgId, "meta-perm");
    const setAs = (token: string) => rest(t.url, token, "POST", `/v2/users/${id}/metadata`, { metadata: [{ key: "k", value: b64("v") }] });
    const listAs = (token: string) => rest(t.url, token, "POST", `/v2/users/${id}/metadata/search`, {});
    const deleteAs = (token: string) => fetch(`${t.url}/v2/users/${id}/metadata?keys=k`, { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
    for (const call of [setAs, listAs, deleteAs]) {
      expect(await restError(await call(nobody.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect(await restError(await call(foreignManager.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
    }
    expect(await restError(await setAs(auditor.pat))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
    expect(await restError(await deleteAs(auditor.pat))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
    expect((await setAs(manager.pat)).status).toBe(200);
    expect((await listAs(auditor.pat)).status).toBe(200);
    expect((await listAs(manager.pat)).status).toBe(200);
    expect((await deleteAs(manager.pat)).status).toBe(200);
    expect(await rpcError(connectClient(t).listUserMetadata({ userId: id }, auth(foreignManager.pat)))).toEqual({
      code: Code.NotFound,
      reason: "Errors.User.NotFound",
    });
  });
});

describe("metadata limits per user (a user's metadata ends up in tokens)", () => {
  const set = (id: string, metadata: { key: string; value: Buffer }[]) =>
    rest(t.url, t.pat, "POST", `/v2/users/${id}/metadata`, { metadata: metadata.map((m) => ({ key: m.key, value: m.value.toString("base64") })) });
  const kib = (n: number) => Buffer.alloc(n * 1024, 97);

  it("at most 100 entries: the 101st key is refused and nothing of its request is kept", async () => {
    const id = await createHuman(t, orgId, "meta-count");
    const hundred = Array.from({ length: 100 }, (_, i) => ({ key: `k${i}`, value: Buffer.from("v") }));
    expect((await set(id, hundred)).status).toBe(200);
    const over = await set(id, [
      { key: "k0", value: Buffer.from("changed") },
      { key: "k100", value: Buffer.from("v") },
    ]);
    expect(over.status).toBe(400);
    expect((await restError(over)).reason).toBe("Errors.User.Metadata.LimitReached");
    const all = await list(id, { query: { limit: 1000 } });
    expect(all.details.totalResult).toBe("100");
    expect(entries(all).find(([k]) => k === "k0")?.[1]).toBe("v");
    // Replacing existing keys stays possible at the limit.
    expect((await set(id, [{ key: "k1", value: Buffer.from("w") }])).status).toBe(200);
  });

  it("at most 256 KiB of keys and values, over several requests and in one", async () => {
    const id = await createHuman(t, orgId, "meta-bytes");
    for (const key of ["a", "b", "c", "d"]) expect((await set(id, [{ key, value: kib(60) }])).status).toBe(200);
    const fifth = await set(id, [{ key: "e", value: kib(60) }]);
    expect(fifth.status).toBe(400);
    expect((await restError(fifth)).reason).toBe("Errors.User.Metadata.LimitReached");
    const other = await createHuman(t, orgId, "meta-bytes-one");
    const once = await set(
      other,
      ["a", "b", "c", "d", "e"].map((key) => ({ key, value: kib(60) })),
    );
    expect(once.status).toBe(400);
    expect((await list(other)).details.totalResult ?? "0").toBe("0");
  });
});
