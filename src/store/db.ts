// The database behind svc: PostgreSQL when SVC_DATABASE_URL is set, else the
// embedded PGlite database under the data directory. One Prisma schema and
// one set of migrations serve both.
import { AsyncResource } from "node:async_hooks";
import { accessSync, chmodSync, constants, type Dirent, lstatSync, readdirSync } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import type { Logger } from "pino";
import { PrismaClient } from "../../gen/prisma/client.js";
import type { FailureLimits } from "../domain/limits.js";
import { lockDataDir } from "./data-dir-lock.js";
import { databaseTimeLeft, databaseTimeUp, noteCommitUnanswered } from "./deadline.js";
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from "./errors.js";
import { outage } from "./outage.js";
import { preparedDriver } from "./pglite-prepared.js";
import { failureLimits, type LimitSettings } from "./rate-limits.js";
import { DEFAULT_SNAPSHOT_DIR, isNew, PGLITE_DIR, type SeedOutcome, seedFromSnapshot } from "./snapshot.js";
import { registerDriver, sqlError } from "./sql.js";

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
  /** Sends a notification on the auth invalidation channel outside any transaction (the listener's heartbeat). */
  notify(payload: string): Promise<void>;
  /** The brute-force failure counters: shared through PostgreSQL, in memory on the embedded database. */
  failureLimits(settings: LimitSettings, log: Logger): FailureLimits;
  /** Runs fn while no other replica runs its own start-up work. */
  withStartupLock<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Whether the database answers within `deadlineMs` and has every migration in `known` applied: on a connection of
   * its own (never queued behind request traffic), so that a probe gets its answer in time whatever the pool does.
   */
  ready(known: readonly string[], deadlineMs: number): Promise<boolean>;
  /** The request pool's connections (PostgreSQL; none for the embedded database), for the metrics. */
  poolStats(): { total: number; idle: number; waiting: number } | undefined;
  close(): Promise<void>;
}

/** What a migration runs on: `exec` takes a whole script (several statements, no parameters). */
export interface MigrationSql {
  exec(script: string): Promise<void>;
  query<R>(text: string, values?: unknown[]): Promise<R[]>;
}

export interface DatabaseOptions {
  url?: string;
  dataDir: string;
  poolSize: number;
  /** PostgreSQL only: statement_timeout and lock_timeout of request connections, and the wait for a pool connection. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  acquireTimeoutMs?: number;
  /** Told each request statement's round trip in seconds (PostgreSQL), for the metrics. */
  onQuery?: QueryObserver;
  /**
   * Embedded only: the snapshot a new database is copied from (src/store/snapshot.ts); dist/pglite-snapshot unless
   * given, none when null.
   */
  snapshotDir?: string | null;
  /** Embedded only: where a new database says how it was made. */
  log?: Pick<Logger, "info">;
}

export type QueryObserver = (seconds: number, ok: boolean) => void;

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url) return openPostgres(opts as DatabaseOptions & { url: string });
  return openEmbedded(opts.dataDir, opts.snapshotDir === undefined ? DEFAULT_SNAPSHOT_DIR : opts.snapshotDir, opts.log);
}

const MIGRATED = `SELECT count(DISTINCT migration_name)::int AS n FROM "_prisma_migrations"
  WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL AND migration_name = ANY($1)`;
/** PostgreSQL's readiness: the migrations, and whether it takes writes (not a standby, not read-only by default). */
const READY_PG = `SELECT (${MIGRATED.replace(" AS n", "")}) AS n,
  (pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on') AS "readOnly"`;

/**
 * Readiness stays off this long after the last write the database refused (read-only, full): the replica leaves the
 * load balancer's rotation while writes fail, and comes back to try again after the Retry-After it answered.
 */
