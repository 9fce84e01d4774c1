// The database behind svc: PostgreSQL when SVC_DATABASE_URL is set, else the
// embedded PGlite database under the data directory. One Prisma schema and
// one set of migrations serve both.
import type { Dirent } from "node:fs";
import { chmod, lstat, mkdir, open, readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../gen/prisma/client.js";
import { registerDriver } from "./sql.js";

export type { PrismaClient };

/** Key of the advisory lock that serialises start-up work (migrations, bootstrap) across replicas. */
const STARTUP_LOCK_KEY = 0x737663_01;

export interface Database {
  readonly kind: "postgres" | "embedded";
  readonly prisma: PrismaClient;
  /**
   * An adapter factory for the schema engine and a dispose function to call
   * after engine.free(): the engine does not return its connection (which
   * holds Prisma's migration advisory lock), so on PostgreSQL it gets a pool
   * of its own whose connections are closed afterwards.
   */
  migrationAdapter(): { factory: SqlMigrationAwareDriverAdapterFactory; dispose(): Promise<void> };
  /**
   * Runs fn in one transaction on one connection, committed when fn returns: how a migration and its history row
   * are applied together. No statement timeout applies inside.
   */
  migrationTransaction<T>(fn: (sql: MigrationSql) => Promise<T>): Promise<T>;
  /** Runs fn while no other replica runs its own start-up work. */
  withStartupLock<T>(fn: () => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** What a migration runs on: `exec` takes a whole script (several statements, no parameters). */
export interface MigrationSql {
  exec(script: string): Promise<void>;
  query<R>(text: string, values?: unknown[]): Promise<R[]>;
}

export async function openDatabase(opts: { url?: string; dataDir: string; poolSize: number }): Promise<Database> {
  return opts.url ? openPostgres(opts.url, opts.poolSize) : openEmbedded(opts.dataDir);
}

/**
 * Run first on every new connection. svc's statements are short: when a
 * plan's cost estimate passes jit_above_cost (a filtered SCIM list over a large
 * organization does), PostgreSQL's JIT spends 10 to 200 ms compiling to save
 * microseconds, so it is off. A SET rather than the `options` startup
 * parameter, which connection poolers such as PgBouncer refuse.
 */
const SESSION_SETUP = "SET jit = off";

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000 });
  // An idle client losing its server must not crash the process.
  pool.on("error", () => {});
  // Queued ahead of anything the client is acquired for; a server without the setting keeps its default.
  pool.on("connect", (client) => {
    client.query(SESSION_SETUP).catch(() => {});
  });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  registerDriver(prisma, {
    query: async (q) => (await pool.query(q.name ? { name: q.name, text: q.text, values: q.values } : { text: q.text, values: q.values })).rows,
  });
  return {
    kind: "postgres",
    prisma,
    migrationAdapter() {
      const own = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 10_000 });
      own.on("error", () => {});
      return { factory: new PrismaPg(own), dispose: () => own.end() };
    },
    async migrationTransaction(fn) {
      const client = await pool.connect();
      // A connection lost mid-migration fails the query in progress; its 'error' event must not end the process.
      const lost = () => {};
      client.on("error", lost);
      let broken = false;
      try {
        await client.query("BEGIN");
        await client.query("SET LOCAL statement_timeout = 0");
        const result = await fn({
          exec: async (script) => {
            await client.query(script);
          },
          query: async (text, values) => (await client.query(text, values)).rows,
        });
        await client.query("COMMIT");
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {
          broken = true;
        });
        throw err;
      } finally {
        client.off("error", lost);
        client.release(broken);
      }
    },
    async withStartupLock(fn) {
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [STARTUP_LOCK_KEY]);
        try {
          return await fn();
        } finally {
          await client.query("SELECT pg_advisory_unlock($1)", [STARTUP_LOCK_KEY]);
        }
      } finally {
        client.release();
      }
    },
    async ping() {
      await pool.query("SELECT 1");
    },
    async close() {
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
  await secureDataDir(dataDir);
  const release = await lockDataDir(dataDir);
  let pglite: PGlite;
  try {
    pglite = new PGlite(path.join(dataDir, "pglite"));
    await pglite.waitReady;
    // PGlite unpacks a new cluster with its own modes (0666), whatever the umask: tighten what it wrote.
    await tightenTree(path.join(dataDir, "pglite"));
  } catch (err) {
    await release();
    throw err;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  registerDriver(prisma, { query: async (q) => (await pglite.query(q.text, q.values)).rows as never[] });
  let closed = false;
  return {
    kind: "embedded",
    prisma,
    migrationAdapter: () => ({ factory: new PrismaPGlite(pglite), dispose: async () => {} }),
    migrationTransaction: (fn) =>
      pglite.transaction((tx) =>
        fn({
          exec: async (script) => {
            await tx.exec(script);
          },
          query: async <R>(text: string, values?: unknown[]) => (await tx.query<R>(text, values)).rows,
        }),
      ),
    // One process owns the embedded database (see lockDataDir), so there is nobody to wait for.
    withStartupLock: (fn) => fn(),
    async ping() {
      await pglite.query("SELECT 1");
    },
    async close() {
      if (closed) return;
      closed = true;
      await prisma.$disconnect();
      await pglite.close();
      // Relation files created while running (by migrations, say) got PGlite's modes too.
      await tightenTree(path.join(dataDir, "pglite"));
      await release();
    },
  };
}

/**
 * The embedded database's files hold every user, hash and sealed key: only svc's own user may read or write them.
 * Everything this process creates is 0600 / 0700 (umask); a data directory that others may write is refused, as
 * PostgreSQL refuses one (whoever can write it can swap the database or the master key); and what an earlier start
 * (or a copy) left readable by others is tightened before the database opens.
 */
async function secureDataDir(dataDir: string): Promise<void> {
  process.umask(0o077);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const mode = (await stat(dataDir)).mode & 0o777;
  if (mode & 0o022) {
    throw new Error(
      `the data directory ${dataDir} may be written by other users (mode ${mode.toString(8).padStart(4, "0")}); ` +
        `svc refuses it: make it private with \`chmod 700 ${dataDir}\` (and check who changed it)`,
    );
  }
  if (mode & 0o077) await chmod(dataDir, 0o700);
  await tightenTree(path.join(dataDir, "pglite"));
}

/** Removes group and other permissions below `dir` (files 0600, directories 0700); links are left alone. */
async function tightenTree(dir: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if (((await lstat(dir)).mode & 0o077) !== 0) await chmod(dir, 0o700);
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await tightenTree(p);
    else if (e.isFile() && ((await lstat(p)).mode & 0o077) !== 0) await chmod(p, 0o600);
  }
}

/**
 * PGlite is an in-process database: two processes on one data directory
 * would corrupt it. A pid file refuses the second one; a stale file left by
 * a crashed process is taken over.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = path.join(dataDir, "svc.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, "wx", 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(lockPath, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const pid = Number((await readFile(lockPath, "utf8").catch(() => "")).trim());
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new Error(`the embedded database in ${dataDir} is in use by process ${pid}; use PostgreSQL (SVC_DATABASE_URL) to run several replicas`);
      }
      await rm(lockPath, { force: true });
    }
  }
  throw new Error(`could not lock ${lockPath}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
