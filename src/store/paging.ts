// The shapes every list read shares: the "count + page" read (the total of the
// filter and one window of its rows, from one snapshot), the window and order
// of a list, and text matches as LIKE-safe Prisma filters.
import type { Prisma } from "../../gen/prisma/client.js";
import { countLimit, type ListTotal, type TextMatch, totalOf } from "../domain/list.js";
import type { Db } from "./index.js";

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