const REFUSED_WRITES_HOLD_MS = UNAVAILABLE_RETRY_AFTER_SECONDS * 1000;
/** A statement that writes (hand-written ones may start with a CTE): its success means the database takes writes. */
const WRITE = /\b(INSERT|UPDATE|DELETE)\b/i;
const COMMIT = /^\s*(COMMIT|END)\b/i;
const BEGIN = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const ROLLBACK = /^\s*(ROLLBACK|ABORT)\b(?!\s+TO\b)/i;

/**
 * Run first on every new connection. svc's statements are short: when a
 * plan's cost estimate passes jit_above_cost (a filtered SCIM list over a large
 * organization does), PostgreSQL's JIT spends 10 to 200 ms compiling to save
 * microseconds, so it is off. A SET rather than the `options` startup
 * parameter, which connection poolers such as PgBouncer refuse.
 */
const sessionSetup = (statementMs: number, lockMs: number) =>
  `SET jit = off; SET statement_timeout = ${Math.trunc(statementMs)}; SET lock_timeout = ${Math.trunc(lockMs)}`;

/**
 * A pool client whose connection is ready only once `setup` has run on it: the settings apply to everything the client
 * is acquired for, with no query queued behind another (pg 9 will refuse that). A server without a setting keeps its
 * default. A new connection is also the sign that the database answers again after an outage.
 *
 * Each statement waits for its answer at most `readMs` (a frozen server never applies statement_timeout) and never
 * past the request's database budget (src/store/deadline.ts). A statement given up on ends its connection: it may
 * still be running on the server, and pg would queue the next statement behind it (a transaction hands its connection
 * back to the pool as if it were fine), so the pool drops the connection and opens a new one when it needs one.
 */
function setupClient(setup: string, readMs: number, onQuery?: QueryObserver): typeof pg.Client {
  return class extends pg.Client {
    /** Between a BEGIN and its COMMIT or ROLLBACK (as sent: a statement that failed in between aborts it anyway). */
    #inTransaction = false;

    // Each statement's round trip, for the metrics: the promise and callback forms (Prisma's adapter and the pool's
    // query); a Submittable (a cursor or stream) is left alone.
    // @ts-expect-error one implementation for pg's overloads, which TypeScript cannot match one by one.
    override query(...args: unknown[]): unknown {
      const run = super.query as unknown as (...a: unknown[]) => unknown;
      const first = args[0] as { submit?: unknown; text?: unknown } | string | undefined;
      if (typeof first === "object" && first !== null && typeof first.submit === "function") return run.apply(this, args);
      const last = args[args.length - 1];
      const callback = typeof last === "function" ? (last as (err: Error | null, res?: unknown) => void) : undefined;
      const left = databaseTimeLeft();
      const limit = left === undefined ? readMs : Math.min(readMs, left);
      let answer: Promise<unknown>;
      if (limit <= 0) answer = Promise.reject(databaseTimeUp("a statement was not sent"));
      else {
        const start = performance.now();
        const text = typeof first === "string" ? first : typeof first?.text === "string" ? first.text : "";
        // A write that succeeds ends a period of refused writes (read-only, full).
        const write = WRITE.test(text);
        // A COMMIT that gets no answer (the connection lost, or given up on) may or may not have been kept; so may a
        // write outside a transaction (autocommit: its own answer says it was kept).
        const commit = COMMIT.test(text) || (!this.#inTransaction && write);
        if (BEGIN.test(text)) this.#inTransaction = true;
        else if (COMMIT.test(text) || ROLLBACK.test(text)) this.#inTransaction = false;
        const sent = run.apply(this, callback ? args.slice(0, -1) : args) as Promise<unknown>;
        answer = new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            if (commit) noteCommitUnanswered();
            reject(databaseTimeUp(`no answer to a statement within ${Math.round(limit)} ms`));
            (this as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          }, limit);
          sent.then(
            (res) => {
              clearTimeout(timer);
              onQuery?.((performance.now() - start) / 1000, true);
              // Only a write that changed rows shows the database takes writes: a full disk still runs an UPDATE that
              // matches nothing (the outbox's poll, say).
              if (write && changedRows(res)) outage.tookWrite();
              resolve(res);
            },
            (err: unknown) => {
              clearTimeout(timer);
              onQuery?.((performance.now() - start) / 1000, false);
              // The server's own refusal (an SQLSTATE: a deferred constraint, serialization) is an answer: rolled back.
              if (commit && sqlError(err).code === undefined) noteCommitUnanswered();
              reject(err);
            },
          );
        });
      }
      if (!callback) return answer;
      answer.then(
        (res) => callback(null, res),
        (err: Error) => callback(err),
      );
      return undefined;
    }

    // pg-pool connects with a callback; the promise form is kept for everything else.
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
      const ready = super.connect().then(async () => {
        await super.query({ text: setup, query_timeout: readMs } as unknown as string).catch(() => undefined);
        outage.up();
        return this as pg.Client;
      });
      if (!callback) return ready;
      const done = callback as (err: Error | null, c?: pg.Client) => void;
      ready.then(
        (c) => done(null, c),
        (err: Error) => done(err),
      );
      return undefined;
    }
  } as typeof pg.Client;
}

