// Issue 11, findings 15, 16 and 17: svc on a PostgreSQL that freezes (SIGSTOP:
// connections stay open, nothing answers) or goes away. A private cluster
// that the test starts, freezes, thaws and stops, never the shared server.
// Requests end within the configured bounds with 503 / UNAVAILABLE and
// Retry-After on every protocol, readiness answers 503 within its own
// deadline, SIGTERM exits within the grace period, and the outage is logged
// once when it starts and once when it ends, not per request.

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type PgCluster, pgBinDir, startPgCluster } from "../support/pg-cluster.js";
import { type ChildServer, spawnServer } from "../support/server.js";

const maybe = pgBinDir() ? describe : describe.skip;

const BOUNDS = {
  SVC_DATABASE_STATEMENT_TIMEOUT_MS: "1000",
  SVC_DATABASE_ACQUIRE_TIMEOUT_MS: "1000",
  SVC_SHUTDOWN_GRACE_MS: "1000",
};

async function timed(p: Promise<Response>): Promise<{ res: Response; ms: number }> {
  const t0 = Date.now();
  const res = await p;
  return { res, ms: Date.now() - t0 };
}

maybe("a frozen or stopped PostgreSQL (private cluster)", () => {
  let cluster: PgCluster;
  let s: ChildServer;
  let dataDir: string;
  let pat: string;
  const auth = () => ({ authorization: `Bearer ${pat}`, "content-type": "application/json" });
  const listUsers = () => fetch(`${s.url}/v2/users`, { method: "POST", headers: auth(), body: "{}", signal: AbortSignal.timeout(20_000) });

  beforeAll(async () => {
    cluster = await startPgCluster();
    dataDir = await mkdtemp(path.join(tmpdir(), "svc-dbfault-"));
    s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: cluster.url, ...BOUNDS });
    pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    expect((await listUsers()).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await cluster?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("frozen: requests end with 503 and Retry-After within the statement bound, /readyz with 503 within its deadline", async () => {
    await cluster.freeze();
    try {
      const [users, ready, scim, token] = await Promise.all([
        timed(listUsers()),
        timed(fetch(`${s.url}/readyz`, { signal: AbortSignal.timeout(20_000) })),
        timed(fetch(`${s.url}/scim/v2/any/Users`, { headers: auth(), signal: AbortSignal.timeout(20_000) })),
        timed(
          fetch(`${s.url}/oauth/v2/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "grant_type=client_credentials&client_id=nobody&client_secret=x",
            signal: AbortSignal.timeout(20_000),
          }),
        ),
      ]);
      expect(ready.res.status).toBe(503);
      expect(ready.ms).toBeLessThan(2_500);
      for (const r of [users, scim, token]) {
        expect(r.res.status).toBe(503);
        expect(r.res.headers.get("retry-after")).toBe("5");
        // statement bound (1 s) + the client-side margin (2 s) + the acquire bound, with room for a loaded machine.
        expect(r.ms).toBeLessThan(8_000);
      }
      expect(((await users.res.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Database.Unavailable");
      expect(await scim.res.json()).toMatchObject({ status: "503" });
      expect(await token.res.json()).toMatchObject({ error: "temporarily_unavailable" });
    } finally {
      await cluster.thaw();
    }
    // Back: readiness and requests recover by themselves, and the end of the outage is logged once.
    const until = Date.now() + 15_000;
    while ((await fetch(`${s.url}/readyz`)).status !== 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    expect((await listUsers()).status).toBe(200);
    const msgs = s.logs.map((l) => l.msg);
    expect(msgs.filter((m) => m === "database unavailable: answering 503 until it is back")).toHaveLength(1);
    expect(msgs.filter((m) => m === "database available again")).toHaveLength(1);
    expect(s.logs.filter((l) => l.level === 50)).toEqual([]);
  }, 60_000);

  it("frozen at SIGTERM: the process exits within the grace period plus a second", async () => {
    await cluster.freeze();
    try {
      // A request in flight on the frozen database.
      const inflight = listUsers().catch(() => null);
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      const code = await s.stop();
      const ms = Date.now() - t0;
      expect(code).toBe(0);
      expect(ms).toBeLessThan(1_000 + 1_000 + 1_000);
      await inflight;
    } finally {
      await cluster.thaw();
    }
  }, 30_000);
});

maybe("a stopped PostgreSQL (private cluster)", () => {
  it("answers 503 UNAVAILABLE over REST, Connect and SCIM, and logs the outage once for many requests", async () => {
    const cluster = await startPgCluster();
    const dataDir = await mkdtemp(path.join(tmpdir(), "svc-dbfault-"));
    const s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: cluster.url, ...BOUNDS });
    try {
      const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
      const headers = { authorization: `Bearer ${pat}`, "content-type": "application/json" };
      await cluster.destroy();
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => fetch(`${s.url}/v2/users`, { method: "POST", headers, body: "{}" }).then((r) => r.status)),
      );
      expect(new Set(answers)).toEqual(new Set([503]));
      const connect = await fetch(`${s.url}/svc.user.v2.UserService/ListUsers`, { method: "POST", headers, body: "{}" });
      expect(connect.status).toBe(503);
      expect(((await connect.json()) as { code: string }).code).toBe("unavailable");
      expect(connect.headers.get("retry-after")).toBe("5");
      expect((await fetch(`${s.url}/readyz`)).status).toBe(503);
      expect(s.logs.filter((l) => l.msg === "database unavailable: answering 503 until it is back")).toHaveLength(1);
      // No stack trace per request.
      expect(s.logs.filter((l) => l.level === 50)).toEqual([]);
    } finally {
      await s.stop();
      await cluster.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
