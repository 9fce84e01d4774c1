// ActionService: proto ⇄ domain only; the rules are in src/domain/actions/.
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ActionService } from "../../gen/svc/action/v2/action_service_pb.js";
import {
  createTarget,
  DEFAULT_TIMEOUT_MS,
  deleteTarget,
  getTarget,
  listExecutionFunctions,
  listExecutions,
  listTargets,
  setExecution,
  type TargetView,
  updateTarget,
} from "../domain/actions/targets.js";
import { invalidArgument } from "../domain/errors.js";
import { page } from "../domain/list.js";
import { ctxOf } from "./connect.js";
import { changed, deleted, details, listDetails, listPage, ts } from "./convert.js";

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
    details: details(t, instanceId),
    name: t.name,
    endpoint: t.endpoint,
    timeout: { seconds: BigInt(Math.floor(t.timeoutMs / 1000)), nanos: (t.timeoutMs % 1000) * 1e6 },
    interruptOnError: t.interruptOnError,
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
      return { target: toTarget(await getTarget(ctx, req.id), ctx.instanceId) };
    },
    async listTargets(req, hctx) {
      const ctx = ctxOf(hctx);
      const out = await listTargets(ctx, page(listPage(req.query)));
      return { details: listDetails(ctx, out), result: out.targets.map((t) => toTarget(t, ctx.instanceId)) };
    },
    async setExecution(req, hctx) {
      return { setDate: ts(await setExecution(ctxOf(hctx), req.function, req.targetIds)) };
    },
    async listExecutions(_req, hctx) {
      const ctx = ctxOf(hctx);
      const rows = await listExecutions(ctx);
      return { result: rows.map((e) => ({ function: e.function, targetIds: e.targetIds, details: details(e, ctx.instanceId) })) };
    },
    async listExecutionFunctions(_req, hctx) {
      return { functions: [...listExecutionFunctions(ctxOf(hctx))] };
    },
  };
}
