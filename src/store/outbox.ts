// The outbox: deliveries written in the transaction of what they tell (the event writer adds one per target an event
// execution names, in the event's own statement), then claimed and delivered by any replica. Generic enough for other
// kinds of delivery: a kind, a target, an order key, a JSON payload.
//
// States as stored: "pending" (not tried yet, or failed and to be retried: lastError is set), "delivered", "dead". One
// state for both waiting kinds keeps the claim a range of one index (instanceId, nextAttemptAt, of pending rows only)
// read in order and cut at the limit, however long the backlog. Every condition of that range is the index's, so the
// planner reads it so whatever its statistics say (they are often stale here: the table goes from nothing pending to
// thousands within seconds). With (state, nextAttemptAt), statistics taken while nothing was pending made it either
// read every due row and sort them (a claim of 32 out of 5,000 due: 43 ms) or probe the predecessors through that
// state index rather than (targetId, orderKey, seq) (the same claim: 50–100 ms); the predecessors' probe has no
// instanceId, so the claim's index does not tempt it.
//
// Claiming: one UPDATE over a sub-select `FOR UPDATE SKIP LOCKED` (replicas never take the same row), of due rows not
// leased, whose predecessors of the same target and order key are all delivered or dead (in order per aggregate), and
// not of targets the claiming replica has enough of in flight. The claim sets leaseUntil past the delivery's timeout:
// a replica that dies with a claimed row leaves it to be claimed again when the lease ends (at least once).
//
// What a delivery writes: the row (in the event's statement), the claim, the end ("delivered", or a failure). The
// lease and the attempt count are in no index, so with the room the table's fillfactor leaves on each page the claim is
// a HOT update, with no index entry; the pending-only indexes (claim, predecessors) get no entry from the end either,
// only the primary key, the listing's (instanceId, createdAt) and the purge's ended-rows index do. Before (every
// index full, the lease in nextAttemptAt): twelve index entries per delivery, now seven.
import { Prisma } from "../../gen/prisma/client.js";
import type { ActionRepo } from "./actions.js";
import type { Db } from "./index.js";
import { countAndPage, type Paged, type Window } from "./paging.js";

export type DeliveryState = "pending" | "failed" | "delivered" | "dead";

/** Where an event goes: a target of an event execution that matches it. */
export interface OutboxRoute {
  targetId: string;
  /** The target's organization (null: the instance's). */
  targetOrgId: string | null;
  /** 1: fire and forget (async targets); else the retry limit. */
  maxAttempts: number;
}

/**
 * Which targets an event is delivered to (the actions' runtime, from its cached event executions; `actions` reads
 * them on the event's own transaction when the cache is cold).
 */
export interface OutboxRouter {
  routes(e: { instanceId: string; orgId: string | null; type: string }, actions: ActionRepo): Promise<OutboxRoute[]>;
}

export interface NewDelivery {
  id: string;
  instanceId: string;
  kind: string;
  targetId: string;
  orgId: string | null;
  eventType: string;
  orderKey: string;
  payload: Record<string, unknown>;
  maxAttempts: number;
  createdAt: Date;
}

export interface DeliveryRow extends NewDelivery {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  updatedAt: Date;
}

export interface DeliveryFilter {
  targetId?: string;
  eventType?: string;
  state?: DeliveryState;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
  /** Only these organizations' targets (undefined: every target). */
  orgIds?: readonly string[];
}

/** The VALUES of new deliveries, for an INSERT of the "Delivery" columns below. */
export function deliveryValues(rows: readonly NewDelivery[]): Prisma.Sql {
  return Prisma.join(
    rows.map(
      (d) =>
        Prisma.sql`(${d.id}, ${d.instanceId}, ${d.kind}, ${d.targetId}, ${d.orgId}, ${d.eventType}, ${d.orderKey}, ${JSON.stringify(d.payload)}::jsonb,
          'pending', 0, ${d.maxAttempts}::int, ${d.createdAt}::timestamptz, ${d.createdAt}::timestamptz, ${d.createdAt}::timestamptz)`,
    ),
  );
}

export const DELIVERY_COLUMNS = Prisma.raw(
  `"id", "instanceId", "kind", "targetId", "orgId", "eventType", "orderKey", "payload", "state", "attempts", "maxAttempts", "nextAttemptAt", "createdAt", "updatedAt"`,
);

const rowOf = (r: Record<string, unknown>): DeliveryRow => {
  const { seq: _seq, leaseUntil: _lease, ...rest } = r;
  const row = rest as unknown as DeliveryRow;
  return row.state === "pending" && row.lastError !== null ? { ...row, state: "failed" } : row;
};

/** A state as the API names it, over what is stored (a failed delivery is a pending one with its last error). */
function stateWhere(state: DeliveryState): Prisma.DeliveryWhereInput {
  if (state === "pending") return { state: "pending", lastError: null };
  if (state === "failed") return { state: "pending", lastError: { not: null } };
  return { state };
}

export class OutboxRepo {
  constructor(private readonly db: Db) {}