/** How much longer than statement_timeout a statement's answer is waited for: a frozen server never applies it. */
const FROZEN_MARGIN_MS = 2_000;

/**
 * The request pool: a wait for a connection (from the pool, or a new one opening) never runs past the request's
 * database budget (src/store/deadline.ts) as well as the pool's own acquire bound. The callback form (the pool's own
 * query) is called back in the caller's asynchronous context, not in that of whoever released the connection, so that
 * the statement that follows draws on the right request's budget.
 */
class BudgetPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, release: (err?: Error | boolean) => void) => void): void;
  override connect(
    callback?: (err: Error | undefined, client: pg.PoolClient | undefined, release: (err?: Error | boolean) => void) => void,
  ): Promise<pg.PoolClient> | undefined {
    const left = databaseTimeLeft();
    if (left === undefined) {
      if (!callback) return super.connect();
      super.connect(callback);
      return undefined;
    }
    const acquired = new Promise<pg.PoolClient>((resolve, reject) => {
      if (left <= 0) return reject(databaseTimeUp("timeout exceeded when trying to connect"));
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        reject(databaseTimeUp("timeout exceeded when trying to connect"));
      }, left);
      super.connect((err, client, release) => {
        if (settled) {
          // Given up on meanwhile: the connection goes straight back.
          if (!err) release(undefined);
          return;
        }
        settled = true;
        clearTimeout(timer);
        if (err || !client) reject(err ?? new Error("no pool connection"));
        else resolve(client);
      });
    });
    if (!callback) return acquired;
    const back = AsyncResource.bind(callback);
    acquired.then(
      (client) => back(undefined, client, (err?: Error | boolean) => client.release(err)),
      (err: Error) => back(err, undefined, () => {}),
    );
    return undefined;
  }
}

/**
 * The bounds that keep a slow or frozen PostgreSQL from holding requests: statement_timeout and lock_timeout end a
 * statement on the server; a frozen server (SIGSTOP, a hung host: the TCP connection stays open and nothing answers)
 * never applies them, so the client gives up on a query a little later (query_timeout), and on opening a connection
 * or waiting for one from the pool after acquireTimeoutMs. Start-up work (the lock, migrations) and readiness use
 * connections of their own without these bounds or with their own.
 */
const IDLE_CONNECTION_MS = 300_000;

