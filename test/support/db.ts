// Each test file gets its own database: a fresh PostgreSQL database when
// SVC_TEST_DATABASE_URL is set, else the embedded database in a temp dir.
import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase } from "../../src/store/db.js";
import { applyMigrations } from "../../src/store/migrate.js";
import { readMigrations } from "../../src/store/schema-engine.js";

export const PG_URL = process.env.SVC_TEST_DATABASE_URL || undefined;

export interface TestDatabase {
  url?: string;
  drop(): Promise<void>;
}

/**
 * A new, empty database; with `migrated`, a copy of one the committed
 * migrations were applied to once (see migratedTemplate), so a server
 * started on it only checks its migrations instead of running them all.
 */
export async function freshDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (!PG_URL) return { url: undefined, drop: async () => {} };
  const template = opts.migrated ? await migratedTemplate() : undefined;
  const name = `svc_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ""}`));
  return {
    url: databaseUrl(name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => {}),
  };
}

function databaseUrl(name: string): string {
  const url = new URL(PG_URL as string);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs fn on a connection of its own to `url`, closed afterwards. */
export async function withPgClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(url);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const admin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => withPgClient(PG_URL as string, fn);

let template: Promise<string> | undefined;

/**
 * The name of a database holding exactly the committed migrations, made once
 * per set of migrations (named after their hash, so runs of other branches on
 * the same server each get their own) and kept for later runs. Built under a
 * different name and renamed when complete, under an advisory lock, so
 * parallel workers never copy a half-migrated one.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const { migrationDirectories } = await readMigrations();
    const hash = createHash("sha256");
    for (const d of migrationDirectories) hash.update(`${d.path}\0${d.migrationFile.content.tag === "ok" ? d.migrationFile.content.value : ""}\0`);
    const name = `svc_test_template_${hash.digest("hex").slice(0, 16)}`;
    await admin(async (c) => {
      const exists = async () => ((await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount ?? 0) > 0;
      // Looked up before locking: the replicas test asserts that no advisory lock is left anywhere on the server.
      if (await exists()) return;
      await c.query("SELECT pg_advisory_lock(hashtext($1))", [name]);
      if (await exists()) return;
      const building = `${name}_${randomBytes(4).toString("hex")}`;
      await c.query(`CREATE DATABASE "${building}"`);
      try {
        const db = await openDatabase({ url: databaseUrl(building), dataDir: "", poolSize: 1 });
        try {
          await applyMigrations(db);
        } finally {
          await db.close();
        }
        await c.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      } catch (err) {
        await c.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
        throw err;
      }
    });
    return name;
  })();
  return template;
}
