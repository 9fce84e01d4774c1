// The outbox across processes (svc as `npm start` runs it):
//  - svc killed with SIGKILL after an event's commit and before its delivery, then started again on the same data: the
//    event is delivered, once (on the embedded database, or PostgreSQL when the suite runs on it);
//  - two replicas on one PostgreSQL, users created through both: each of 1,000 events reaches the receiver once.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { freshDatabase, PG_URL, type TestDatabase } from "../support/db.js";
import { type ChildServer, type Replicas, rest, spawnServer, startReplicas } from "../support/server.js";

const describePg = PG_URL ? describe : describe.skip;

/** Counts the events each event id arrived with, and the idempotency keys. */
function receiverOn(port: number, arrivals: Map<string, number>): Promise<Server> {
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => {
      raw += c.toString("utf8");
    });
    req.on("end", () => {
      const body = JSON.parse(raw) as { id: string };
      arrivals.set(body.id, (arrivals.get(body.id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(server)));
}

async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function json(res: Response): Promise<Record<string, unknown>> {
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function kill9(s: ChildServer): Promise<void> {
  const gone = new Promise((r) => (s.proc.exitCode !== null || s.proc.signalCode !== null ? r(null) : s.proc.once("exit", r)));
  s.proc.kill("SIGKILL");
  await gone;
}

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {});
});

describe("the outbox and SIGKILL", () => {
  it("an event committed before svc was killed is delivered once after the restart", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "svc-outbox-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let db: TestDatabase | undefined;
    if (PG_URL) {
      db = await freshDatabase();
      cleanup.push(() => (db as TestDatabase).drop());
    }
    const env = {
      SVC_DATA_DIR: dir,
      ...(db?.url ? { SVC_DATABASE_URL: db.url } : {}),
      SVC_ACTIONS_ALLOW_PRIVATE: "true",
      SVC_ACTIONS_DELIVERY_BACKOFF_MS: "1000",
    };
    // A port nothing listens on yet: the receiver comes up only after svc was killed.
    const probe = await receiverOn(0, new Map());
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));

    let svc = await spawnServer(env, 120_000);
    cleanup.push(() => svc.stop());
    const pat = (await readFile(path.join(dir, "admin.pat"), "utf8")).trim();
    const instance = await json(await rest(svc.url, pat, "GET", "/v2/instance"));
    const orgId = (instance.instance as { defaultOrganizationId: string }).defaultOrganizationId;
    const target = await json(
      await rest(svc.url, pat, "POST", "/v2/actions/targets/new", { name: "kill9", endpoint: `http://127.0.0.1:${port}/e`, kind: "TARGET_KIND_WEBHOOK" }),
    );
    await json(await rest(svc.url, pat, "PUT", "/v2/actions/executions", { event: { event: "user.machine.added" }, targetIds: [target.id] }));
    const user = await json(await rest(svc.url, pat, "POST", "/v2/users/new", { organizationId: orgId, username: "kill9-user", machine: { name: "k" } }));
    // The create answered: the event and its delivery are committed. Killed before any delivery could succeed.
    await kill9(svc);

    const arrivals = new Map<string, number>();
    const receiver = await receiverOn(port, arrivals);
    cleanup.push(() => new Promise((r) => receiver.close(r)));
    svc = await spawnServer(env, 120_000);
    // A delivery claimed by the killed process waits for its lease (45 s) to end; one not claimed is due at once.
    await until("the delivery", () => arrivals.size === 1, 90_000);
    const events = await json(await rest(svc.url, pat, "POST", "/v2/events", { aggregateId: user.id, eventTypes: ["user.machine.added"] }));
    const eventId = (events.result as { id: string }[])[0]?.id as string;
    await until(
      "the delivered state",
      async () => {
        const d = await json(await rest(svc.url, pat, "POST", "/v2/actions/deliveries", { targetId: target.id, state: "delivered" }));
        return ((d.result as unknown[]) ?? []).length === 1;
      },
      30_000,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    expect([...arrivals]).toEqual([[eventId, 1]]);
    await svc.stop();
  }, 300_000);
});

describePg("the outbox shared by two replicas on one PostgreSQL", () => {
  let replicas: Replicas | undefined;

  it("delivers each of 1,000 events once", async () => {
    const arrivals = new Map<string, number>();
    const receiver = await receiverOn(0, arrivals);
    cleanup.push(() => new Promise((r) => receiver.close(r)));
    const port = (receiver.address() as AddressInfo).port;
    replicas = await startReplicas(2, { SVC_ACTIONS_ALLOW_PRIVATE: "true", SVC_ACTIONS_DELIVERY_BACKOFF_MS: "200" });
    cleanup.push(() => (replicas as Replicas).stop());
    const { servers, pat } = replicas;
    const url = (i: number) => (servers[i % 2] as ChildServer).url;
    const instance = await json(await rest(url(0), pat, "GET", "/v2/instance"));
    const orgId = (instance.instance as { defaultOrganizationId: string }).defaultOrganizationId;
    const target = await json(
      await rest(url(0), pat, "POST", "/v2/actions/targets/new", { name: "replicas", endpoint: `http://127.0.0.1:${port}/e`, kind: "TARGET_KIND_WEBHOOK" }),
    );
    await json(await rest(url(1), pat, "PUT", "/v2/actions/executions", { event: { event: "user.machine.added" }, targetIds: [target.id] }));
    // The execution reaches replica 0's cache by notification; give it the cache's expiry besides, to be sure.
    await new Promise((r) => setTimeout(r, 5_500));
    const N = 1_000;
    let next = 0;
    const worker = async () => {
      while (next < N) {
        const i = next++;
        await json(await rest(url(i), pat, "POST", "/v2/users/new", { organizationId: orgId, username: `replica-user-${i}`, machine: { name: `r${i}` } }));
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await until("1,000 deliveries", () => arrivals.size >= N, 120_000);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(arrivals.size).toBe(N);
    expect([...arrivals.values()].filter((n) => n !== 1)).toEqual([]);
    // Both replicas delivered (each claims what it can), together each event once.
    const delivered = async (s: ChildServer) => {
      const text = await (await fetch(`${s.url}/metrics`)).text();
      return Number(/svc_action_deliveries_total\{outcome="delivered"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const counts = await Promise.all(servers.map(delivered));
    expect(counts.every((n) => n > 0)).toBe(true);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(N);
  }, 300_000);
});
