// The one event writer: every audit event goes through here, inside the
// transaction of the change it records.
import type { Db } from "./index.js";

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

export class EventRepo {
  constructor(private readonly db: Db) {}

  async append(e: EventRow): Promise<void> {
    await this.db.event.create({ data: { ...e, payload: e.payload as object } });
  }

  async appendMany(events: EventRow[]): Promise<void> {
    if (events.length) await this.db.event.createMany({ data: events.map((e) => ({ ...e, payload: e.payload as object })) });
  }
}
