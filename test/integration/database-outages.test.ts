// Issue 25, findings 3 and 4: a PostgreSQL that refuses writes (read-only after a failover to a standby: SQLSTATE
// 25006; full: class 53) or cannot give a transaction in time (Prisma's P2028) is an outage like a stopped one: 503
// UNAVAILABLE with Retry-After, never a 500, /readyz out of rotation while writes fail, and the change of state logged
// once, not a stack per request. A private cluster that the test starts and changes, never the shared server.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { withPgClient } from "../support/db.js";
import { type PgCluster, pgBinDir, startPgCluster } from "../support/pg-cluster.js";
import { type ChildServer, spawnServer } from "../support/server.js";

const maybe = pgBinDir() ? describe : describe.skip;

maybe("a PostgreSQL that refuses writes or transactions (private cluster)", () => {
  let cluster: PgCluster;
  let s: ChildServer;
  let dataDir: string;
  let pat: string;
  let orgId: string;
  let n = 0;
  const headers = () => ({ authorization: `Bearer ${pat}`, "content-type": "application/json" });
  const createUser = () =>
    fetch(`${s.url}/v2/users/new`, {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ organizationId: orgId, username: `outage-${++n}`, machine: { name: "outage robot" } }),
      signal: AbortSignal.timeout(30_000),
    });
  const scimCreate = () =>
    fetch(`${s.url}/scim/v2/${orgId}/Users`, {
      method: "POST",
      headers: { ...headers(), "content-type": "application/scim+json" },
      body: JSON.stringify({ schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"], userName: `scim-${++n}@example.com` }),
      signal: AbortSignal.timeout(30_000),
    });
  const readyz = async () => (await fetch(`${s.url}/readyz`, { signal: AbortSignal.timeout(10_000) })).status;
  const sql = (text: string) => withPgClient(cluster.url, async (c) => void (await c.query(text)));
  const errors = () => s.logs.filter((l) => Number(l.level) >= 50);
  const logged = (msg: string) => s.logs.filter((l) => l.msg === msg).length;

  async function waitFor(what: () => Promise<boolean>, ms = 15_000): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (await what()) return true;
      await new Promise((r) => setTimeout(r, 200));
    }
    return what();
  }

  beforeAll(async () => {
    cluster = await startPgCluster();
    dataDir = await mkdtemp(path.join(tmpdir(), "svc-dbout-"));
    s = await spawnServer({
      SVC_DATA_DIR: dataDir,
      SVC_DATABASE_URL: cluster.url,
      SVC_DATABASE_STATEMENT_TIMEOUT_MS: "1000",
      SVC_SHUTDOWN_GRACE_MS: "1000",
      SVC_DATABASE_POOL_SIZE: "2",
    });
    pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    const orgs = (await (await fetch(`${s.url}/v2/organizations`, { method: "POST", headers: headers(), body: "{}" })).json()) as { result: { id: string }[] };
    orgId = orgs.result[0]?.id as string;
    expect((await createUser()).status).toBe(200);
  }, 90_000);
  afterAll(async () => {
    await s?.stop();
    await cluster?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("read-only (25006, as after a failover to a standby): writes answer 503 with Retry-After, /readyz leaves rotation, one line each way", async () => {
    await sql("ALTER SYSTEM SET default_transaction_read_only = on");
    await sql("SELECT pg_reload_conf()");
    try {
      const answers = await Promise.all(Array.from({ length: 10 }, () => createUser()));
      for (const r of answers) {
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toBe("5");
      }
      expect(((await (answers[0] as Response).json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Database.Unavailable");
      const scim = await scimCreate();
      expect(scim.status).toBe(503);
      expect(await scim.json()).toMatchObject({ status: "503" });
      // Reads still work: the replica is alive, and not ready for the traffic that writes.
      expect((await fetch(`${s.url}/v2/users`, { method: "POST", headers: headers(), body: "{}" })).status).toBe(200);
      expect(await readyz()).toBe(503);
      expect(errors()).toEqual([]);
      expect(logged("database refuses writes: answering 503 to them until it takes them again")).toBe(1);
    } finally {
      await sql("ALTER SYSTEM RESET default_transaction_read_only");
      await sql("SELECT pg_reload_conf()");
    }
    expect(await waitFor(async () => (await readyz()) === 200)).toBe(true);
    expect((await createUser()).status).toBe(200);
    expect(await waitFor(async () => logged("database takes writes again") === 1, 2_000)).toBe(true);
    expect(logged("database refuses writes: answering 503 to them until it takes them again")).toBe(1);
  }, 60_000);

  it("full (class 53: disk full, out of memory): writes answer 503 with Retry-After, /readyz leaves rotation while they fail", async () => {
    // What a full disk answers an INSERT, raised where PostgreSQL would.
    await sql(`CREATE OR REPLACE FUNCTION svc_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$`);
    await sql(`CREATE TRIGGER svc_test_disk_full BEFORE INSERT ON "User" FOR EACH ROW EXECUTE FUNCTION svc_test_disk_full()`);
    try {
      const before = logged("database refuses writes: answering 503 to them until it takes them again");
      for (const r of await Promise.all(Array.from({ length: 10 }, () => createUser()))) {
        expect(r.status).toBe(503);
        expect(r.headers.get("retry-after")).toBe("5");
      }
      expect(await readyz()).toBe(503);
      expect(errors()).toEqual([]);
      expect(logged("database refuses writes: answering 503 to them until it takes them again")).toBe(before + 1);
    } finally {
      await sql(`DROP TRIGGER svc_test_disk_full ON "User"`);
    }
    // Back in rotation once no write has failed for Retry-After, and writes work.
    expect(await waitFor(async () => (await readyz()) === 200)).toBe(true);
    expect((await createUser()).status).toBe(200);
  }, 60_000);

  it("frozen (SIGSTOP): a write's transaction that cannot start in time (Prisma P2028) is a 503 within the bounds, never a 500", async () => {
    // The token cache knows the PAT already: the requests go straight to their transaction, whose BEGIN never returns.
    expect((await createUser()).status).toBe(200);
    await cluster.freeze();
    let answers: { status: number; retryAfter: string | null; outcome: string | null; ms: number }[];
    try {
      answers = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const t0 = Date.now();
          const r = await createUser();
          return { status: r.status, retryAfter: r.headers.get("retry-after"), outcome: r.headers.get("svc-outcome"), ms: Date.now() - t0 };
        }),
      );
    } finally {
      await cluster.thaw();
    }
    for (const a of answers) {
      expect(a.status).toBe(503);
      // A create whose single INSERT reached the frozen server may be kept when it thaws: that one is "outcome unknown"
      // (no Retry-After, Svc-Outcome: unknown; issue 25, finding 5); the others are the outage's "try again".
      if (a.outcome === "unknown") expect(a.retryAfter).toBeNull();
      else expect(a.retryAfter).toBe("5");
      // The documented bound: a statement (1 s here) plus the 2 s a frozen server is given, with room for a loaded machine.
      expect(a.ms).toBeLessThan(7_000);
    }
    expect(errors()).toEqual([]);
    expect(await waitFor(async () => (await readyz()) === 200)).toBe(true);
    expect((await createUser()).status).toBe(200);
  }, 60_000);
});
