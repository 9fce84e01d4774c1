// Issue 11, finding 14: an upgrade interrupted at any point of any migration
// never bricks the instance. On PostgreSQL the database itself cuts the
// migrating connection (as a kill -9 of svc or a crash would) at chosen
// statement boundaries of every migration, and after the history row is
// written but before the commit; then a normal start must apply everything
// and leave exactly the schema of an uninterrupted run. On both databases a
// real kill -9 of `npm start` at several moments of its first start is
// followed by a start that comes up.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import pg from "pg";
import { openDatabase } from "../../src/store/db.js";
import { applyMigrations } from "../../src/store/migrate.js";
import { readMigrations } from "../../src/store/schema-engine.js";
import { PG_URL, withPgClient } from "../support/db.js";
import { freshDatabase, ROOT, spawnServer, TEST_MASTER_KEY, type TestDatabase } from "../support/server.js";

const md5 = (s: string) => createHash("md5").update(s).digest("hex");

/** Tables, columns, indexes, constraints and enum values: what "the same schema" means here. */
const FINGERPRINT = `
  SELECT md5(string_agg(x, E'\\n' ORDER BY x)) AS fp FROM (
    SELECT 'c ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS x
      FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL SELECT 'i ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL SELECT 'k ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
      WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'e ' || t.typname || ' ' || e.enumlabel || ' ' || e.enumsortorder FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid
  ) s`;

/** Runs svc's migrator against `url` as a start would (its own pool), closed afterwards. */
async function migrate(url: string): Promise<string[]> {
  const db = await openDatabase({ url, dataDir: "unused", poolSize: 2 });
  try {
    return (await applyMigrations(db)).applied;
  } finally {
    await db.close();
  }
}

const pgOnly = PG_URL ? describe : describe.skip;

