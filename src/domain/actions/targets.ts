// Actions, administered: targets (the endpoints svc calls, each with a signing key shown once and sealed at rest) and
// executions (which targets a function calls, in order). Instance-wide: IAM_OWNER's alone (iam.action.*). Every write
// drops the runtimes' cached executions, on every replica (the signing-key invalidation).
import { randomBytes } from "node:crypto";
import { actionTargetAad } from "../../crypto/sealer.js";
import type { TargetChange, TargetRow } from "../../store/actions.js";
import { authorize } from "../access/permissions.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { authnSettings } from "../identity/authn/access.js";
import { newId } from "../ids.js";
import { type ListTotal, type Page, page } from "../list.js";
import { ACTION_FUNCTIONS, type ActionFunction } from "./functions.js";

export const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 30_000;
const MAX_NAME = 200;
const MAX_ENDPOINT = 2_000;
/** Targets one function may call. */
export const MAX_TARGETS_PER_EXECUTION = 10;

export interface TargetInput {
  name?: string;
  endpoint?: string;
  timeoutMs?: number;
  interruptOnError?: boolean;
}

export interface TargetView {
  id: string;
  name: string;
  endpoint: string;
  timeoutMs: number;
  interruptOnError: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface ExecutionView {
  function: ActionFunction;
  targetIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

const targetNotFound = () => notFound("Errors.Action.Target.NotFound", "target not found");
const view = (r: TargetRow): TargetView => ({
  id: r.id,
  name: r.name,
  endpoint: r.endpoint,
  timeoutMs: r.timeoutMs,
  interruptOnError: r.interruptOnError,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});
const event = (id: string, type: string, payload: Record<string, unknown> = {}) => ({ aggregateType: "action_target", aggregateId: id, type, payload });

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether a host name is a loopback one (localhost, 127.0.0.0/8, [::1]). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.has(hostname) || hostname.endsWith(".localhost") || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * An endpoint svc may call: an absolute https URL, or http on a loopback host (what travels to a target is personal
 * data: never in clear over a network), without credentials or a fragment.
 */
function checkedEndpoint(endpoint: string): string {
  const field = { field: "endpoint" };
  if (!endpoint) throw invalidArgument("Errors.Action.Target.Endpoint.Missing", "endpoint is required", field);
  if (endpoint.length > MAX_ENDPOINT || !URL.canParse(endpoint)) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must be an absolute URL", field);
  }
  const url = new URL(endpoint);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must be https (http only on a loopback host)", field);
  }
  if (url.username || url.password || url.hash) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must not carry credentials or a fragment", field);
  }
  return url.href;
}

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw invalidArgument("Errors.Action.Target.Name.Missing", "name is required", { field: "name" });
  if (trimmed.length > MAX_NAME) throw invalidArgument("Errors.Action.Target.Name.Invalid", `name must be at most ${MAX_NAME} characters`, { field: "name" });
  return trimmed;
}

function checkedTimeout(ms: number): number {
  if (!Number.isInteger(ms) || ms < 1_000 || ms > MAX_TIMEOUT_MS) {
    throw invalidArgument("Errors.Action.Target.Timeout.Invalid", "timeout must be between 1 and 30 seconds, in whole milliseconds", { field: "timeout" });
  }
  return ms;
}

/** A new signing key: 32 random bytes, handed out base64url once. */
function newSigningKey(ctx: Ctx, id: string): { key: string; sealed: Uint8Array } {
  const raw = randomBytes(32);
  return { key: raw.toString("base64url"), sealed: authnSettings(ctx).sealer.seal(raw, actionTargetAad(ctx.instanceId, id)) };
}

export async function createTarget(ctx: Ctx, input: Required<TargetInput>): Promise<{ id: string; at: Date; signingKey: string }> {
  authorize(ctx, "iam.action.write", null);
  const name = checkedName(input.name);
  const endpoint = checkedEndpoint(input.endpoint);
  const timeoutMs = checkedTimeout(input.timeoutMs);
  const id = newId();
  const { key, sealed } = newSigningKey(ctx, id);
  const at = await commit(ctx, async (tx, now) => {
    await tx.actions.insertTarget({
      id,
      instanceId: ctx.instanceId,
      name,
      endpoint,
      timeoutMs,
      interruptOnError: input.interruptOnError,
      signingKeyEnc: sealed,
      createdAt: now,
      updatedAt: now,
    });
    return event(id, "action.target.added", { name, endpoint });
  });
  return { id, at, signingKey: key };
}

