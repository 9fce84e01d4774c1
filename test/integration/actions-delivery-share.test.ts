// Events out (issue 27): a slow receiver holds its own share of a replica's deliveries only. Two webhook targets on one
// event: one receiver holds every request unanswered, the other answers at once. The fast one gets every event while
// the slow one still holds its first requests (well within the slow target's timeout), the slow one never has more
// than its share (perTarget, 32) of requests open at once, and once it answers it gets every event too, each once.
// (Before the claims kept to the share, a claim made while the slow target had 31 open could take 32 more of its.)
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

/** Per-target share of a replica's deliveries (DeliveryWorker's perTarget default). */
const SHARE = 32;
const USERS = 90;

/** A receiver that records the event ids it got; while `hold`, it keeps the requests open, counting the most at once. */
class Receiver {
  ids: string[] = [];
  hold = false;
  open = 0;
  mostOpen = 0;
  private held: ServerResponse[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      req.on("end", () => {
        this.ids.push((JSON.parse(raw) as { id: string }).id);
        this.open++;
        this.mostOpen = Math.max(this.mostOpen, this.open);
        res.on("close", () => this.open--);
        if (this.hold) this.held.push(res);
        else res.writeHead(204).end();
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  }

  release(): void {
    this.hold = false;
    for (const res of this.held.splice(0)) res.writeHead(204).end();
  }

  async stop(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let t: TestServer;
let orgId: string;
const slow = new Receiver();
const fast = new Receiver();

beforeAll(async () => {
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true" });
  orgId = await defaultOrgId(t);
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await slow.stop();
  await fast.stop();
});

describe("a slow receiver", () => {
  it("holds its own share of the deliveries only; the other target gets every event meanwhile", async () => {
    slow.hold = true;
    // The slow target's timeout outlasts the test's wait for the fast one: the fast one must not wait for it.
    const s = await admin(t, "CreateTarget", { name: "share-slow", endpoint: await slow.start(), kind: "TARGET_KIND_WEBHOOK", timeout: "30s" });
    const f = await admin(t, "CreateTarget", { name: "share-fast", endpoint: await fast.start(), kind: "TARGET_KIND_WEBHOOK", timeout: "5s" });
    await admin(t, "SetExecution", { event: { event: "user.human.added" }, targetIds: [s.id, f.id] });

    // Created 10 at a time: a backlog builds up between claims (claims of both targets' rows).
    let next = 0;
    const creator = async () => {
      for (let i = next++; i < USERS; i = next++) await createHuman(t, orgId, `share-${i}`, {});
    };
    await Promise.all(Array.from({ length: 10 }, creator));
    await until(`the fast receiver's ${USERS} events`, () => fast.ids.length >= USERS, 20_000);
    // Meanwhile the slow one answered nothing and had at most its share open (at least half of it: a target is left
    // out of the claims from half its share on).
    expect(slow.open).toBeGreaterThanOrEqual(SHARE / 2);
    expect(slow.mostOpen).toBeLessThanOrEqual(SHARE);
    expect(slow.ids.length).toBe(slow.open);
    expect(new Set(fast.ids).size).toBe(USERS);

    slow.release();
    await until(`the slow receiver's ${USERS} events`, () => slow.ids.length >= USERS, 30_000);
    expect(slow.mostOpen).toBeLessThanOrEqual(SHARE);
    // Each once, the same events as the fast one got.
    expect(slow.ids.length).toBe(USERS);
    expect(new Set(slow.ids)).toEqual(new Set(fast.ids));

    await admin(t, "SetExecution", { event: { event: "user.human.added" }, targetIds: [] });
  }, 120_000);
});
