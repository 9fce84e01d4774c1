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
import { withPgClient } from "../support/db.js";
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
      // The hosted login: its page that says so, in the browser's language, never a stack trace.
      const page = await fetch(`${s.url}/ui/login/login`, { headers: { "accept-language": "de" } });
      expect(page.status).toBe(503);
      expect(page.headers.get("retry-after")).toBe("5");
      expect(await page.text()).toContain("svc ist gerade nicht erreichbar");
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

maybe("a stalled LISTEN connection (issue 11, finding 20)", () => {
  it("is detected by its heartbeat within seconds: the replica stops serving cached tokens another replica revoked", async () => {
    const cluster = await startPgCluster();
    const dirs = [await mkdtemp(path.join(tmpdir(), "svc-listen-a-")), await mkdtemp(path.join(tmpdir(), "svc-listen-b-"))];
    const a = await spawnServer({ SVC_DATA_DIR: dirs[0] as string, SVC_DATABASE_URL: cluster.url });
    const b = await spawnServer({ SVC_DATA_DIR: dirs[1] as string, SVC_DATABASE_URL: cluster.url });
    const stopped: number[] = [];
    try {
      const pat = (await readFile(path.join(dirs[0] as string, "admin.pat"), "utf8")).trim();
      const headers = { authorization: `Bearer ${pat}`, "content-type": "application/json" };
      const orgs = (await (await fetch(`${a.url}/v2/organizations`, { method: "POST", headers, body: "{}" })).json()) as { result: { id: string }[] };
      const created = await fetch(`${a.url}/v2/users/new`, {
        method: "POST",
        headers,
        body: JSON.stringify({ organizationId: orgs.result[0]?.id, username: "listen-robot", machine: { name: "listen robot" } }),
      });
      const userId = ((await created.json()) as { id: string }).id;
      const secret = ((await (await fetch(`${a.url}/v2/users/${userId}/secret`, { method: "POST", headers, body: "{}" })).json()) as { clientSecret: string })
        .clientSecret;
      const basic = `Basic ${Buffer.from(`${userId}:${secret}`).toString("base64")}`;
      const form = { "content-type": "application/x-www-form-urlencoded", authorization: basic };
      const issued = await fetch(`${a.url}/oauth/v2/token`, {
        method: "POST",
        headers: form,
        body: "grant_type=client_credentials&scope=urn:svc:iam:org:project:id:svc:aud",
      });
      const token = ((await issued.json()) as { access_token: string }).access_token;
      const use = () =>
        fetch(`${a.url}/v2/organizations`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
      // Cached on replica a from now on (for up to 5 s).
      expect((await use()).status).not.toBe(401);
      const cachedAt = Date.now();

      // Both replicas' LISTEN backends stop answering; their TCP connections stay open.
      const pids = await withPgClient(cluster.url, async (c) =>
        (await c.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN svc_auth'`)).rows.map((r) => r.pid),
      );
      expect(pids).toHaveLength(2);
      for (const pid of pids) {
        process.kill(pid, "SIGSTOP");
        stopped.push(pid);
      }
      // Replica a notices within seconds (its own heartbeat stops arriving), well before the cached entry would
      // expire by itself: waited for by its log line rather than a fixed time, which a loaded machine overran.
      const lost = () => a.logs.some((l) => String(l.msg).startsWith("auth cache invalidation listener lost"));
      while (!lost() && Date.now() - cachedAt < 4_500) await new Promise((r) => setTimeout(r, 100));
      expect(lost()).toBe(true);
      // Revoked through the other replica: its notification reaches no one.
      const revoked = await fetch(`${b.url}/oauth/v2/revoke`, { method: "POST", headers: form, body: new URLSearchParams({ token }) });
      expect(revoked.status).toBe(200);
      expect((await use()).status).toBe(401);
      // Not by the entry's own expiry: the answer came before it.
      expect(Date.now() - cachedAt).toBeLessThan(5_000);
    } finally {
      for (const pid of stopped) process.kill(pid, "SIGCONT");
      await a.stop();
      await b.stop();
      await cluster.destroy();
      for (const d of dirs) await rm(d, { recursive: true, force: true });
    }
  }, 90_000);
});
