// ActionService: proto ⇄ domain only; the rules are in src/domain/actions/.
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EventCondition as EventConditionMsg } from "../../gen/svc/action/v2/action_pb.js";
import { TargetKind } from "../../gen/svc/action/v2/action_pb.js";
import type { ActionService } from "../../gen/svc/action/v2/action_service_pb.js";
import { DELIVERY_STATES, type DeliveryView, listDeliveries, retryDelivery } from "../domain/actions/deliveries.js";
import { type EventCondition, type ExecutionView, listExecutionFunctions, listExecutions, setExecution } from "../domain/actions/executions.js";
import {
  createTarget,
  DEFAULT_TIMEOUT_MS,
  deleteTarget,
  getTarget,
  type TargetKind as Kind,
  listTargets,
  type TargetView,
  updateTarget,
} from "../domain/actions/targets.js";
import { invalidArgument } from "../domain/errors.js";
import { page } from "../domain/list.js";
import { ctxOf } from "./connect.js";
import { changed, dateOpt, deleted, details, listDetails, listPage, ts } from "./convert.js";

const KINDS: Record<TargetKind, Kind> = {
  [TargetKind.UNSPECIFIED]: "call",
  [TargetKind.CALL]: "call",
  [TargetKind.WEBHOOK]: "webhook",
  [TargetKind.ASYNC]: "async",
};
const KIND_OF: Record<Kind, TargetKind> = { call: TargetKind.CALL, webhook: TargetKind.WEBHOOK, async: TargetKind.ASYNC };

function kindOf(k: TargetKind): Kind {
  const kind = KINDS[k];
  if (!kind)
    throw invalidArgument("Errors.Action.Target.Kind.Invalid", "kind must be TARGET_KIND_CALL, TARGET_KIND_WEBHOOK or TARGET_KIND_ASYNC", { field: "kind" });
  return kind;
}

function conditionOf(e: EventConditionMsg | undefined): EventCondition | undefined {
  const c = e?.condition;
  if (!c?.case) return undefined;
  if (c.case === "event") return { event: c.value };
  if (c.case === "group") return { group: c.value };
  if (!c.value) throw invalidArgument("Errors.Action.Execution.Event.Invalid", "event.all must be true when set", { field: "event.all" });
  return { all: true };
}

function eventMsg(condition: string) {
  if (condition === "*") return { condition: { case: "all" as const, value: true } };
  if (condition.endsWith(".*")) return { condition: { case: "group" as const, value: condition } };
  return { condition: { case: "event" as const, value: condition } };
}

function toExecution(e: ExecutionView, instanceId: string) {
  return {
    function: e.function ?? "",
    targetIds: e.targetIds,
    details: details(e, e.orgId ?? instanceId),
    organizationId: e.orgId ?? "",
    ...(e.event ? { event: eventMsg(e.event) } : {}),
  };
}

function toDelivery(d: DeliveryView) {
  return {
    id: d.id,
    targetId: d.targetId,
    eventType: d.eventType,
    eventId: d.eventId,
    state: d.state,
    attempts: d.attempts,
    maxAttempts: d.maxAttempts,
    nextAttemptDate: ts(d.nextAttemptAt),
    lastError: d.lastError ?? "",
    creationDate: ts(d.createdAt),
    changeDate: ts(d.updatedAt),
  };
}

function stateOf(state: string) {
  if (!state) return undefined;
  if (!(DELIVERY_STATES as readonly string[]).includes(state)) {
    throw invalidArgument("Errors.Action.Delivery.State.Invalid", `state must be one of ${DELIVERY_STATES.join(", ")}`, { field: "state" });
  }
  return state as (typeof DELIVERY_STATES)[number];
}

/** A Duration as whole milliseconds; refused when negative or not a whole number of them. */
function millis(d: Duration): number {
  const ms = Number(d.seconds) * 1000 + d.nanos / 1e6;
  if (!Number.isSafeInteger(ms) || d.nanos < 0 || d.seconds < 0n)
    throw invalidArgument("Errors.Action.Target.Timeout.Invalid", "timeout must be whole milliseconds, between 1 and 30 seconds", { field: "timeout" });
  return ms;
}

