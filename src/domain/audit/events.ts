import { Store } from "../../store/index.js";
import type { Ctx, Tx } from "../context.js";
import { newId } from "../ids.js";

export interface EventInput {
  aggregateType: string;
  aggregateId: string;
  type: string;
  orgId?: string | null;
  /** Never secrets: token values, password hashes and keys stay out. */
  payload?: Record<string, unknown>;
}

/** The event row of a change made by the context's principal. */
export function eventRow(ctx: Pick<Ctx, "instanceId" | "clock"> & { principal: { userId: string } | null }, e: EventInput) {
  return {
    id: newId(),
    instanceId: ctx.instanceId,
    orgId: e.orgId ?? null,
    aggregateType: e.aggregateType,
    aggregateId: e.aggregateId,
    type: e.type,
    editorUserId: ctx.principal?.userId ?? null,
    payload: e.payload ?? {},
    createdAt: ctx.clock(),
  };
}

/** Writes an audit event inside the transaction of the change it records (`tx` a transaction's Store). */
export async function recordEvent(ctx: Ctx, tx: Store | Tx, e: EventInput): Promise<void> {
  const store = tx instanceof Store ? tx : new Store(tx as never, tx, true);
  await store.events.append(eventRow(ctx, e));
}
