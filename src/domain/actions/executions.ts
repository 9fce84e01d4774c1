// Executions: which targets a function calls (the instance's administrators'), and which targets an event condition
// sends its events to (webhooks, through the outbox): one event type (`user.human.added`), a group (`user.*`) or every
// event. An instance administrator binds any target to the instance's events (every organization's); an organization's
// owner binds that organization's own targets to that organization's events only.
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { existingOrg, orgNotFound } from "../orgs/orgs.js";
import { ACTION_FUNCTIONS, type ActionFunction } from "./functions.js";
import { actionScope, authorizeActions, scopeTo } from "./targets.js";

/** Targets one function or event condition may call. */
export const MAX_TARGETS_PER_EXECUTION = 10;
const MAX_CONDITION = 200;
const EVENT_TYPE = /^[a-z0-9_]+(\.[a-z0-9_]+)*$/;

/** One of: an event type, a group (the types under a prefix, `user` or `user.*`), every event. */
export type EventCondition = { event: string } | { group: string } | { all: true };

export interface ExecutionView {
  /** A function's execution, or an event condition's: "user.human.added", "user.*", "*". */
  function?: ActionFunction;
  event?: string;
  /** The organization whose events (null: the instance's, every organization's). */
  orgId: string | null;
  targetIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

function checkedFunction(fn: string): ActionFunction {
  if (!(ACTION_FUNCTIONS as readonly string[]).includes(fn)) {
    throw invalidArgument("Errors.Action.Execution.Function.Invalid", `function must be one of ${ACTION_FUNCTIONS.join(", ")}`, { field: "function" });
  }
  return fn as ActionFunction;
}

/** The stored form of a condition: the type, `prefix.*`, or `*`. */
export function conditionKey(c: EventCondition): string {
  const bad = (field: string) =>
    invalidArgument("Errors.Action.Execution.Event.Invalid", "an event type is lower-case words joined by dots (user.human.added), at most 200 characters", {
      field,
    });
  if ("all" in c) return "*";
  if ("group" in c) {
    const prefix = c.group.endsWith(".*") ? c.group.slice(0, -2) : c.group;
    if (prefix.length > MAX_CONDITION || !EVENT_TYPE.test(prefix)) throw bad("event.group");
    return `${prefix}.*`;
  }
  if (c.event.length > MAX_CONDITION || !EVENT_TYPE.test(c.event)) throw bad("event.event");
  return c.event;
}

/** Whether a stored condition matches an event type. */
export function conditionMatches(condition: string, type: string): boolean {
  if (condition === "*") return true;
  if (condition.endsWith(".*")) return type.startsWith(condition.slice(0, -1));
  return condition === type;
}

function checkedTargets(targetIds: string[]): void {
  if (new Set(targetIds).size !== targetIds.length) {
    throw invalidArgument("Errors.Action.Execution.Targets.Duplicate", "each target may be named once", { field: "target_ids" });
  }
  if (targetIds.length > MAX_TARGETS_PER_EXECUTION) {
    throw invalidArgument("Errors.Action.Execution.Targets.TooMany", `at most ${MAX_TARGETS_PER_EXECUTION} targets per execution`, { field: "target_ids" });
  }
}

export interface ExecutionInput {
  function?: string;
  event?: EventCondition;
  /** Event conditions only: the organization whose events ("" or unset: the instance's). */
  orgId?: string;
  targetIds: string[];
}

export async function setExecution(ctx: Ctx, input: ExecutionInput): Promise<Date> {
  if (input.event) return setEventExecution(ctx, input.event, input.orgId || null, input.targetIds);
  if (input.orgId) throw invalidArgument("Errors.Action.Execution.Function.Org", "a function's execution is the instance's", { field: "organization_id" });
  authorizeActions(ctx, "write", null);
  const name = checkedFunction(input.function ?? "");
  const { targetIds } = input;
  checkedTargets(targetIds);
  return commit(ctx, async (tx, now) => {
    // Checked in the transaction: a target deleted meanwhile is not named.
    const found = new Set(await tx.actions.existingTargetIds(ctx.instanceId, targetIds));
    const missing = targetIds.find((t) => !found.has(t));
    if (missing !== undefined) throw notFound("Errors.Action.Target.NotFound", `target ${missing} not found`);
    await tx.actions.setExecution(ctx.instanceId, name, targetIds, now);
    await tx.auth.invalidate({ keys: true });
    return {
      aggregateType: "action_execution",
      aggregateId: name,
      type: targetIds.length ? "action.execution.set" : "action.execution.removed",
      payload: { targetIds },
    };
  });
}

async function setEventExecution(ctx: Ctx, event: EventCondition, orgId: string | null, targetIds: string[]): Promise<Date> {
  authorizeActions(ctx, "write", orgId, orgNotFound);
  if (orgId) await existingOrg(ctx, orgId);
  const condition = conditionKey(event);
  checkedTargets(targetIds);
  return commit(ctx, async (tx, now) => {
    // An organization's events go to that organization's own targets only; the instance's to any.
    const orgs = await tx.actions.targetOrgs(ctx.instanceId, targetIds);
    const missing = targetIds.find((t) => !orgs.has(t) || (orgId !== null && orgs.get(t) !== orgId));
    if (missing !== undefined) throw notFound("Errors.Action.Target.NotFound", `target ${missing} not found`);
    await tx.actions.setEventExecution(ctx.instanceId, orgId ?? "", condition, targetIds, now);
    await tx.auth.invalidate({ keys: true });
    return {
      aggregateType: "action_execution",
      aggregateId: `event:${condition}`,
      orgId,
      type: targetIds.length ? "action.execution.set" : "action.execution.removed",
      payload: { event: condition, targetIds },
    };
  });
}

/**
 * The functions' executions (for those who may read the instance's actions) and the event executions in scope; with
 * `orgId`, only that organization's event executions.
 */
export async function listExecutions(ctx: Ctx, orgId?: string): Promise<ExecutionView[]> {
  const scope = scopeTo(actionScope(ctx), orgId);
  const functions = scope
    ? []
    : (await ctx.store.actions.executions(ctx.instanceId))
        .filter((r) => (ACTION_FUNCTIONS as readonly string[]).includes(r.function))
        .map((r) => ({ ...r, function: r.function as ActionFunction, orgId: null }));
  const events = (await ctx.store.actions.eventExecutions(ctx.instanceId, scope)).map((r) => ({
    event: r.condition,
    orgId: r.orgId || null,
    targetIds: r.targetIds,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  }));
  return [...functions, ...events];
}

export function listExecutionFunctions(ctx: Ctx): readonly ActionFunction[] {
  actionScope(ctx);
  return ACTION_FUNCTIONS;
}
