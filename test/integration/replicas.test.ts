// Several replicas on one fresh PostgreSQL started at the same moment:
// migrations run once under the advisory lock, the bootstrap happens once,
// and every replica serves the same data.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import pg from "pg";
import { PG_URL } from "../support/db.js";
import { type ChildServer, freshDatabase, rest, spawnServer, type TestDatabase } from "../support/server.js";

const describePg = PG_URL ? describe : describe.skip;

describePg("replicas on one PostgreSQL", () => {
  let db: TestDatabase;
  let dirs: string[];
  let replicas: ChildServer[] = [];

  beforeAll(async () => {
    db = await freshDatabase();
    dirs = await Promise.all([1, 2, 3].map(() => mkdtemp(path.join(tmpdir(), "svc-replica-"))));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await db.drop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it("start together, bootstrap once and share the data", async () => {
    replicas = await Promise.all(dirs.map((dir) => spawnServer({ SVC_DATA_DIR: dir, SVC_DATABASE_URL: db.url as string })));
    const bootstrappers = replicas.filter((r) => r.logs.some((l) => String(l.msg).startsWith("first start")));
    expect(bootstrappers).toHaveLength(1);
    const migrators = replicas.filter((r) => r.logs.some((l) => l.msg === "applied database migrations"));
    expect(migrators).toHaveLength(1);

    const client = new pg.Client(db.url);
    await client.connect();
    try {
      expect((await client.query('SELECT count(*)::int AS n FROM "Instance"')).rows[0].n).toBe(1);
      expect((await client.query("SELECT count(*)::int AS n FROM _prisma_migrations")).rows[0].n).toBeGreaterThan(0);
      // pg_locks spans the whole server: only this test's database counts (other test files run beside it).
      const locks = await client.query(
        "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      expect(locks.rows[0].n).toBe(0);
    } finally {
      await client.end();
    }

    const owner = bootstrappers[0] as ChildServer;
    const pat = (await readFile(path.join(dirs[replicas.indexOf(owner)] as string, "admin.pat"), "utf8")).trim();
    const instance = (await (await rest(replicas[0]?.url as string, pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const created = await rest(replicas[1]?.url as string, pat, "POST", "/v2/users/new", {
      organizationId: instance.instance.defaultOrganizationId,
      username: "seen-everywhere",
      machine: { name: "x" },
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    for (const r of replicas) {
      const res = await rest(r.url, pat, "GET", `/v2/users/${id}`);
      expect(res.status).toBe(200);
      const list = (await (await rest(r.url, pat, "POST", "/v2/users", {})).json()) as { details: { totalResult: string } };
      expect(list.details.totalResult).toBe("3");
    }
    // A token revoked through one replica is refused by the others at once.
    const robot = await rest(replicas[2]?.url as string, pat, "POST", `/v2/users/${id}/pats`, {});
    const token = (await robot.json()) as { id: string; token: string };
    expect((await rest(replicas[0]?.url as string, token.token, "GET", `/v2/users/${id}`)).status).toBe(200);
    expect((await rest(replicas[1]?.url as string, pat, "DELETE", `/v2/users/${id}/pats/${token.id}`)).status).toBe(200);
    for (const r of replicas) expect((await rest(r.url, token.token, "GET", `/v2/users/${id}`)).status).toBe(401);
  });
});
