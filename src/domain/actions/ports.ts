// What the domain asks of the actions' runtime (src/actions/runner.ts): whether a function has targets, and calling
// them.
import { DomainError } from "../errors.js";
import type { ActionFunction, TargetAnswer } from "./functions.js";

export interface ActionTargets {
  /** Whether `fn` has targets (a cheap check before building what they would be sent). */
  has(fn: ActionFunction): Promise<boolean>;
  /**
   * Calls `fn`'s targets in order with `payload`; `next` turns an answer into the payload of the following target.
   * Resolves with the answers of the targets that answered; rejects with targetFailed when one marked
   * interrupt_on_error did not.
   */
  call(
    fn: ActionFunction,
    payload: Record<string, unknown>,
    next?: (payload: Record<string, unknown>, answer: TargetAnswer) => Record<string, unknown>,
  ): Promise<TargetAnswer[]>;
}

export const targetFailed = (name: string) =>
  new DomainError("Unavailable", "Errors.Action.Target.Failed", `the action target ${name} did not answer as it must`);
