// Actions: targets (endpoints svc calls, with their sealed signing keys) and executions (which targets a function
// calls, in order).
import { alreadyExists } from "../domain/errors.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { countAndPage, inCreationOrder, type Paged, type Window } from "./paging.js";

export interface TargetRow {
  id: string;
  instanceId: string;
  name: string;
  endpoint: string;
  timeoutMs: number;
  interruptOnError: boolean;
  signingKeyEnc: Uint8Array;
  /** "call", "webhook" or "async". */
  kind: string;
  /** The organization whose owners manage it; null: the instance's. */
  orgId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export type TargetChange = Partial<Pick<TargetRow, "name" | "endpoint" | "timeoutMs" | "interruptOnError" | "signingKeyEnc" | "kind">> & {
  updatedAt: Date;
};

export interface EventExecutionRow {
  /** "": the instance's. */
  orgId: string;
  /** An event type, a group ("user.*") or "*". */
  condition: string;
  targetIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

export interface ExecutionRow {
  function: string;
  targetIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

const bytes = (b: Uint8Array) => new Uint8Array(b) as Uint8Array<ArrayBuffer>;
const nameTaken = () => alreadyExists("Errors.Action.Target.AlreadyExists", "a target with this name exists already");

export class ActionRepo {
  constructor(private readonly db: Db) {}

  async insertTarget(row: TargetRow): Promise<void> {
    await unique(this.db.actionTarget.create({ data: { ...row, signingKeyEnc: bytes(row.signingKeyEnc) } }), nameTaken);
  }

  async updateTarget(instanceId: string, id: string, change: TargetChange): Promise<boolean> {
    const { signingKeyEnc, ...rest } = change;
    const { count } = await unique(
      this.db.actionTarget.updateMany({ where: { instanceId, id }, data: { ...rest, ...(signingKeyEnc ? { signingKeyEnc: bytes(signingKeyEnc) } : {}) } }),
      nameTaken,
    );
    return count > 0;
  }

  findTarget(instanceId: string, id: string): Promise<TargetRow | null> {
    return this.db.actionTarget.findFirst({ where: { instanceId, id } });
  }

  /** Those of `ids` that exist in the instance. */
  async existingTargetIds(instanceId: string, ids: string[]): Promise<string[]> {
    const rows = await this.db.actionTarget.findMany({ where: { instanceId, id: { in: ids } }, select: { id: true } });
    return rows.map((r) => r.id);
  }

  /** The instance's targets, or (orgIds) those of these organizations only. */
  pageTargets(instanceId: string, w: Window, orgIds?: readonly string[]): Promise<Paged<TargetRow>> {
    const where = { instanceId, ...(orgIds ? { orgId: { in: [...orgIds] } } : {}) };
    return countAndPage(this.db, w, (take) => this.db.actionTarget.count({ where, take }), this.db.actionTarget.findMany({ where, ...inCreationOrder(w) }));
  }

  /** Deletes the target and takes it out of every execution (an execution left without targets goes too). */
  async deleteTarget(instanceId: string, id: string, at: Date): Promise<boolean> {
    const { count } = await this.db.actionTarget.deleteMany({ where: { instanceId, id } });
    if (count === 0) return false;
    await this.db.delivery.deleteMany({ where: { instanceId, targetId: id } });
    const byEvent = await this.db.actionEventExecution.findMany({ where: { instanceId, targetIds: { has: id } } });
    for (const e of byEvent) {
      const key = { instanceId_orgId_condition: { instanceId, orgId: e.orgId, condition: e.condition } };
      const targetIds = e.targetIds.filter((t) => t !== id);
      if (targetIds.length === 0) await this.db.actionEventExecution.delete({ where: key });
      else await this.db.actionEventExecution.update({ where: key, data: { targetIds, updatedAt: at } });
    }
    const holding = await this.db.actionExecution.findMany({ where: { instanceId, targetIds: { has: id } } });
    for (const e of holding) {
      const targetIds = e.targetIds.filter((t) => t !== id);
      if (targetIds.length === 0) await this.db.actionExecution.delete({ where: { instanceId_function: { instanceId, function: e.function } } });
      else await this.db.actionExecution.update({ where: { instanceId_function: { instanceId, function: e.function } }, data: { targetIds, updatedAt: at } });
    }
    return true;
  }

