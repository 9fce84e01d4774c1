// Statement counting for the bench: every statement svc sends through the pg driver (its pool for the hand-written
// statements and Prisma's adapter alike) passes pg.Client.prototype.query, which this wraps in the bench's process
// (svc runs in it; the peers run in processes of their own and are not counted). pg_stat_statements would need the
// server's shared_preload_libraries (a restart of a cluster others use), so the count is taken in the driver.
//
// A statement is one round trip (pg sends parse, bind, execute and sync together); a "commit" is a transaction that
// wrote: a BEGIN … COMMIT holding a write, or a write sent on its own (autocommit).
import pg from "pg";

export interface StatementCounts {
  statements: number;
  writes: number;
  commits: number;
}

const counts: StatementCounts = { statements: 0, writes: 0, commits: 0 };
/** SVC_BENCH_SQL_LOG=1: how often each statement (its first 100 characters) was sent, for statementsSince. */
const byText = new Map<string, number>();
const tally = process.env.SVC_BENCH_SQL_LOG === "1";
const WRITE = /\b(INSERT|UPDATE|DELETE)\b/i;
const BEGIN = /^\s*(BEGIN|START\s+TRANSACTION)\b/i;
const END = /^\s*(COMMIT|END|ROLLBACK|ABORT)\b/i;

/**
 * How long each commit took, from the driver's send to its answer (ms): a write sent on its own (autocommit) or a
 * COMMIT of a transaction that wrote. With synchronous_commit on, that includes PostgreSQL's WAL flush, which on a
 * disk others share varies far more than CPU does; a closed loop of N connections that each wait for one commit per
 * request can do no more than N of them per commit time.
 */
const commitMs: number[] = [];
const COMMITS_KEPT = 200_000;

/** Calls `done` with the time from now to the statement's answer (callback or promise, whichever the caller used). */
function timed(args: unknown[], run: () => unknown): unknown {
  const t0 = performance.now();
  const record = () => {
    if (commitMs.length < COMMITS_KEPT) commitMs.push(performance.now() - t0);
  };
  const last = args.length - 1;
  const cb = args[last];
  if (typeof cb === "function") {
    args[last] = (...a: unknown[]) => {
      record();
      return (cb as (...x: unknown[]) => unknown)(...a);
    };
    return run();
  }
  const out = run() as { then?: (ok: () => void, fail: () => void) => unknown } | undefined;
  if (out && typeof out.then === "function") out.then(record, record);
  return out;
}

/** Per connection: inside a transaction, and whether it wrote. */
const open = new WeakMap<object, { wrote: boolean }>();
let installed = false;
/** SVC_BENCH_SQL_LOG=1: each counted statement's first 160 characters on stderr while `logging` is on (the step counts). */
let logging = false;
export const logStatements = (on: boolean): void => {
  logging = on && process.env.SVC_BENCH_SQL_LOG === "1";
};

/** Wraps pg's Client.query once (idempotent). */
export function countStatements(): void {
  if (installed) return;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: object, ...args: unknown[]): unknown {
    const first = args[0] as { text?: unknown; submit?: unknown } | string | undefined;
    const text = typeof first === "string" ? first : typeof first?.text === "string" ? first.text : "";
    if (text) {
      counts.statements++;
      if (tally) {
        const key = text.replace(/\s+/g, " ").slice(0, 100);
        byText.set(key, (byText.get(key) ?? 0) + 1);
      }
      if (logging) process.stderr.write(`    sql: ${text.replace(/\s+/g, " ").slice(0, 160)}\n`);
      const tx = open.get(this);
      let commit = false;
      if (BEGIN.test(text)) open.set(this, { wrote: false });
      else if (END.test(text)) {
        commit = tx?.wrote === true && /^\s*(COMMIT|END)\b/i.test(text);
        if (commit) counts.commits++;
        open.delete(this);
      } else if (WRITE.test(text)) {
        counts.writes++;
        if (tx) tx.wrote = true;
        else {
          counts.commits++;
          commit = true;
        }
      }
      if (commit) return timed(args, () => original.apply(this, args));
    }
    return original.apply(this, args);
  };
}

/** The counts so far (a copy). */
export function statementCounts(): StatementCounts {
  return { ...counts };
}

/** SVC_BENCH_SQL_LOG=1: how often each statement was sent so far (a copy, for tallySince). */
export function statementTally(): Map<string, number> {
  return new Map(byText);
}

/** The statements sent since `before` (statementTally's answer then), per `per` flows, most frequent first. */
export function tallySince(before: Map<string, number>, per: number): string[] {
  return [...byText]
    .map(([k, n]) => [k, n - (before.get(k) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `    ${(n / per).toFixed(2)} × ${k}`);
}

/** Where the commit times stand now (for commitTimesSince). */
export const commitMark = (): number => commitMs.length;

/** The median and 90th percentile of the commit times since `mark` (ms), or undefined without any. */
export function commitTimesSince(mark: number): { p50: number; p90: number; commits: number } | undefined {
  const since = commitMs.slice(mark).sort((a, b) => a - b);
  if (since.length === 0) return undefined;
  const at = (q: number) => since[Math.min(since.length - 1, Math.floor(q * since.length))] as number;
  return { p50: at(0.5), p90: at(0.9), commits: since.length };
}