async function targetFor(ctx: Ctx, id: string, permission: "iam.action.read" | "iam.action.write"): Promise<TargetRow> {
  authorize(ctx, permission, null);
  if (!id) throw invalidArgument("Errors.Action.Target.Id.Missing", "id is required", { field: "id" });
  const row = await ctx.store.actions.findTarget(ctx.instanceId, id);
  if (!row) throw targetNotFound();
  return row;
}

export async function updateTarget(ctx: Ctx, id: string, input: TargetInput, rotateKey: boolean): Promise<{ at: Date; signingKey?: string }> {
  await targetFor(ctx, id, "iam.action.write");
  const change: Omit<TargetChange, "updatedAt"> = {};
  if (input.name !== undefined) change.name = checkedName(input.name);
  if (input.endpoint !== undefined) change.endpoint = checkedEndpoint(input.endpoint);
  if (input.timeoutMs !== undefined) change.timeoutMs = checkedTimeout(input.timeoutMs);
  if (input.interruptOnError !== undefined) change.interruptOnError = input.interruptOnError;
  const rotated = rotateKey ? newSigningKey(ctx, id) : undefined;
  if (rotated) change.signingKeyEnc = rotated.sealed;
  const at = await commit(ctx, async (tx, now) => {
    if (!(await tx.actions.updateTarget(ctx.instanceId, id, { ...change, updatedAt: now }))) throw targetNotFound();
    await tx.auth.invalidate({ keys: true });
    const { signingKeyEnc: _sealed, ...shown } = change;
    return event(id, "action.target.changed", { ...shown, keyRotated: Boolean(rotated) });
  });
  return { at, ...(rotated ? { signingKey: rotated.key } : {}) };
}

export async function deleteTarget(ctx: Ctx, id: string): Promise<Date> {
  const row = await targetFor(ctx, id, "iam.action.write");
  return commit(ctx, async (tx, now) => {
    if (!(await tx.actions.deleteTarget(ctx.instanceId, id, now))) throw targetNotFound();
    await tx.auth.invalidate({ keys: true });
    return event(id, "action.target.removed", { name: row.name });
  });
}

export async function getTarget(ctx: Ctx, id: string): Promise<TargetView> {
  return view(await targetFor(ctx, id, "iam.action.read"));
}

export async function listTargets(ctx: Ctx, window: Page = page(undefined)): Promise<ListTotal & { targets: TargetView[] }> {
  authorize(ctx, "iam.action.read", null);
  const { rows, ...total } = await ctx.store.actions.pageTargets(ctx.instanceId, window);
  return { ...total, targets: rows.map(view) };
}

function checkedFunction(fn: string): ActionFunction {
  if (!(ACTION_FUNCTIONS as readonly string[]).includes(fn)) {
    throw invalidArgument("Errors.Action.Execution.Function.Invalid", `function must be one of ${ACTION_FUNCTIONS.join(", ")}`, { field: "function" });
  }
  return fn as ActionFunction;
}

export async function setExecution(ctx: Ctx, fn: string, targetIds: string[]): Promise<Date> {
  authorize(ctx, "iam.action.write", null);
  const name = checkedFunction(fn);
  if (new Set(targetIds).size !== targetIds.length) {
    throw invalidArgument("Errors.Action.Execution.Targets.Duplicate", "each target may be named once", { field: "target_ids" });
  }
  if (targetIds.length > MAX_TARGETS_PER_EXECUTION) {
    throw invalidArgument("Errors.Action.Execution.Targets.TooMany", `at most ${MAX_TARGETS_PER_EXECUTION} targets per function`, { field: "target_ids" });
  }
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

export async function listExecutions(ctx: Ctx): Promise<ExecutionView[]> {
  authorize(ctx, "iam.action.read", null);
  const rows = await ctx.store.actions.executions(ctx.instanceId);
  return rows.filter((r) => (ACTION_FUNCTIONS as readonly string[]).includes(r.function)).map((r) => ({ ...r, function: r.function as ActionFunction }));
}

export function listExecutionFunctions(ctx: Ctx): readonly ActionFunction[] {
  authorize(ctx, "iam.action.read", null);
  return ACTION_FUNCTIONS;
}
