// The one place that reads driver errors (pg, PGlite, or Prisma's wrapping of
// either) and turns them into the domain's error type.
import { DomainError, invalidArgument, setDriverErrorTranslator } from "../domain/errors.js";
import { takeCommitUnanswered } from "./deadline.js";
import { outage } from "./outage.js";
import { sqlError } from "./sql.js";

/**
 * Whether PostgreSQL refused a text value it cannot store (a NUL character, or a byte sequence invalid in the
 * database encoding). Stored text never holds one, so it came from the request: bad input, not an internal error,
 * whichever query met it first.
 */
export function isUnstorableText(err: unknown): boolean {
  const { code } = sqlError(err);
  return code === "22021" || code === "22P05";
}

/**
 * A unique violation (Prisma's P2002 or a raw statement's SQLSTATE 23505), with what names the constraint: its
 * name, or Prisma's list of the fields. Undefined for any other error.
 */
export function uniqueViolation(err: unknown): { target: string } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | null;
  if (e?.code === "P2002") return { target: JSON.stringify(e.meta ?? {}) };
  const raw = sqlError(err);
  if (raw.code === "23505") return { target: raw.constraint ?? JSON.stringify(err) };
  return undefined;
}

/**
 * Runs a write and turns its unique violation into `onDuplicate()` (an AlreadyExists of the domain). With `on`,
 * only a violation whose constraint or fields mention that text is translated.
 */
export async function unique<T>(write: Promise<T>, onDuplicate: () => Error, on?: string): Promise<T> {
  try {
    return await write;
  } catch (err) {
    const v = uniqueViolation(err);
    if (v && (on === undefined || v.target.includes(on))) throw onDuplicate();
    throw err;
  }
}

/**
 * Prisma's codes for a database it cannot reach or that stopped answering: P2024 no pool connection in time, P2028 no
 * transaction in time (its maxWait) or a transaction cut off by its timeout.
 */
const PRISMA_UNAVAILABLE = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2028"]);
/** SQLSTATEs of a server going away, refusing connections or cutting a statement short (statement or lock timeout). */
const SQLSTATE_UNAVAILABLE = /^(08...|57P0[1-3]|57014|55P03|53300)$/;
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
/**
 * node-postgres' own words for a lost, refused or timed-out connection or query, and Prisma's for a transaction it
 * could not start or finish in time (the same as P2028, in errors that carry no code).
 */
const PG_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection ended|Unable to start a transaction in the given time|Transaction already closed|Transaction API error/i;
/**
 * SQLSTATEs of a database that answers but refuses writes: 25006 read-only (a standby after a failover, or
 * default_transaction_read_only), class 53 insufficient resources (disk full, out of memory, a configured limit) other
 * than too many connections (a connection refused, above).
 */
const SQLSTATE_REFUSES_WRITES = /^(25006|53(?!300)...)$/;

/** Whether the database refuses writes right now (read-only, full): an outage too, answered like one. */
export function refusesWrites(err: unknown): boolean {
  const { code } = sqlError(err);
  return code !== undefined && SQLSTATE_REFUSES_WRITES.test(code);
}

/**
 * Whether the error says the database is unreachable or too slow right now (not that the request or svc is wrong):
 * the answer is then 503 with Retry-After, and the outage is logged once, not per request.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; meta?: { driverAdapterError?: { cause?: { kind?: string } } } } | null;
  if (!e || typeof e !== "object") return false;
  if (typeof e.code === "string" && (PRISMA_UNAVAILABLE.has(e.code) || SOCKET_CODES.has(e.code))) return true;
  const kind = e.meta?.driverAdapterError?.cause?.kind;
  if (kind === "DatabaseNotReachable" || kind === "ConnectionClosed" || kind === "SocketTimeout" || kind === "TooManyConnections") return true;
  const { code } = sqlError(err);
  if (code && SQLSTATE_UNAVAILABLE.test(code)) return true;
  return typeof e.message === "string" && PG_MESSAGES.test(e.message);
}

/** Seconds a client should wait before trying again while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** What the adapters see for a driver error: the domain error it stands for, or the error itself. */
export function translateDriverError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  if (takeCommitUnanswered()) return outcomeUnknown();
  if (isUnstorableText(err)) return invalidArgument("Errors.Input.Text", "text fields must not contain U+0000");
  const refused = refusesWrites(err);
  if (refused || isDatabaseUnavailable(err)) {
    if (refused) outage.refusesWrites(err);
    else outage.down(err);
    return new DomainError("Unavailable", "Errors.Database.Unavailable", "the database is not available right now; try again shortly", {
      retryAfter: String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    });
  }
  return err;
}

/**
 * The connection was lost while a transaction committed (or its COMMIT got no answer in time): the change may or may
 * not have been kept. Not the "try again" of an outage: no Retry-After, a reason of its own and `outcome: unknown`
 * (the adapters add `Svc-Outcome: unknown`), so that a client checks before it retries, or retries with the same
 * Idempotency-Key, which answers with the kept change if there is one.
 */
export function outcomeUnknown(): DomainError {
  outage.down({ message: "a COMMIT got no answer" });
  return new DomainError(
    "Unavailable",
    "Errors.Database.OutcomeUnknown",
    "the database connection was lost while the change was committed: it may or may not have been made; check before retrying, or retry with the same Idempotency-Key",
    { outcome: "unknown" },
  );
}

setDriverErrorTranslator(translateDriverError);
