// Reading the audit trail. Events are written by recordEvent() in the
// transaction of each change; this lists them, filtered in SQL.
import type { EventConditions } from "../../store/events.js";
import { authorize, readableOrgs } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { invalidArgument, permissionDenied } from "../errors.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { orgNotFound } from "../orgs/orgs.js";

export interface EventFilter {
  orgId?: string;
  aggregateType?: string;
  aggregateId?: string;
  /** Any of these types. */
  types?: string[];
  editorUserId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

export interface EventView {
  id: string;
  type: string;
  aggregateType: string;
  aggregateId: string;
  orgId: string | null;
  editorUserId: string | null;
  createdAt: Date;
  payload: Record<string, unknown>;
}

const MAX_TYPES = 100;
const MAX_TEXT = 200;

function text(value: string | undefined, field: string): string | undefined {
  if (!value) return undefined;
  if (value.length > MAX_TEXT) throw invalidArgument("Errors.Events.Filter.TooLong", `${field} must be at most ${MAX_TEXT} characters`, { field });
  return value;
}

/**
 * Who sees what: instance-level events.read (IAM_OWNER, IAM_OWNER_VIEWER)
 * sees everything; org-level events.read (ORG_OWNER, ORG_AUDITOR) sees the
 * events of those organizations and no instance-level ones.
 */
export async function listEvents(ctx: Ctx, input: { page?: PageInput; filter: EventFilter }): Promise<ListTotal & { events: EventView[] }> {
  const readable = readableOrgs(ctx, "events.read");
  if (readable !== "all" && readable.length === 0) throw permissionDenied("Errors.Permission.Denied", "missing permission events.read");
  const p = page(input.page);
  const f = input.filter;
  const types = f.types ?? [];
  if (types.length > MAX_TYPES)
    throw invalidArgument("Errors.Events.Filter.TooManyTypes", `at most ${MAX_TYPES} event types per request`, { field: "event_types" });
  for (const type of types) text(type, "event_types");
  if (f.from && f.to && f.from.getTime() >= f.to.getTime()) {
    throw invalidArgument("Errors.Events.Filter.DateRange", "to must be after from", { field: "to" });
  }

  const orgId = text(f.orgId, "organization_id");
  if (orgId) authorize(ctx, "events.read", orgId, orgNotFound);
  const conditions: EventConditions = {
    orgId: orgId || (readable === "all" ? undefined : readable),
    aggregateType: text(f.aggregateType, "aggregate_type"),
    aggregateId: text(f.aggregateId, "aggregate_id"),
    types,
    editorUserId: text(f.editorUserId, "editor_user_id"),
    from: f.from,
    to: f.to,
  };
  const { rows, ...total } = await ctx.store.events.page(ctx.instanceId, conditions, p);
  return {
    ...total,
    events: rows.map((r) => ({
      id: r.id,
      type: r.type,
      aggregateType: r.aggregateType,
      aggregateId: r.aggregateId,
      orgId: r.orgId,
      editorUserId: r.editorUserId,
      createdAt: r.createdAt,
      payload: r.payload,
    })),
  };
}
