// The one event writer: every audit event goes through here, inside the
// transaction of the change it records.
import { Prisma } from "../../gen/prisma/client.js";
import { newId } from "../domain/ids.js";
import { ActionRepo } from "./actions.js";
import type { Db } from "./index.js";
import { DELIVERY_COLUMNS, deliveryValues, type NewDelivery, type OutboxRoute, type OutboxRouter } from "./outbox.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver, type Window } from "./paging.js";

export interface EventRow {
  id: string;
  instanceId: string;
  orgId: string | null;
  aggregateType: string;
  aggregateId: string;
  type: string;
  editorUserId: string | null;
  payload: Record<string, unknown>;
  createdAt: Date;
}

/**
 * The INSERT of event `e` once per row of `source` (the name of a data-modifying CTE's result): the audit event of a
 * change written in the same statement as the change, so that both or neither are kept.
 */
export function insertEventFrom(e: EventRow, source: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`INSERT INTO "Event" ("id", "instanceId", "orgId", "aggregateType", "aggregateId", "type", "editorUserId", "payload", "createdAt")
    SELECT ${e.id}::text, ${e.instanceId}::text, ${e.orgId}::text, ${e.aggregateType}::text, ${e.aggregateId}::text, ${e.type}::text,
      ${e.editorUserId}::text, ${JSON.stringify(e.payload)}::jsonb, ${e.createdAt}::timestamptz
    FROM ${source}`;
}

/** What a read of the trail is filtered by; every field given must match. */
export interface EventConditions {
  /** One organization, or any of these. */
  orgId?: string | readonly string[];
  aggregateType?: string;
  aggregateId?: string;
  /** Any of these types. */
  types?: readonly string[];
  editorUserId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

/**
 * The conditions as SQL over `e`, and a name for their shape (which are present; one organization or several): the
 * statement's text depends on nothing else, and single values compare with `=` (the plan of `= ANY($1)` made from
 * stale statistics is the one that went bad after a provisioning burst).
 */
function eventCondition(instanceId: string, c: EventConditions): { where: Prisma.Sql; name: string } {
  const parts = [Prisma.sql`e."instanceId" = ${instanceId}`];
  let name = "";
  const add = (flag: string, sql: Prisma.Sql) => {
    parts.push(sql);
    name += flag;
  };
  if (typeof c.orgId === "string") add("o", Prisma.sql`e."orgId" = ${c.orgId}`);
  else if (c.orgId) add("O", Prisma.sql`e."orgId" = ANY(${[...c.orgId]}::text[])`);
  if (c.aggregateType) add("a", Prisma.sql`e."aggregateType" = ${c.aggregateType}`);
  if (c.aggregateId) add("i", Prisma.sql`e."aggregateId" = ${c.aggregateId}`);
  if (c.types?.length === 1) add("t", Prisma.sql`e."type" = ${c.types[0]}`);
  else if (c.types?.length) add("T", Prisma.sql`e."type" = ANY(${[...c.types]}::text[])`);
  if (c.editorUserId) add("e", Prisma.sql`e."editorUserId" = ${c.editorUserId}`);
  if (c.from) add("f", Prisma.sql`e."createdAt" >= ${c.from}::timestamptz`);
  if (c.to) add("u", Prisma.sql`e."createdAt" < ${c.to}::timestamptz`);
  return { where: Prisma.join(parts, " AND "), name: name || "all" };
}

/** A payload stored before it was always an object reads as { value }. */
function payloadOf(p: Prisma.JsonValue): Record<string, unknown> {
  return p && typeof p === "object" && !Array.isArray(p) ? (p as Record<string, unknown>) : { value: p };
}

/** The event as ListEvents answers it (REST JSON), with the instance: what a delivery of it carries. */
export function eventPayload(e: EventRow): Record<string, unknown> {
  return {
    id: e.id,
    type: e.type,
    aggregateType: e.aggregateType,
    aggregateId: e.aggregateId,
    organizationId: e.orgId ?? "",
    editorUserId: e.editorUserId ?? "",
    creationDate: e.createdAt.toISOString(),
    payload: e.payload,
    instanceId: e.instanceId,
  };
}

/** One delivery of event `e` per route (the outbox rows the event writer adds to the event's statement). */
export function deliveriesOf(e: EventRow, routes: readonly OutboxRoute[]): NewDelivery[] {
  const payload = eventPayload(e);
  return routes.map((r) => ({
    id: newId(),
    instanceId: e.instanceId,
    kind: "action.event",
    targetId: r.targetId,
    orgId: r.targetOrgId,
    eventType: e.type,
    orderKey: `${e.aggregateType}:${e.aggregateId}`,
    payload,
    maxAttempts: r.maxAttempts,
    createdAt: e.createdAt,
  }));
}

/**
 * The outbox's deliveries of event `e` as one more data-modifying CTE (`, outbox AS (...)`) of a statement that writes
 * the event itself, kept only when `source` (a CTE of that statement) has rows; nothing when no execution matches.
 * For the hot paths that write their event inside their own statement (sessions, finished auth requests).
 */
export async function outboxCte(db: Db, router: OutboxRouter | undefined, e: EventRow, source: string): Promise<{ sql: Prisma.Sql; count: number }> {
  const routes = router ? await router.routes(e, new ActionRepo(db)) : [];
  if (routes.length === 0) return { sql: Prisma.empty, count: 0 };
  return {
    sql: Prisma.sql`, outbox AS (INSERT INTO "Delivery" (${DELIVERY_COLUMNS})
      SELECT d.* FROM (VALUES ${deliveryValues(deliveriesOf(e, routes))}) AS d WHERE EXISTS (SELECT 1 FROM ${Prisma.raw(`"${source}"`)}))`,
    count: routes.length,
  };
}

export class EventRepo {
  /** `router`: where events go besides the trail (the outbox's deliveries, see outbox.ts); none: nowhere. */
  constructor(
    private readonly db: Db,
    private readonly router?: OutboxRouter,
  ) {}

