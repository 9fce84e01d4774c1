// The "total + one page" read of the user aggregate's lists (metadata, machine keys, PATs).
import type { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";

/**
 * Runs the count and the page on one snapshot: a batch transaction on the root client, or the enclosing
 * transaction's connection when there is one.
 */
export function countAndPage<T>(db: Db, reads: [Prisma.PrismaPromise<number>, Prisma.PrismaPromise<T[]>]): Promise<[number, T[]]> {
  if ("$transaction" in db) return db.$transaction(reads);
  return Promise.all(reads);
}