  /**
   * Claims up to `limit` due deliveries of the instance (not of `busyTargets`) until `leaseUntil`, counting the
   * attempt. The order of seq: older first.
   */
  async claim(instanceId: string, now: Date, leaseUntil: Date, busyTargets: readonly string[], limit: number): Promise<DeliveryRow[]> {
    const rows = await this.db.$queryRaw<Record<string, unknown>[]>`
      UPDATE "Delivery" d SET "leaseUntil" = ${leaseUntil}::timestamptz, "attempts" = d."attempts" + 1
      FROM (
        SELECT c."id" FROM "Delivery" c
        WHERE c."state" = 'pending' AND c."nextAttemptAt" <= ${now}::timestamptz AND c."instanceId" = ${instanceId}
          AND (c."leaseUntil" IS NULL OR c."leaseUntil" <= ${now}::timestamptz)
          AND NOT (c."targetId" = ANY(${busyTargets as string[]}::text[]))
          AND NOT EXISTS (
            SELECT 1 FROM "Delivery" p
            WHERE p."targetId" = c."targetId" AND p."orderKey" = c."orderKey" AND p."seq" < c."seq" AND p."state" = 'pending')
        ORDER BY c."nextAttemptAt"
        LIMIT ${limit}::int
        FOR UPDATE SKIP LOCKED) claimed
      WHERE d."id" = claimed."id"
      RETURNING d.*`;
    return rows.map(rowOf);
  }

  /** The deliveries answered 2xx (or given up on, for a kind that is not retried). */
  async delivered(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db.$executeRaw`UPDATE "Delivery" SET "state" = 'delivered', "lastError" = NULL, "updatedAt" = ${at}::timestamptz
      WHERE "id" = ANY(${ids as string[]}::text[])`;
  }

  /** A failed attempt: retried at `retryAt`, or dead when there is none. */
  async failed(id: string, error: string, at: Date, retryAt: Date | null): Promise<void> {
    await this.db.delivery.update({
      where: { id },
      data: { state: retryAt ? "pending" : "dead", lastError: error.slice(0, 500), updatedAt: at, nextAttemptAt: retryAt ?? at, leaseUntil: null },
    });
  }

  find(instanceId: string, id: string): Promise<DeliveryRow | null> {
    return this.db.delivery.findFirst({ where: { instanceId, id } }).then((r) => (r ? rowOf(r as unknown as Record<string, unknown>) : null));
  }

  /** A dead (or failed) delivery tried again at once, with its attempts counted afresh. */
  async retry(instanceId: string, id: string, at: Date): Promise<boolean> {
    const { count } = await this.db.delivery.updateMany({
      where: { instanceId, id, OR: [{ state: "dead" }, { state: "pending", lastError: { not: null } }] },
      data: { state: "pending", attempts: 0, lastError: null, nextAttemptAt: at, leaseUntil: null, updatedAt: at },
    });
    return count > 0;
  }

  page(instanceId: string, f: DeliveryFilter, w: Window): Promise<Paged<DeliveryRow>> {
    const where: Prisma.DeliveryWhereInput = {
      instanceId,
      ...(f.targetId ? { targetId: f.targetId } : {}),
      ...(f.eventType ? { eventType: f.eventType } : {}),
      ...(f.state ? stateWhere(f.state) : {}),
      ...(f.from || f.to ? { createdAt: { ...(f.from ? { gte: f.from } : {}), ...(f.to ? { lt: f.to } : {}) } } : {}),
      ...(f.orgIds ? { orgId: { in: [...f.orgIds] } } : {}),
    };
    const dir = w.asc ? ("asc" as const) : ("desc" as const);
    return countAndPage(
      this.db,
      w,
      (take) => this.db.delivery.count({ where, ...(take === undefined ? {} : { take }) }),
      this.db.delivery.findMany({ where, orderBy: [{ createdAt: dir }, { seq: dir }], skip: w.offset, take: w.limit }),
    ).then((p) => ({ ...p, rows: p.rows.map((r) => rowOf(r as unknown as Record<string, unknown>)) }));
  }

  /** A target's deliveries whose last attempt failed (retrying or dead), changed since `since`. */
  recentFailures(instanceId: string, targetId: string, since: Date): Promise<number> {
    return this.db.delivery.count({
      where: { instanceId, targetId, OR: [{ state: "dead" }, { state: "pending", lastError: { not: null } }], updatedAt: { gte: since } },
    });
  }

  /** How many deliveries wait (pending or failed) and the age of the oldest, for the metrics. */
  async depth(instanceId: string, now: Date): Promise<{ waiting: number; oldestSeconds: number }> {
    const [r] = await this.db.$queryRaw<{ waiting: bigint | number; oldest: Date | string | null }[]>`
      SELECT count(*) AS waiting, min("createdAt") AS oldest FROM "Delivery" WHERE "state" = 'pending' AND "instanceId" = ${instanceId}`;
    const oldest = r?.oldest ? new Date(r.oldest).getTime() : now.getTime();
    return { waiting: Number(r?.waiting ?? 0), oldestSeconds: Math.max(0, (now.getTime() - oldest) / 1000) };
  }

  /**
   * Deletes delivered and dead deliveries that ended before `before`, at most `limit` of them; of one instance when
   * `instanceId` is given (read on the ended rows' index), else of all.
   */
  purge(before: Date, limit: number, instanceId?: string): Promise<number> {
    const ofInstance = instanceId === undefined ? Prisma.empty : Prisma.sql`AND "instanceId" = ${instanceId}`;
    return this.db.$executeRaw`DELETE FROM "Delivery" WHERE "id" IN (
      SELECT "id" FROM "Delivery" WHERE "state" <> 'pending' AND "updatedAt" < ${before}::timestamptz ${ofInstance}
      LIMIT ${limit}::int)`;
  }

  /** A deleted target's deliveries go with it. */
  async deleteOfTarget(instanceId: string, targetId: string): Promise<void> {
    await this.db.delivery.deleteMany({ where: { instanceId, targetId } });
  }
}