async function openPostgres(opts: DatabaseOptions & { url: string }): Promise<Database> {
  const { url } = opts;
  const statementMs = opts.statementTimeoutMs ?? 5_000;
  const acquireMs = opts.acquireTimeoutMs ?? 3_000;
  const pool = new BudgetPool({
    connectionString: url,
    max: opts.poolSize,
    // pg closes a connection idle for 10 s by default: a pool that shrinks between bursts opens its connections again,
    // and each new one plans the sign-in path's wide joined reads afresh (PostgreSQL keeps a statement's custom plans
    // for its first five executions on a connection: 1-1.6 ms of the server's CPU each for those reads, against
    // 0.2 ms with the plan kept). Kept for five minutes, as poolers and Java pools keep theirs.
    idleTimeoutMillis: IDLE_CONNECTION_MS,
    connectionTimeoutMillis: acquireMs,
    Client: setupClient(sessionSetup(statementMs, opts.lockTimeoutMs ?? 2_000), statementMs + FROZEN_MARGIN_MS, opts.onQuery),
  });
  // An idle client losing its server must not crash the process.
  pool.on("error", () => {});
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  registerDriver(prisma, {
    query: async (q) => (await pool.query(q.name ? { name: q.name, text: q.text, values: q.values } : { text: q.text, values: q.values })).rows,
  });
  const probe = readinessProbe(url);
  return {
    kind: "postgres",
    prisma,
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    migrationAdapter() {
      const own = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 10_000 });
      own.on("error", () => {});
      return { factory: new PrismaPg(own), dispose: () => own.end() };
    },
    async migrationTransaction(fn) {
      // Its own connection, without the request timeouts: a migration may take long on a large database.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
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
        if (broken) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
        await client.end().catch(() => {});
      }
    },
    async withStartupLock(fn) {
      // Its own connection, without the request timeouts: another replica's migrations may take their time.
      const client = new pg.Client({ connectionString: url });
      client.on("error", () => {});
      await client.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [STARTUP_LOCK_KEY]);
        try {
          return await fn();
        } finally {
          await client.query("SELECT pg_advisory_unlock($1)", [STARTUP_LOCK_KEY]);
        }
      } finally {
        await client.end().catch(() => {});
      }
    },
    ready: (known, deadlineMs) => probe.ready(known, deadlineMs),
    failureLimits: (settings, log) => failureLimits(settings, pool, log),
    async notify(payload) {
      await pool.query("SELECT pg_notify('svc_auth', $1)", [payload]);
    },
    async close() {
      probe.close();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/**
 * The readiness connection: one client outside the pool, kept open between probes. A probe that misses its deadline
 * destroys it (a frozen server would keep it busy forever) and the next probe opens a new one.
 */
function readinessProbe(url: string) {
  let client: pg.Client | undefined;
  let closed = false;
  const drop = (c: pg.Client) => {
    if (client === c) client = undefined;
    (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    c.end().catch(() => {});
  };
  return {
    async ready(known: readonly string[], deadlineMs: number): Promise<boolean> {
      if (closed) return false;
      const c = client ?? new pg.Client({ connectionString: url, connectionTimeoutMillis: deadlineMs });
      const fresh = client === undefined;
      client = c;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), deadlineMs);
      });
      const check = (async () => {
        if (fresh) {
          c.on("error", () => drop(c));
          await c.connect();
        }
        const row = (await c.query<{ n: number; readOnly: boolean }>(READY_PG, [known])).rows[0];
        if (row?.readOnly) {
          outage.refusesWrites({ code: "25006", message: "the database is read-only (a standby, or default_transaction_read_only)" });
          return false;
        }
        return row?.n === new Set(known).size && !outage.refusedWritesWithin(REFUSED_WRITES_HOLD_MS);
      })();
      let settled = false;
      check.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      try {
        const ok = await Promise.race([check, deadline]);
        if (!settled) drop(c);
        else outage.up();
        return ok;
      } catch {
        drop(c);
        return false;
      } finally {
        clearTimeout(timer);
        check.catch(() => {});
      }
    },
    close() {
      closed = true;
      if (client) drop(client);
    },
  };
}

