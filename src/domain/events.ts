import type { Ctx, Tx } from "./context.js";
import { newId } from "./ids.js";

export interface EventInput {
  aggregateType: string;
  aggregateId: string;
  type: string;
  orgId?: string | null;
  /** Never secrets: token values, password hashes and keys stay out. */
  payload?: Record<string, unknown>;
}

/** Writes an audit event inside the transaction of the change it records. */
export async function recordEvent(ctx: Ctx, tx: Tx, e: EventInput): Promise<void> {
  await tx.event.create({
    data: {
      id: newId(),
      instanceId: ctx.instanceId,
      orgId: e.orgId ?? null,
      aggregateType: e.aggregateType,
      aggregateId: e.aggregateId,
      type: e.type,
      editorUserId: ctx.principal.userId,
      payload: (e.payload ?? {}) as object,
      createdAt: ctx.clock(),
    },
  });
}
