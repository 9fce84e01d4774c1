// Idempotency-Key answers (src/domain/idempotency.ts): found by their id (a hash; the key itself is never stored),
// written in the transaction of the create they answer.
import { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";
import { query, statement } from "./sql.js";

export interface StoredAnswer {
  requestHash: string;
  answer: Uint8Array;
}

export class IdempotencyRepo {
  constructor(private readonly db: Db) {}

  /** The answer stored under `id` that has not expired by `now`. */
  async find(instanceId: string, id: string, now: Date): Promise<StoredAnswer | undefined> {
    const rows = await query<StoredAnswer>(this.db, {
      name: "idempotency_find",
      text: `SELECT "requestHash", "answer" FROM "IdempotencyKey" WHERE "id" = $1 AND "instanceId" = $2 AND "expiresAt" > $3`,
      values: [id, instanceId, now],
    });
    return rows[0];
  }

  /**
   * Records the answer under `id`, replacing an expired one. False when a live answer is there already: another request
   * with the same key committed first (a PostgreSQL INSERT waits for a concurrent one's transaction to end).
   */
  async record(row: { id: string; instanceId: string; requestHash: string; answer: Uint8Array; createdAt: Date; expiresAt: Date }): Promise<boolean> {
    const rows = await query<{ id: string }>(
      this.db,
      statement(Prisma.sql`INSERT INTO "IdempotencyKey" ("id", "instanceId", "requestHash", "answer", "createdAt", "expiresAt")
        VALUES (${row.id}, ${row.instanceId}, ${row.requestHash}, ${Buffer.from(row.answer)}, ${row.createdAt}, ${row.expiresAt})
        ON CONFLICT ("id") DO UPDATE SET "instanceId" = EXCLUDED."instanceId", "requestHash" = EXCLUDED."requestHash",
          "answer" = EXCLUDED."answer", "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
        WHERE "IdempotencyKey"."expiresAt" <= ${row.createdAt}
        RETURNING "id"`),
    );
    return rows.length === 1;
  }

  /** Drops expired answers (a few at a time: called now and then by the requests that record one). */
  async purge(now: Date): Promise<void> {
    await query(this.db, {
      name: "idempotency_purge",
      text: `DELETE FROM "IdempotencyKey" WHERE "id" IN (SELECT "id" FROM "IdempotencyKey" WHERE "expiresAt" <= $1 LIMIT 500)`,
      values: [now],
    });
  }
}