pgOnly("PostgreSQL: a migration cut off at a statement boundary leaves nothing behind", () => {
  let migrations: { name: string; hash: string }[] = [];
  let reference: TestDatabase;
  let referenceFingerprint = "";
  /** DDL commands per migration, counted in an uninterrupted run. */
  const counts = new Map<string, number>();

  /**
   * Installs the fault: an event trigger that counts the DDL commands of each migration (told apart by the hash of
   * the script being run) in sequences, which no rollback resets, and terminates its own connection at command `at`
   * of migration `target`; with at = 0, a row trigger on the history table does it right after the history row of
   * `target` is written, before the commit.
   */
  async function installFault(url: string, target: string | null, at: number): Promise<void> {
    await withPgClient(url, async (c) => {
      await c.query(`CREATE TABLE fault_map (hash text PRIMARY KEY, seq text NOT NULL, target boolean NOT NULL)`);
      for (const [i, m] of migrations.entries()) {
        await c.query(`CREATE SEQUENCE fault_seq_${i}`);
        await c.query(`INSERT INTO fault_map VALUES ($1, $2, $3)`, [m.hash, `fault_seq_${i}`, m.name === target]);
      }
      await c.query(`CREATE FUNCTION fault_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $f$
        DECLARE m fault_map; n bigint;
        BEGIN
          SELECT * INTO m FROM fault_map WHERE hash = md5(current_query());
          IF NOT FOUND THEN RETURN; END IF;
          n := nextval(m.seq::regclass);
          IF m.target AND n = ${at} THEN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF;
        END $f$`);
      await c.query(`CREATE EVENT TRIGGER fault_ddl ON ddl_command_end EXECUTE FUNCTION fault_ddl()`);
      if (target !== null && at === 0) {
        // The history table exists before the first migration only when svc made it; make it here with the trigger.
        await c.query(`CREATE TABLE "_prisma_migrations" ("id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL,
          "finished_at" TIMESTAMPTZ, "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
          "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
        await c.query(`CREATE FUNCTION fault_row() RETURNS trigger LANGUAGE plpgsql AS $f$
          BEGIN
            IF NEW.migration_name = ${pg.escapeLiteral(target)} THEN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF;
            RETURN NEW;
          END $f$`);
        await c.query(`CREATE TRIGGER fault_row AFTER INSERT ON "_prisma_migrations" FOR EACH ROW EXECUTE FUNCTION fault_row()`);
      }
    });
  }

  async function removeFault(url: string): Promise<void> {
    await withPgClient(url, async (c) => {
      await c.query(`DROP EVENT TRIGGER IF EXISTS fault_ddl`);
      await c.query(`DROP TRIGGER IF EXISTS fault_row ON "_prisma_migrations"`);
      await c.query(`DROP FUNCTION IF EXISTS fault_row(), fault_ddl() CASCADE`);
      await c.query(`DROP TABLE fault_map`);
      for (const i of migrations.keys()) await c.query(`DROP SEQUENCE fault_seq_${i}`);
    });
  }

  beforeAll(async () => {
    migrations = (await readMigrations()).migrationDirectories.map((d) => ({
      name: d.path,
      hash: md5((d.migrationFile.content as { value: string }).value),
    }));
    reference = await freshDatabase();
    const url = reference.url as string;
    await installFault(url, null, 0);
    expect(await migrate(url)).toEqual(migrations.map((m) => m.name));
    await withPgClient(url, async (c) => {
      for (const [i, m] of migrations.entries()) {
        const { rows } = await c.query<{ n: string }>(`SELECT last_value AS n, is_called FROM fault_seq_${i}`);
        const row = rows[0] as unknown as { n: string; is_called: boolean };
        counts.set(m.name, row.is_called ? Number(row.n) : 0);
      }
    });
    await removeFault(url);
    referenceFingerprint = await withPgClient(url, async (c) => (await c.query<{ fp: string }>(FINGERPRINT)).rows[0]?.fp ?? "");
  }, 60_000);
  afterAll(() => reference?.drop());

  it("every migration has DDL to cut (the counting works)", () => {
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(migrations.length);
  });

  // Every migration is cut at a middle statement (each must be atomic). The first one and the newest RECENT ones (what
  // a release adds) are also cut at their first and last statement and between the history row and the commit: those
  // cuts test the runner's own steps, the same for every migration. Cutting all four points of every migration took a
  // fresh database and a full migration each, and outgrew the test's time as migrations were added (31: > 240 s).
  it("cut at a middle statement of every migration; the first and the newest also at the first and last statement and before the commit", async () => {
    const RECENT = 4;
    const points: [string, number][] = [];
    for (const [i, m] of migrations.entries()) {
      const n = counts.get(m.name) ?? 0;
      const all = i === 0 || i >= migrations.length - RECENT;
      if (n > 0) for (const at of new Set(all ? [1, Math.ceil(n / 2), n] : [Math.ceil(n / 2)])) points.push([m.name, at]);
      if (all || n === 0) points.push([m.name, 0]);
    }
    const failures: string[] = [];
    // Two cuts at a time (each on its own fresh database): half the wall time on two cores.
    const queue = [...points];
    const lane = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) await cutAt(...next);
    };
    const cutAt = async (target: string, at: number) => {
      const db = await freshDatabase();
      const url = db.url as string;
      try {
        await installFault(url, target, at);
        const cut = await migrate(url).then(
          () => "applied",
          (err: Error) => err.message,
        );
        if (!/terminat/.test(cut)) {
          failures.push(`${target} at ${at}: not cut (${cut})`);
          return;
        }
        const recorded = await withPgClient(url, async (c) => {
          const exists = (await c.query(`SELECT to_regclass('"_prisma_migrations"') AS t`)).rows[0]?.t;
          return exists ? (await c.query<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations"`)).rows.map((r) => r.migration_name) : [];
        });
        // Everything before the target is recorded as finished; the target and what follows are not recorded at all.
        expect(recorded).toEqual(
          migrations
            .slice(
              0,
              migrations.findIndex((m) => m.name === target),
            )
            .map((m) => m.name),
        );
        await removeFault(url);
        // The next start applies the rest, and the result is the schema of an uninterrupted run.
        await migrate(url);
        const after = await withPgClient(url, async (c) => ({
          fp: (await c.query<{ fp: string }>(FINGERPRINT)).rows[0]?.fp,
          rows: (
            await c.query<{ migration_name: string; finished: boolean }>(
              `SELECT migration_name, finished_at IS NOT NULL AS finished FROM "_prisma_migrations" ORDER BY migration_name`,
            )
          ).rows,
        }));
        if (after.fp !== referenceFingerprint) failures.push(`${target} at ${at}: schema differs`);
        expect(after.rows).toEqual(migrations.map((m) => ({ migration_name: m.name, finished: true })));
      } finally {
        await db.drop();
      }
    };
    await Promise.all([lane(), lane()]);
    expect(failures).toEqual([]);
  }, 240_000);

  it("a history row left unfinished by an older svc stops the start with the way out, instead of a cryptic error", async () => {
    const db = await freshDatabase();
    const url = db.url as string;
    try {
      await migrate(url);
      await withPgClient(url, (c) => c.query(`UPDATE "_prisma_migrations" SET finished_at = NULL WHERE migration_name = $1`, [migrations[1]?.name]));
      await expect(migrate(url)).rejects.toThrow(/was started and never finished.*README/s);
    } finally {
      await db.drop();
    }
  });
});

describe("kill -9 during the first start's migrations", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("at several moments: the next start comes up with every migration applied", async () => {
    const dataDir = path.join(await mkdtemp(path.join(tmpdir(), "svc-migkill-")), "data");
    dirs.push(path.dirname(dataDir));
    const db = await freshDatabase();
    const env = { SVC_DATA_DIR: dataDir, ...(db.url ? { SVC_DATABASE_URL: db.url } : {}) };
    try {
      for (const delay of [150, 400, 900, 1600, 2500]) {
        // As `npm start` runs it, killed without a chance to clean up.
        const child = spawn(process.execPath, ["bin/svc.js", "start"], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SVC_PORT: "0", ...(db.url ? { SVC_MASTER_KEY: TEST_MASTER_KEY } : {}), ...env },
          stdio: "ignore",
        });
        const exited = new Promise((r) => child.once("exit", r));
        await new Promise((r) => setTimeout(r, delay));
        child.kill("SIGKILL");
        await exited;
      }
      const s = await spawnServer(env);
      try {
        const ready = await fetch(`${s.url}/readyz`);
        expect(ready.status).toBe(200);
      } finally {
        expect(await s.stop()).toBe(0);
      }
    } finally {
      await db.drop();
    }
  }, 120_000);
});
