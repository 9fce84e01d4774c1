// The shapes every list read shares: the "count + page" read (the total of the
// filter, bounded, and one window of its rows, from one snapshot) as one
// statement on the driver (pageOnDriver) or through Prisma (countAndPage), the
// window and order of a list, and text matches as LIKE-safe Prisma filters.
import { Prisma } from "../../gen/prisma/client.js";
import { countLimit, type ListTotal, type TextMatch, totalOf } from "../domain/list.js";
import type { Db } from "./index.js";
import { query, statement } from "./sql.js";

/** One window of a list: offset/limit, the direction of its order and how far its total is counted (see Page). */
export interface Window {
  offset: number;
  limit: number;
  asc: boolean;
  countUpTo?: number;
}

/** What a repository returns for one page of a list: its rows and their total, exact or a lower bound. */
export interface Paged<T> extends ListTotal {
  rows: T[];
}

/**
 * The total and the rows in one batch (one snapshot) on the root client; inside an interactive transaction, which
 * is one snapshot already, one after the other on its connection. `count` gets the number of rows it may stop
 * after (undefined: all), Prisma's count `take`.
 */
export async function countAndPage<T>(
  db: Db,
  w: Pick<Window, "countUpTo">,
  count: (take: number | undefined) => Prisma.PrismaPromise<number>,
  rows: Prisma.PrismaPromise<T[]>,
): Promise<Paged<T>> {
  const counting = count(countLimit(w));
  if ("$transaction" in db) {
    const [counted, page] = await db.$transaction([counting, rows]);
    return { ...totalOf(counted, w), rows: page };
  }
  return { ...totalOf(await counting, w), rows: await rows };
}

/**
 * A list statement is named (prepared once per connection) only when it has at most this many filters besides its
 * fixed scope: PostgreSQL keeps every prepared statement of a connection until the connection ends, so the shapes a
 * caller can make must stay few (a dozen or so per list); a page with more filters is parsed each time.
 */
export const NAMED_MAX_FILTERS = 1;

export interface PageStatement {
  /** The table and its alias, e.g. `"UserGrant" g`. */
  from: Prisma.Sql;
  /** The list's conditions over the alias. */
  where: Prisma.Sql;
  /** The columns of a row over the alias; they include the order's columns under their own names. */
  columns: Prisma.Sql;
  /** The alias of `from`. */
  alias: string;
  /** Joins that only the page's rows need (the count reads `from` alone), e.g. to the user a row is about. */
  join?: Prisma.Sql;
  /** The order's columns, the last one unique and never null (it breaks ties and tells an empty page's row). */
  order: readonly string[];
  /**
   * A prepared-statement name for the statement's shape, when its text depends on nothing but the name (see
   * Statement.name); the direction and whether the count is bounded are added to it.
   */
  name?: string;
}

/**
 * The total (bounded by the window's countUpTo) and one page of a list in ONE statement on the driver, instead of a
 * count and a page through Prisma's runtime in a batch transaction (BEGIN, count, page, COMMIT): one snapshot
 * without a transaction, about a quarter of the CPU per page (ListUserGrants: 2.6 ms to 0.6 ms). An empty page is
 * one row with the total and nulls.
 */
export async function pageOnDriver<R>(db: Db, q: PageStatement, w: Window): Promise<Paged<R>> {
  const limit = countLimit(w);
  const dir = w.asc ? "ASC" : "DESC";
  const order = (alias: string) => Prisma.raw(q.order.map((c) => `${alias}."${c}" ${dir}`).join(", "));
  const bound = limit === undefined ? Prisma.empty : Prisma.sql` LIMIT ${limit}`;
  const rows = await query<{ total: number } & Record<string, unknown>>(
    db,
    statement(
      Prisma.sql`SELECT t."total", v.* FROM (SELECT count(*)::int AS "total" FROM (SELECT 1 FROM ${q.from} WHERE ${q.where}${bound}) c) t
        LEFT JOIN LATERAL (
          SELECT ${q.columns} FROM ${q.from} ${q.join ?? Prisma.empty} WHERE ${q.where} ORDER BY ${order(q.alias)} LIMIT ${w.limit} OFFSET ${w.offset}
        ) v ON TRUE
        ORDER BY ${order("v")}`,
      q.name && `${q.name}_${dir.toLowerCase()}_${limit === undefined ? "exact" : "bounded"}`,
    ),
  );
  const key = q.order[q.order.length - 1] as string;
  const page: R[] = [];
  for (const { total: _, ...r } of rows) if (r[key] !== null) page.push(r as R);
  return { ...totalOf(rows[0]?.total ?? 0, w), rows: page };
}

/** A timestamp column read on the driver: the embedded database may hand it back as text. */
export const dateOf = (v: unknown): Date => (v instanceof Date ? v : new Date(v as string));

/** Prisma's order direction of a window. */
export const direction = (w: Window) => (w.asc ? ("asc" as const) : ("desc" as const));

/** Skip and take of a window. */
export const slice = (w: Window) => ({ skip: w.offset, take: w.limit });

/**
 * Order and window of a list without a sort column: by creation, newest first
 * unless `asc`, the id (time-ordered) breaking ties.
 */
export function inCreationOrder(w: Window) {
  const dir = direction(w);
  return { orderBy: [{ createdAt: dir }, { id: dir }], skip: w.offset, take: w.limit };
}

/**
 * PostgreSQL's LIKE escapes with backslash; Prisma passes a contains/startsWith/endsWith value unescaped, so
 * `_` and `%` would be wildcards.
 */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A text match as one Prisma string filter, safe against LIKE wildcards. */
export function textFilter(m: TextMatch): Prisma.StringFilter {
  const value = m.method === "equals" && !m.ignoreCase ? m.value : escapeLike(m.value);
  return { [m.method]: value, ...(m.ignoreCase ? { mode: "insensitive" as const } : {}) };
}