async function openEmbedded(dataDir: string, snapshotDir: string | null, log?: Pick<Logger, "info">): Promise<Database> {
  await secureDataDir(dataDir);
  const release = await lockDataDir(dataDir);
  const pgDir = path.join(dataDir, PGLITE_DIR);
  let pglite: PGlite;
  try {
    const seed: SeedOutcome = snapshotDir ? await seedFromSnapshot(pgDir, snapshotDir) : { seeded: false, fresh: await isNew(pgDir) };
    if (seed.seeded) log?.info({ snapshot: snapshotDir, migrations: seed.migrations }, "new embedded database: copied from the snapshot");
    else if (seed.fresh) {
      // Said before it starts: PGlite's initdb and then every migration take several seconds.
      const why = seed.reason ? `the snapshot is not used (${seed.reason}); ` : "";
      log?.info({ snapshot: snapshotDir }, `new embedded database: ${why}initialising one with PGlite's initdb, then every migration`);
    }
    pglite = await openPglite(pgDir);
    // PGlite unpacks a new cluster with its own modes (0666), whatever the umask: tighten what it wrote.
    await tightenTree(pgDir);
  } catch (err) {
    await release();
    throw err;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  registerDriver(prisma, preparedDriver(pglite));
  let closed = false;
  return {
    kind: "embedded",
    prisma,
    poolStats: () => undefined,
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
    failureLimits: (settings, log) => failureLimits(settings, undefined, log),
    // One process: invalidation never leaves it, so there is no listener to keep alive.
    notify: async () => {},
    async ready(known) {
      // In process: it cannot freeze apart from svc, so no deadline of its own.
      const rows = (await pglite.query<{ n: number }>(MIGRATED, [known])).rows;
      return rows[0]?.n === new Set(known).size && !outage.refusedWritesWithin(REFUSED_WRITES_HOLD_MS);
    },
    async close() {
      if (closed) return;
      closed = true;
      await prisma.$disconnect();
      await pglite.close();
      // Relation files created while running (by migrations, say) got PGlite's modes too.
      await tightenTree(pgDir);
      await release();
    },
  };
}

/**
 * Opens PGlite on `pgDir`. PGlite says only "failed to initialize properly" when it cannot write its files (a data
 * directory copied or restored as another user, a read-only volume): the error then names the first path this user
 * cannot write.
 */
async function openPglite(pgDir: string): Promise<PGlite> {
  try {
    const db = new PGlite(pgDir);
    await db.waitReady;
    return db;
  } catch (err) {
    const blocked = unwritable(pgDir);
    if (!blocked) throw err;
    const who = process.getuid ? `user ${process.getuid()}` : "this user";
    throw new Error(
      `the embedded database in ${pgDir} cannot be opened: ${blocked} is not writable by ${who}; ` +
        "svc writes its database files, so they must belong to the user it runs as (chown -R) on a writable volume",
      { cause: err },
    );
  }
}

/** The first of the database's directories and files that this process may not write, or undefined. */
function unwritable(dir: string): string | undefined {
  const writable = (p: string) => {
    try {
      accessSync(p, constants.W_OK);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === "ENOENT";
    }
  };
  if (!writable(dir)) return dir;
  for (const rel of ["PG_VERSION", "global", "global/pg_control", "base", "pg_wal"]) {
    const p = path.join(dir, rel);
    if (!writable(p)) return p;
  }
  return undefined;
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
  await tightenTree(path.join(dataDir, PGLITE_DIR));
}

/**
 * Removes group and other permissions below `dir` (files 0600, directories 0700); links are left alone. Synchronous:
 * it runs while svc opens or closes the database, serves nothing meanwhile, and a data directory holds some 1,200
 * files, which one lstat each through the thread pool made take up to a second on a loaded machine.
 */
async function tightenTree(dir: string): Promise<void> {
  tightenTreeSync(dir);
}

function tightenTreeSync(dir: string): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if ((lstatSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) tightenTreeSync(p);
    else if (e.isFile() && (lstatSync(p).mode & 0o077) !== 0) chmodSync(p, 0o600);
  }
}

/** Whether a statement's result (or any of a multi-statement result's) changed rows; unknown counts as changed. */
function changedRows(res: unknown): boolean {
  const results = Array.isArray(res) ? res : [res];
  return results.some((r) => {
    const n = (r as { rowCount?: number | null } | undefined)?.rowCount;
    return n === undefined || n === null || n > 0;
  });
}