  /**
   * The event, and a delivery per target of the event executions it matches, in one statement (both or neither are
   * kept, inside a transaction or not). Without any execution that matches: the event alone, as before.
   */
  async append(e: EventRow): Promise<void> {
    const routes = this.router ? await this.router.routes(e, new ActionRepo(this.db)) : [];
    if (routes.length === 0) {
      await this.db.event.create({ data: { ...e, payload: e.payload as object } });
      return;
    }
    await this.db.$executeRaw`WITH ev AS (${insertEventFrom(e, Prisma.sql`(SELECT 1) one`)})
      INSERT INTO "Delivery" (${DELIVERY_COLUMNS}) VALUES ${deliveryValues(deliveriesOf(e, routes))}`;
  }

  async appendMany(events: EventRow[]): Promise<void> {
    for (const e of events) await this.append(e);
  }

  /**
   * In creation order, the id (time-ordered) breaking ties between events of the same millisecond: the total (bounded,
   * see Page) and the page in one statement on the driver (pageOnDriver), named by the conditions present. The trail
   * is the fastest-growing table: through Prisma's runtime and a batch transaction a page of 10 cost ~3 ms of CPU
   * (svc and PostgreSQL), as one statement ~0.7 ms.
   */
  async page(instanceId: string, c: EventConditions, w: Window): Promise<Paged<EventRow>> {
    const { where, name } = eventCondition(instanceId, c);
    const page = await pageOnDriver<EventListRow>(
      this.db,
      {
        from: Prisma.sql`"Event" e`,
        alias: "e",
        where,
        columns: Prisma.sql`e."id", e."instanceId", e."orgId", e."aggregateType", e."aggregateId", e."type", e."editorUserId", e."payload", e."createdAt"`,
        order: ["createdAt", "id"],
        // One flag per condition present besides the instance.
        name: name === "all" || name.length <= NAMED_MAX_FILTERS ? `event_list_${name}` : undefined,
      },
      w,
    );
    return {
      ...page,
      rows: page.rows.map((r) => ({
        ...r,
        payload: payloadOf(typeof r.payload === "string" ? (JSON.parse(r.payload) as Prisma.JsonValue) : r.payload),
        createdAt: dateOf(r.createdAt),
      })),
    };
  }
}

/** A row of the list statement: the payload as the driver hands it back, the timestamp perhaps as text. */
type EventListRow = Omit<EventRow, "payload" | "createdAt"> & { payload: Prisma.JsonValue; createdAt: unknown };
