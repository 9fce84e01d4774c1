// `svc migrate` (bin/svc.js; bundled as dist/migrate.js): applies the committed migrations the database has not seen
// yet and exits, for a release job that runs before the new version's replicas start (a Kubernetes Job, compose's
// migrate service, an ExecStartPre). The same migrations and the same start-up lock as `svc start`, which still
// applies anything pending itself: running this first only moves the wait out of the replicas' start.
//
// Exit status: 0 when the database holds every migration of this build, 1 when they could not be applied (the
// database is unreachable, a migration failed or an older one was left half-done), 2 on a configuration error.
// SVC_MASTER_KEY is not needed: nothing sealed is read or written.
import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { openDatabase } from "./store/db.js";
import { applyMigrations } from "./store/migrate.js";

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(process.env, { masterKeyRequired: false });
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(2);
}
const log = createLogger(config.logLevel, config.logFormat);
const started = performance.now();
const where = config.databaseUrl ? "PostgreSQL" : `the embedded database in ${config.dataDir}`;
let status = 0;
try {
  const db = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: 1,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    lockTimeoutMs: config.databaseLockTimeoutMs,
    acquireTimeoutMs: config.databaseAcquireTimeoutMs,
    ...(config.embeddedSnapshot ? {} : { snapshotDir: null }),
    log,
  });
  try {
    const { applied, known, modified } = await db.withStartupLock(() => applyMigrations(db));
    if (modified.length) log.warn({ modified }, "migration files changed after they were applied: the database keeps what ran then");
    const ms = Math.round(performance.now() - started);
    if (applied.length) log.info({ applied, known: known.length, ms }, `migrated ${where}: applied ${applied.length} of ${known.length} migrations`);
    else log.info({ known: known.length, ms }, `${where} is up to date: all ${known.length} migrations were applied before`);
  } finally {
    await db.close();
  }
} catch (err) {
  log.fatal({ err }, `svc migrate failed on ${where}: ${err instanceof Error ? err.message : String(err)}`);
  status = 1;
}
// pino writes asynchronously to a pipe: let it finish before the exit.
log.flush?.();
setImmediate(() => process.exit(status));
