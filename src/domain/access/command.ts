// What every access command does once it has loaded its target and checked
// the caller's permission on it (each command does that itself, in the open):
// one transaction that writes, drops what cached authentication derived from
// the change, and records the audit event last; the change date is the answer.

import type { Store } from "../../store/index.js";
import { type EventInput, recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";

/** Runs `write` in one transaction with the event it returns; returns the change date (`at`, or now). */
export async function commit(ctx: Ctx, write: (tx: Store, now: Date) => Promise<EventInput>, at: Date = ctx.clock()): Promise<Date> {
  await ctx.store.transaction(async (tx) => {
    const event = await write(tx, at);
    await recordEvent(ctx, tx, event);
  });
  return at;
}

/** An event about a project, its roles, grants or applications: audited on the project, in its owning organization. */
export function projectEvent(project: { id: string; orgId: string }, type: string, payload: Record<string, unknown>): EventInput {
  return { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, type, payload };
}

/** An event about a user grant, in the organization the grant is held in. */
export function userGrantEvent(grant: { id: string; orgId: string }, type: string, payload: Record<string, unknown>): EventInput {
  return { aggregateType: "user.grant", aggregateId: grant.id, orgId: grant.orgId, type, payload };
}
