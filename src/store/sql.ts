// Hand-written SQL for the hot paths (SCIM create, get and list): one
// statement per request, run on the driver underneath Prisma (a pg pool, or
// PGlite) instead of through Prisma's query runtime, which costs about as much
// CPU per call as the rest of a request. Statements are built with Prisma.sql
// (parameters, never string concatenation); fixed statements carry a name so
// PostgreSQL parses and plans them once per connection.
//
// Inside a Prisma interactive transaction the same statement runs through
// tx.$queryRawUnsafe, so a caller does not need two versions of its SQL.
import type { Prisma, PrismaClient } from "../../gen/prisma/client.js";

/** A statement: text with $1.. placeholders and its values (what Prisma.sql's `.text`/`.values` give). */
export interface Statement {
  text: string;
  values: unknown[];
  /**
   * A prepared-statement name: only for statements whose text never varies
   * (PostgreSQL keeps one per name and connection for the connection's life).
   */
  name?: string;
}

export interface Driver {
  query<R>(q: Statement): Promise<R[]>;
}

const drivers = new WeakMap<object, Driver>();

/** Called by openDatabase: the driver under a Prisma client. */
export function registerDriver(prisma: PrismaClient, driver: Driver): void {
  drivers.set(prisma, driver);
}

export function statement(sql: Prisma.Sql, name?: string): Statement {
  return { text: sql.text, values: sql.values as unknown[], ...(name ? { name } : {}) };
}

/**
 * Runs `q` on `db`: the driver when db is a client opened by openDatabase,
 * the transaction's connection when it is an interactive transaction.
 */
export async function query<R>(db: PrismaClient | Prisma.TransactionClient, q: Statement): Promise<R[]> {
  const driver = drivers.get(db);
  if (driver) return driver.query<R>(q);
  return (db as Prisma.TransactionClient).$queryRawUnsafe<R[]>(q.text, ...q.values);
}

/**
 * Runs `q` with each row handed back as one JSON text (row_to_json) and parsed here: for the wide rows of the sign-in
 * hot paths (the joined reads of sign-in-sql.ts), the driver's work per column (the row description, a parser per
 * column) costs more than the database's; one text column and JSON.parse cost about half. Timestamps arrive as ISO
 * strings and bytea as "\x..." hex text (see asDate and bytesOf in sign-in-sql.ts); json columns arrive parsed.
 */
export async function queryJson<R>(db: PrismaClient | Prisma.TransactionClient, q: Statement): Promise<R[]> {
  const rows = await query<{ j: string }>(db, { ...q, text: `SELECT row_to_json(x)::text AS "j" FROM (${q.text}) x` });
  return rows.map((r) => JSON.parse(r.j) as R);
}

/** A database error's SQLSTATE and constraint, from pg, PGlite or Prisma's wrapping of either. */
export function sqlError(err: unknown): { code?: string; constraint?: string } {
  const e = err as {
    code?: string;
    constraint?: string;
    meta?: { code?: string; driverAdapterError?: { cause?: { originalCode?: string; constraint?: unknown } } };
  };
  // Prisma's wrapping first: its own codes (P2010, ...) look like SQLSTATEs.
  const cause = e?.meta?.driverAdapterError?.cause;
  if (cause?.originalCode) return { code: cause.originalCode, constraint: JSON.stringify(cause.constraint ?? "") };
  if (e?.meta?.code) return { code: e.meta.code };
  if (typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return { code: e.code, constraint: e.constraint };
  return {};
}
