// The shapes every list read shares: the "count + page" read (the total of the
// filter and one window of its rows, from one snapshot), the window and order
// of a list, and text matches as LIKE-safe Prisma filters.
import type { Prisma } from "../../gen/prisma/client.js";
import type { TextMatch } from "../domain/list.js";
import type { Db } from "./index.js";

/** One window of a list: offset/limit and the direction of its order. */
export interface Window {
  offset: number;
  limit: number;
  asc: boolean;
}

/** What a repository returns for one page of a list. */
export interface Paged<T> {
  total: number;
  rows: T[];
}

/**
 * The total and the rows in one batch (one snapshot) on the root client; inside an interactive transaction, which
 * is one snapshot already, one after the other on its connection.
 */
export async function countAndPage<T>(db: Db, count: Prisma.PrismaPromise<number>, rows: Prisma.PrismaPromise<T[]>): Promise<Paged<T>> {
  if ("$transaction" in db) {
    const [total, page] = await db.$transaction([count, rows]);
    return { total, rows: page };
  }
  return { total: await count, rows: await rows };
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
