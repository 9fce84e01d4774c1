// Authoring tool for migrations: `npm run migrate:new -- <name>` diffs the
// committed migrations against prisma/schema.prisma and writes the SQL of
// the difference as a new migration; `npm run migrate:check` fails when
// schema.prisma has changes no migration covers. Both run the wasm schema
// engine on throwaway in-memory PGlite databases (main and shadow), so no
// PostgreSQL server is needed to author migrations.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { MIGRATIONS_DIR, NO_FILTERS, openEngine, readMigrations, readSchema, SCHEMA_FILE } from "../src/store/schema-engine.js";

async function diffToSchema(): Promise<{ exitCode: number; sql: string }> {
  const schema = await readSchema();
  const engine = await openEngine(new PrismaPGlite(new PGlite()), schema);
  try {
    const migrations = await readMigrations();
    const from = migrations.migrationDirectories.length ? { tag: "migrations" as const, ...migrations } : { tag: "empty" as const };
    const result = await engine.diff({
      from,
      to: { tag: "schemaDatamodel", files: [{ path: SCHEMA_FILE, content: schema }] },
      script: true,
      exitCode: true,
      filters: NO_FILTERS,
    } as never);
    return { exitCode: result.exitCode, sql: result.stdout ?? "" };
  } finally {
    engine.free();
  }
}

const [command, name] = process.argv.slice(2);
if (command === "new") {
  if (!name || !/^[a-z0-9_]+$/.test(name)) throw new Error("usage: migrations new <snake_case_name>");
  const { exitCode, sql } = await diffToSchema();
  if (exitCode === 0) {
    console.log("schema.prisma matches the migrations: nothing to write");
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(MIGRATIONS_DIR, `${stamp}_${name}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "migration.sql"), sql);
    await writeFile(path.join(MIGRATIONS_DIR, "migration_lock.toml"), 'provider = "postgresql"\n');
    console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
  }
} else if (command === "check") {
  const { exitCode, sql } = await diffToSchema();
  if (exitCode !== 0) {
    console.error(`schema.prisma has changes that no migration covers:\n${sql}`);
    process.exit(1);
  }
  console.log("migrations match schema.prisma");
} else {
  console.error("usage: migrations new <name> | check");
  process.exit(2);
}