  /** Sets a function's targets (none: removes its execution); whether an execution existed before. */
  async setExecution(instanceId: string, fn: string, targetIds: string[], at: Date): Promise<void> {
    const key = { instanceId_function: { instanceId, function: fn } };
    if (targetIds.length === 0) {
      await this.db.actionExecution.deleteMany({ where: { instanceId, function: fn } });
      return;
    }
    await this.db.actionExecution.upsert({
      where: key,
      create: { instanceId, function: fn, targetIds, createdAt: at, updatedAt: at },
      update: { targetIds, updatedAt: at },
    });
  }

  executions(instanceId: string): Promise<ExecutionRow[]> {
    return this.db.actionExecution.findMany({
      where: { instanceId },
      orderBy: { function: "asc" },
      select: { function: true, targetIds: true, createdAt: true, updatedAt: true },
    });
  }

  /** Sets the targets of an event condition (of an organization, or "" for the instance's); none removes it. */
  async setEventExecution(instanceId: string, orgId: string, condition: string, targetIds: string[], at: Date): Promise<void> {
    if (targetIds.length === 0) {
      await this.db.actionEventExecution.deleteMany({ where: { instanceId, orgId, condition } });
      return;
    }
    await this.db.actionEventExecution.upsert({
      where: { instanceId_orgId_condition: { instanceId, orgId, condition } },
      create: { instanceId, orgId, condition, targetIds, createdAt: at, updatedAt: at },
      update: { targetIds, updatedAt: at },
    });
  }

  /** The event executions of the instance, or (orgIds) those of these organizations only. */
  eventExecutions(instanceId: string, orgIds?: readonly string[]): Promise<EventExecutionRow[]> {
    return this.db.actionEventExecution.findMany({
      where: { instanceId, ...(orgIds ? { orgId: { in: [...orgIds] } } : {}) },
      orderBy: [{ orgId: "asc" }, { condition: "asc" }],
      select: { orgId: true, condition: true, targetIds: true, createdAt: true, updatedAt: true },
    });
  }

  /** The organization of each of `ids` that exists in the instance (null: the instance's). */
  async targetOrgs(instanceId: string, ids: string[]): Promise<Map<string, string | null>> {
    const rows = await this.db.actionTarget.findMany({ where: { instanceId, id: { in: ids } }, select: { id: true, orgId: true } });
    return new Map(rows.map((r) => [r.id, r.orgId]));
  }

  /** The targets of the instance's executions, for the runtime's cache. */
  targetsOfExecutions(instanceId: string, ids: string[]): Promise<TargetRow[]> {
    return this.db.actionTarget.findMany({ where: { instanceId, id: { in: ids } } });
  }

  async sealedKeys(instanceId: string): Promise<{ id: string; sealed: Uint8Array }[]> {
    const rows = await this.db.actionTarget.findMany({ where: { instanceId }, select: { id: true, signingKeyEnc: true } });
    return rows.map((r) => ({ id: r.id, sealed: r.signingKeyEnc }));
  }

  async newestSealedKey(instanceId: string): Promise<{ id: string; sealed: Uint8Array } | null> {
    const r = await this.db.actionTarget.findFirst({ where: { instanceId }, orderBy: { createdAt: "desc" }, select: { id: true, signingKeyEnc: true } });
    return r && { id: r.id, sealed: r.signingKeyEnc };
  }

  async resealKey(id: string, sealed: Uint8Array<ArrayBuffer>): Promise<void> {
    await this.db.actionTarget.update({ where: { id }, data: { signingKeyEnc: sealed } });
  }
}
