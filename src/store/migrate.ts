// Applies the committed migrations at start. Each pending migration runs as one script inside one transaction
// together with its row in Prisma's `_prisma_migrations` history table (PostgreSQL's DDL is transactional), so a
// process killed at any point leaves the migration either wholly applied and recorded or not applied at all: the next
// start simply applies it. (Prisma's engine runs a migration statement by statement outside a transaction and
// records it as started first: a kill in between left a half-applied schema and a row that blocked every later
// start.) The table keeps Prisma's shape and checksums, so `prisma migrate status` and `deploy` still read it.
import { createHash, randomUUID } from "node:crypto";
import type { Database, MigrationSql } from "./db.js";
import { readMigrations } from "./schema-engine.js";

const HISTORY_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

interface HistoryRow {
  migration_name: string;
  checksum: string;
  finished: boolean;
  rolled_back: boolean;
}

export interface MigrationOutcome {
  applied: string[];
  known: string[];
  /** Applied migrations whose file changed since (a warning: what ran is what the database has). */
  modified: string[];
}

/** What an operator must do before svc can start on this database; the message says it in words. */
export class MigrationBlocked extends Error {}

/** The checksum of a migration in the history table (Prisma's: the sha256 of migration.sql, in hex). */
export const checksum = (sql: string) => createHash("sha256").update(sql).digest("hex");

/** Applies the committed migrations that the database has not seen yet, each in its own transaction. */
export async function applyMigrations(db: Database): Promise<MigrationOutcome> {
  const migrations = (await readMigrations()).migrationDirectories.map((d) => {
    const content = d.migrationFile.content;
    if (content.tag !== "ok") throw new Error(`cannot read migration ${d.path}`);
    return { name: d.path, sql: content.value };
  });
  const history = await db.migrationTransaction(async (sql) => {
    await sql.exec(HISTORY_TABLE);
    return sql.query<HistoryRow>(
      `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back FROM "_prisma_migrations"`,
    );
  });
  const done = new Map(history.filter((r) => r.finished && !r.rolled_back).map((r) => [r.migration_name, r.checksum]));
  const unfinished = history.filter((r) => !r.finished && !r.rolled_back && !done.has(r.migration_name)).map((r) => r.migration_name);
  if (unfinished.length) {
    throw new MigrationBlocked(
      `migration ${unfinished.join(", ")} was started and never finished, by an older svc (which applied migrations statement by ` +
        "statement) or by prisma migrate: the database may hold part of it. svc does not guess: restore the backup taken " +
        "before the upgrade, or follow the README (Upgrades, an interrupted migration) to complete or roll it back by hand",
    );
  }
  const modified = migrations.filter((m) => done.has(m.name) && done.get(m.name) !== checksum(m.sql)).map((m) => m.name);
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.name)) continue;
    await db.migrationTransaction((sql) => applyOne(sql, m));
    applied.push(m.name);
  }
  return { applied, known: migrations.map((m) => m.name), modified };
}

async function applyOne(sql: MigrationSql, m: { name: string; sql: string }): Promise<void> {
  // Another replica may have applied it since we looked (the start-up lock makes that rare, a pooler can break it).
  const [seen] = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "_prisma_migrations" WHERE migration_name = $1 AND finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    [m.name],
  );
  if ((seen?.n ?? 0) > 0) return;
  await sql.exec(m.sql);
  await sql.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
     VALUES ($1, $2, $3, now(), clock_timestamp(), 1)`,
    [randomUUID(), checksum(m.sql), m.name],
  );
}
