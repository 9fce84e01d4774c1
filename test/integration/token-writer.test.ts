// The batching token writer (src/store/tokens.ts) on the real database: rows written by concurrent callers share
// INSERTs, several INSERTs run at once, and each caller learns whether its own row was the one written. A used
// assertion's marker sent twice in one batch is fresh for one caller only (a replay must never pass because it
// was batched with the original).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { newId } from "../../src/domain/ids.js";
import { TokenRepo, type TokenRow, type UsedAssertion } from "../../src/store/tokens.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { createMachine, defaultOrgId } from "../support/users.js";

let t: TestServer;
let repo: TokenRepo;
let userId: string;

beforeAll(async () => {
  t = await startTestServer();
  userId = await createMachine(t, await defaultOrgId(t), "writer-robot");
  // The server's own client: the writer is per database client, so this shares the server's queues.
  repo = new TokenRepo(t.server.db.prisma);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

const row = (id = newId()): TokenRow => ({
  id,
  instanceId: "writer-test",
  format: "jwt",
  userId,
  clientId: "writer-robot",
  scopes: ["openid"],
  audience: ["writer-robot"],
  expiresAt: new Date(Date.now() + 60_000),
  createdAt: new Date(),
});

const used = (identifier: string): UsedAssertion => ({
  instanceId: "writer-test",
  subject: userId,
  identifier,
  owner: { userId },
  expiresAt: new Date(Date.now() + 60_000),
  at: new Date(),
});

const stored = async (ids: string[]) =>
  (await t.server.db.prisma.oAuthToken.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((r) => r.id).sort();

describe("token writer", () => {
  it("writes every row of many concurrent callers, each told its own row was written", async () => {
    const rows = Array.from({ length: 150 }, () => row());
    const answers = await Promise.all(rows.map((r) => repo.insertBatched([r])));
    expect(answers.every(([fresh]) => fresh === true)).toBe(true);
    expect(await stored(rows.map((r) => r.id))).toEqual(rows.map((r) => r.id).sort());
  });

  it("tells a caller whose row exists already that it was not written", async () => {
    const existing = row();
    expect(await repo.insertBatched([existing])).toEqual([true]);
    const [again, other] = await Promise.all([repo.insertBatched([existing]), repo.insertBatched([row()])]);
    expect(again).toEqual([false]);
    expect(other).toEqual([true]);
  });

  it("gives a marker queued twice in one batch to one caller only", async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      // The first calls take every INSERT slot; the two copies then wait in the queue and go out in one INSERT.
      const busy = Array.from({ length: 8 }, () => repo.recordAssertion(used(newId())));
      const same = used(newId());
      const copies = await Promise.all([repo.recordAssertion(same), repo.recordAssertion(same), repo.recordAssertion(same)]);
      await Promise.all(busy);
      expect(copies.filter(Boolean)).toHaveLength(1);
    }
  });

  it("writes a batch larger than the prepared shapes (one unnamed INSERT) and a marker with its token", async () => {
    const rows = Array.from({ length: 40 }, () => row());
    expect(await repo.insertBatched(rows)).toEqual(rows.map(() => true));
    const token = row();
    const marker = repo.markerOf(used(newId()));
    expect(await repo.insertBatched([token, marker])).toEqual([true, true]);
    expect(await repo.insertBatched([row(), marker])).toEqual([true, false]);
  });
});