function toTarget(t: TargetView, instanceId: string) {
  return {
    id: t.id,
    details: details(t, t.orgId ?? instanceId),
    name: t.name,
    endpoint: t.endpoint,
    timeout: { seconds: BigInt(Math.floor(t.timeoutMs / 1000)), nanos: (t.timeoutMs % 1000) * 1e6 },
    interruptOnError: t.interruptOnError,
    kind: KIND_OF[t.kind],
    organizationId: t.orgId ?? "",
  };
}

export function actionService(): ServiceImpl<typeof ActionService> {
  return {
    async createTarget(req, hctx) {
      const out = await createTarget(ctxOf(hctx), {
        name: req.name,
        endpoint: req.endpoint,
        timeoutMs: req.timeout ? millis(req.timeout) : DEFAULT_TIMEOUT_MS,
        interruptOnError: req.interruptOnError,
        kind: kindOf(req.kind),
        orgId: req.organizationId,
      });
      return { id: out.id, creationDate: ts(out.at), signingKey: out.signingKey };
    },
    async updateTarget(req, hctx) {
      const out = await updateTarget(
        ctxOf(hctx),
        req.id,
        {
          ...(req.name !== undefined ? { name: req.name } : {}),
          ...(req.endpoint !== undefined ? { endpoint: req.endpoint } : {}),
          ...(req.timeout !== undefined ? { timeoutMs: millis(req.timeout) } : {}),
          ...(req.interruptOnError !== undefined ? { interruptOnError: req.interruptOnError } : {}),
          ...(req.kind !== undefined ? { kind: kindOf(req.kind) } : {}),
        },
        req.rotateSigningKey,
      );
      return { ...changed(out.at), signingKey: out.signingKey ?? "" };
    },
    async deleteTarget(req, hctx) {
      return deleted(await deleteTarget(ctxOf(hctx), req.id));
    },
    async getTarget(req, hctx) {
      const ctx = ctxOf(hctx);
      const target = await getTarget(ctx, req.id);
      return { target: toTarget(target, ctx.instanceId), recentFailures: target.recentFailures };
    },
    async listTargets(req, hctx) {
      const ctx = ctxOf(hctx);
      const out = await listTargets(ctx, page(listPage(req.query)), req.organizationId || undefined);
      return { details: listDetails(ctx, out), result: out.targets.map((t) => toTarget(t, ctx.instanceId)) };
    },
    async setExecution(req, hctx) {
      const event = conditionOf(req.event);
      const input = event
        ? { event, orgId: req.organizationId, targetIds: req.targetIds }
        : { function: req.function, orgId: req.organizationId, targetIds: req.targetIds };
      return { setDate: ts(await setExecution(ctxOf(hctx), input)) };
    },
    async listExecutions(req, hctx) {
      const ctx = ctxOf(hctx);
      const rows = await listExecutions(ctx, req.organizationId || undefined);
      return { result: rows.map((e) => toExecution(e, ctx.instanceId)) };
    },
    async listExecutionFunctions(_req, hctx) {
      return { functions: [...listExecutionFunctions(ctxOf(hctx))] };
    },
    async listDeliveries(req, hctx) {
      const ctx = ctxOf(hctx);
      const { deliveries, ...total } = await listDeliveries(ctx, {
        page: listPage(req.query),
        filter: {
          targetId: req.targetId || undefined,
          eventType: req.eventType || undefined,
          state: stateOf(req.state),
          from: dateOpt(req.from, "from"),
          to: dateOpt(req.to, "to"),
          orgId: req.organizationId || undefined,
        },
      });
      return { details: listDetails(ctx, total), result: deliveries.map(toDelivery) };
    },
    async retryDelivery(req, hctx) {
      return { retryDate: ts(await retryDelivery(ctxOf(hctx), req.id)) };
    },
  };
}
