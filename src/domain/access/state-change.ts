// Deactivating and reactivating a resource (application, project, project
// grant, user grant), all the same way: one transaction whose conditional
// update lets only one of two concurrent moves succeed, FailedPrecondition for
// a move to the state the resource is already in, then the invalidation of
// what cached authentication derived from it, and the audit event.

import type { Store } from "../../store/index.js";
import { type EventInput, recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";

export type ActiveState = "ACTIVE" | "INACTIVE";

export interface StateMove {
  /** Updates the row unless it is in `data.state` already, returning how many rows changed. */
  update(tx: Store, data: { state: ActiveState; updatedAt: Date }): Promise<{ count: number }>;
  /** Run when nothing changed, to throw NotFound for a row deleted meanwhile instead of FailedPrecondition. */
  checkExists?(tx: Store): Promise<void>;
  /** The FailedPrecondition message ids, and what the messages call the resource. */
  errors: { alreadyInactive: string; notInactive: string; noun: string };
  invalidate(tx: Store): Promise<void>;
  /** The event; its type is `<eventType>.deactivated` or `<eventType>.reactivated`. */
  event: Omit<EventInput, "type"> & { eventType: string };
}

/** Moves the resource to `state`; returns the change date. */
export async function changeState(ctx: Ctx, state: ActiveState, move: StateMove): Promise<Date> {
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await move.update(tx, { state, updatedAt: now });
    if (count === 0) {
      await move.checkExists?.(tx);
      const { alreadyInactive, notInactive, noun } = move.errors;
      throw state === "INACTIVE"
        ? failedPrecondition(alreadyInactive, `the ${noun} is already deactivated`)
        : failedPrecondition(notInactive, `the ${noun} is not deactivated`);
    }
    await move.invalidate(tx);
    const { eventType, ...event } = move.event;
    await recordEvent(ctx, tx, { ...event, type: `${eventType}.${state === "INACTIVE" ? "deactivated" : "reactivated"}` });
  });
  return now;
}
