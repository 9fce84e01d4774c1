// Issue 25, finding 5: a create whose COMMIT the database carried out but whose answer never reached svc (the
// connection dropped in between) was answered like an outage, 503 "try again" with Retry-After, and the client's retry
// then got 409. A TCP proxy between svc and a private PostgreSQL cluster passes everything until the COMMIT of the
// marked create, lets the COMMIT through, and cuts both connections when the server's answer comes back.
// The answer is now the distinct "outcome unknown" (503, Errors.Database.OutcomeUnknown, Svc-Outcome: unknown, no
// Retry-After), and a retry with the same Idempotency-Key gets the create's first answer (it was recorded in the same
// transaction), while a retry without one is the duplicate it always was.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type PgCluster, pgBinDir, startPgCluster } from "../support/pg-cluster.js";
import { type ChildServer, spawnServer } from "../support/server.js";

const maybe = pgBinDir() ? describe : describe.skip;

/**
 * A proxy that loses the answer that tells svc the change of the statement that sent `marker` was committed: that
 * statement's own answer when it ran on its own (autocommit: ReadyForQuery says idle), else the answer to the COMMIT
 * of its transaction.
 */
async function commitAnswerLosingProxy(targetPort: number): Promise<{ port: number; mark(marker: string): void; dropped(): number; close(): void }> {
  let marker: Buffer | undefined;
  let dropped = 0;
  /** The transaction status of a chunk ending with ReadyForQuery ('Z', length 5, status), if it does. */
  const readyStatus = (chunk: Buffer) =>
    chunk.length >= 6 && chunk[chunk.length - 6] === 0x5a && chunk.readInt32BE(chunk.length - 5) === 5
      ? String.fromCharCode(chunk[chunk.length - 1] as number)
      : undefined;
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1");
    let state: "pass" | "marked" | "in-transaction" | "committing" = "pass";
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.on("data", (chunk: Buffer) => {
      if (state === "pass" && marker && chunk.includes(marker)) {
        state = "marked";
        marker = undefined;
      } else if (state === "in-transaction" && chunk.includes("COMMIT")) state = "committing";
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      const status = readyStatus(chunk);
      if ((state === "marked" && status === "I") || (state === "committing" && status !== undefined)) {
        // The server committed and answered; the answer is lost with the connection.
        dropped++;
        end();
        return;
      }
      if (state === "marked" && status === "T") state = "in-transaction";
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    mark: (m) => {
      marker = Buffer.from(m);
    },
    dropped: () => dropped,
    close: () => server.close(),
  };
}

maybe("a create whose COMMIT answer is lost (private cluster behind a proxy)", () => {
  let cluster: PgCluster;
  let proxy: Awaited<ReturnType<typeof commitAnswerLosingProxy>>;
  let s: ChildServer;
  let dataDir: string;
  let pat: string;
  let orgId: string;
  const create = (username: string, key?: string) =>
    fetch(`${s.url}/v2/users/new`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      body: JSON.stringify({ organizationId: orgId, username, machine: { name: username } }),
    });

  beforeAll(async () => {
    cluster = await startPgCluster();
    proxy = await commitAnswerLosingProxy(cluster.port);
    dataDir = await mkdtemp(path.join(tmpdir(), "svc-outcome-"));
    s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: `postgresql://postgres@127.0.0.1:${proxy.port}/postgres` });
    pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    const orgs = await fetch(`${s.url}/v2/organizations`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
      body: "{}",
    });
    orgId = ((await orgs.json()) as { result: { id: string }[] }).result[0]?.id as string;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    proxy?.close();
    await cluster?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function usersNamed(username: string): Promise<string[]> {
    const res = await fetch(`${s.url}/v2/users`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
      body: JSON.stringify({ queries: [{ userNameQuery: { userName: username, method: "TEXT_QUERY_METHOD_EQUALS" } }] }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { result?: { userId: string }[] }).result?.map((u) => u.userId) ?? [];
  }

  it("is answered 'outcome unknown'; a retry without a key is the duplicate (409), with the same key the first answer", async () => {
    proxy.mark("lost-answer-robot");
    const lost = await create("lost-answer-robot");
    expect(proxy.dropped()).toBe(1);
    expect(lost.status).toBe(503);
    expect(lost.headers.get("svc-outcome")).toBe("unknown");
    expect(lost.headers.get("retry-after")).toBeNull();
    expect(((await lost.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Database.OutcomeUnknown");
    // It was committed: the plain retry is a duplicate.
    expect(await usersNamed("lost-answer-robot")).toHaveLength(1);
    expect((await create("lost-answer-robot")).status).toBe(409);

    // With an Idempotency-Key the answer was recorded with the create: the retry gets it.
    const key = "4b8e1f0a-lost-answer-key";
    proxy.mark("keyed-robot");
    const first = await create("keyed-robot", key);
    expect(proxy.dropped()).toBe(2);
    expect(first.status).toBe(503);
    expect(first.headers.get("svc-outcome")).toBe("unknown");
    const retry = await create("keyed-robot", key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const ids = await usersNamed("keyed-robot");
    expect(ids).toHaveLength(1);
    expect(((await retry.json()) as { id: string }).id).toBe(ids[0]);
    expect(s.logs.filter((l) => l.level === 50)).toEqual([]);
  }, 60_000);
});
