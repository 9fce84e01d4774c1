// Deactivating and reactivating a resource (application, project, project
// grant, user grant), all the same way: one transaction whose conditional
// update lets only one of two concurrent moves succeed, FailedPrecondition for
// a move to the state the resource is already in, then the invalidation of
// what cached authentication derived from it, and the audit event.

import type { Store } from "../../store/index.js";
import type { EventInput } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";
import { commit } from "./command.js";

export type ActiveState = "ACTIVE" | "INACTIVE";

export interface StateMove {
  /** Moves the row to `state` unless it is there already; whether it moved. */
  update(tx: Store, state: ActiveState, updatedAt: Date): Promise<boolean>;
  /** Run when nothing changed, to throw NotFound for a row deleted meanwhile instead of FailedPrecondition. */
  checkExists?(tx: Store): Promise<void>;
  /** The FailedPrecondition message ids, and what the messages call the resource. */
  errors: { alreadyInactive: string; notInactive: string; noun: string };
  invalidate(tx: Store): Promise<void>;
  /** The event of the move (its type ends in `.deactivated` or `.reactivated`). */
  event(moved: "deactivated" | "reactivated"): EventInput;
}

/** Moves the resource to `state`; returns the change date. */
export function changeState(ctx: Ctx, state: ActiveState, move: StateMove): Promise<Date> {
  return commit(ctx, async (tx, now) => {
    if (!(await move.update(tx, state, now))) {
      await move.checkExists?.(tx);
      const { alreadyInactive, notInactive, noun } = move.errors;
      throw state === "INACTIVE"
        ? failedPrecondition(alreadyInactive, `the ${noun} is already deactivated`)
        : failedPrecondition(notInactive, `the ${noun} is not deactivated`);
    }
    await move.invalidate(tx);
    return move.event(state === "INACTIVE" ? "deactivated" : "reactivated");
  });
}
