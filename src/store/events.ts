// The one event writer: every audit event goes through here, inside the
// transaction of the change it records.
import { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";
import { countAndPage, direction, type Paged, slice, type Window } from "./paging.js";

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

function eventWhere(instanceId: string, c: EventConditions): Prisma.EventWhereInput {
  const where: Prisma.EventWhereInput = { instanceId };
  if (typeof c.orgId === "string") where.orgId = c.orgId;
  else if (c.orgId) where.orgId = { in: [...c.orgId] };
  if (c.aggregateType) where.aggregateType = c.aggregateType;
  if (c.aggregateId) where.aggregateId = c.aggregateId;
  if (c.types?.length) where.type = { in: [...c.types] };
  if (c.editorUserId) where.editorUserId = c.editorUserId;
  if (c.from || c.to) where.createdAt = { ...(c.from ? { gte: c.from } : {}), ...(c.to ? { lt: c.to } : {}) };
  return where;
}

/** A payload stored before it was always an object reads as { value }. */
function payloadOf(p: Prisma.JsonValue): Record<string, unknown> {
  return p && typeof p === "object" && !Array.isArray(p) ? (p as Record<string, unknown>) : { value: p };
}

export class EventRepo {
  constructor(private readonly db: Db) {}

  async append(e: EventRow): Promise<void> {
    await this.db.event.create({ data: { ...e, payload: e.payload as object } });
  }

  async appendMany(events: EventRow[]): Promise<void> {
    if (events.length) await this.db.event.createMany({ data: events.map((e) => ({ ...e, payload: e.payload as object })) });
  }

  /** In creation order, the id (time-ordered) breaking ties between events of the same millisecond. */
  async page(instanceId: string, c: EventConditions, w: Window): Promise<Paged<EventRow>> {
    const where = eventWhere(instanceId, c);
    const dir = direction(w);
    const page = await countAndPage(
      this.db,
      w,
      (take) => this.db.event.count({ where, take }),
      this.db.event.findMany({ where, orderBy: [{ createdAt: dir }, { id: dir }], ...slice(w) }),
    );
    return { total: page.total, totalIsLowerBound: page.totalIsLowerBound, rows: page.rows.map((r) => ({ ...r, payload: payloadOf(r.payload) })) };
  }
}
