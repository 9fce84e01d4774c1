// The read of one page of a list together with the number of rows the list
// holds, both from the same snapshot.
import type { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";

export interface CountedPage<R> {
  total: number;
  rows: R[];
}

/** Runs the count and the page read as one batch (one snapshot) on the root client, side by side in a transaction. */
export async function countedPage<R>(db: Db, count: Prisma.PrismaPromise<number>, rows: Prisma.PrismaPromise<R[]>): Promise<CountedPage<R>> {
  const [total, page] = "$transaction" in db ? await db.$transaction([count, rows]) : await Promise.all([count, rows]);
  return { total, rows: page };
}
