import type { Store } from "../../store/index.js";
import type { Ctx } from "../context.js";
import { newId } from "../ids.js";

export interface EventInput {
  aggregateType: string;
  aggregateId: string;
  type: string;
  orgId?: string | null;
  /** Never secrets: token values, password hashes and keys stay out. */
  payload?: Record<string, unknown>;
}

/** The event row of a change made by the context's principal (svc's own actions: request-context.ts systemActor). */
export function eventRow(ctx: Pick<Ctx, "instanceId" | "clock"> & { principal: { userId: string } }, e: EventInput) {
  return {
    id: newId(),
    instanceId: ctx.instanceId,
    orgId: e.orgId ?? null,
    aggregateType: e.aggregateType,
    aggregateId: e.aggregateId,
    type: e.type,
    editorUserId: ctx.principal.userId,
    payload: e.payload ?? {},
    createdAt: ctx.clock(),
  };
}

/** Writes an audit event inside the transaction of the change it records (`tx` the transaction's Store). */
export async function recordEvent(ctx: Ctx, tx: Store, e: EventInput): Promise<void> {
  await tx.events.append(eventRow(ctx, e));
}

/** The event of a change to a user (credentials, state, profile, metadata): the user's own organization holds it. */
export function userEvent(user: { id: string; orgId: string }, type: string, payload?: Record<string, unknown>): EventInput {
  return { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type, ...(payload ? { payload } : {}) };
}

/**
 * What a command does once it has loaded its target and checked the caller's permission on it (each command does
 * that itself, in the open): one transaction that writes, drops what cached authentication derived from the change,
 * and records the audit event `write` returns, last. The change date (`at`, or now) is the answer.
 */
export async function commit(ctx: Ctx, write: (tx: Store, now: Date) => Promise<EventInput>, at: Date = ctx.clock()): Promise<Date> {
  await ctx.store.transaction(async (tx) => {
    const event = await write(tx, at);
    await recordEvent(ctx, tx, event);
  });
  return at;
}
