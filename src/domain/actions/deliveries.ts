// The deliveries of events to action targets (the outbox, src/store/outbox.ts): listed, and a dead one tried again.
// Those of an organization's targets are its owners' to see and retry; those of the instance's targets, the instance
// administrators'.
import type { DeliveryRow, DeliveryState } from "../../store/outbox.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { actionScope, authorizeActions, scopeTo } from "./targets.js";

export const DELIVERY_STATES = ["pending", "failed", "delivered", "dead"] as const;

export interface DeliveryFilterInput {
  targetId?: string;
  eventType?: string;
  state?: DeliveryState;
  from?: Date;
  to?: Date;
  /** Only the deliveries to this organization's targets. */
  orgId?: string;
}

export interface DeliveryView {
  id: string;
  targetId: string;
  eventType: string;
  /** The event's id. */
  eventId: string;
  state: DeliveryState;
  attempts: number;
  maxAttempts: number;
  /** When it is tried (again); for a delivered or dead one, when it ended. */
  nextAttemptAt: Date;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const deliveryNotFound = () => notFound("Errors.Action.Delivery.NotFound", "delivery not found");
const MAX_TEXT = 200;

const view = (r: DeliveryRow): DeliveryView => ({
  id: r.id,
  targetId: r.targetId,
  eventType: r.eventType,
  eventId: String(r.payload.id ?? ""),
  state: r.state,
  attempts: r.attempts,
  maxAttempts: r.maxAttempts,
  nextAttemptAt: r.nextAttemptAt,
  lastError: r.lastError,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

export async function listDeliveries(ctx: Ctx, input: { page?: PageInput; filter: DeliveryFilterInput }): Promise<ListTotal & { deliveries: DeliveryView[] }> {
  const { orgId, ...f } = input.filter;
  const scope = scopeTo(actionScope(ctx), orgId);
  for (const [field, value] of [
    ["target_id", f.targetId],
    ["event_type", f.eventType],
    ["organization_id", orgId],
  ] as const) {
    if (value && value.length > MAX_TEXT)
      throw invalidArgument("Errors.Action.Delivery.Filter.TooLong", `${field} must be at most ${MAX_TEXT} characters`, { field });
  }
  if (f.from && f.to && f.from.getTime() >= f.to.getTime())
    throw invalidArgument("Errors.Action.Delivery.Filter.DateRange", "to must be after from", { field: "to" });
  const { rows, ...total } = await ctx.store.outbox.page(ctx.instanceId, { ...f, ...(scope ? { orgIds: scope } : {}) }, page(input.page));
  return { ...total, deliveries: rows.map(view) };
}

/** A dead (or failed) delivery is tried again at once, with its attempts counted afresh. */
export async function retryDelivery(ctx: Ctx, id: string): Promise<Date> {
  if (!id) throw invalidArgument("Errors.Action.Delivery.Id.Missing", "id is required", { field: "id" });
  const row = await ctx.store.outbox.find(ctx.instanceId, id);
  if (!row) {
    actionScope(ctx);
    throw deliveryNotFound();
  }
  authorizeActions(ctx, "write", row.orgId, deliveryNotFound);
  return commit(ctx, async (tx, now) => {
    if (!(await tx.outbox.retry(ctx.instanceId, id, now))) {
      throw failedPrecondition("Errors.Action.Delivery.NotRetryable", "only a failed or dead delivery can be retried");
    }
    return { aggregateType: "action_delivery", aggregateId: id, orgId: row.orgId, type: "action.delivery.retried", payload: { targetId: row.targetId } };
  });
}
