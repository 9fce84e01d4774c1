import type { Database } from "./db.js";
import { NO_FILTERS, openEngine, readMigrations } from "./schema-engine.js";

/** Applies the committed migrations that the database has not seen yet; returns their names. */
export async function applyMigrations(db: Database): Promise<{ applied: string[]; known: string[] }> {
  const migrationsList = await readMigrations();
  const adapter = db.migrationAdapter();
  try {
    const engine = await openEngine(adapter.factory);
    try {
      const out = await engine.applyMigrations({ migrationsList, filters: NO_FILTERS });
      return { applied: out.appliedMigrationNames, known: migrationsList.migrationDirectories.map((d) => d.path) };
    } finally {
      engine.free();
    }
  } finally {
    await adapter.dispose();
  }
}

/** True when every known migration is recorded as finished (readiness). */
export async function migrationsApplied(db: Database, known: string[]): Promise<boolean> {
  const rows = await db.prisma.$queryRaw<{ migration_name: string }[]>`
    SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`;
  const done = new Set(rows.map((r) => r.migration_name));
  return known.every((name) => done.has(name));
}
