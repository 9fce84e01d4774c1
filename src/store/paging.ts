// The "count + page" read every v2 list call makes: the total of the filter
// and one window of its rows, read together.
import type { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";

/** One window of a list: offset/limit and the direction of its order. */
export interface Window {
  offset: number;
  limit: number;
  asc: boolean;
}

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
