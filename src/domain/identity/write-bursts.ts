// Many users written at once (a SCIM Bulk): the statistics the database plans with are refreshed soon after.
import type { Ctx } from "../context.js";

/** How many users written in one request count as a burst. */
export const BURST = 100;

export function afterUserWrites(ctx: Ctx, written: number): void {
  if (written < BURST) return;
  ctx.store.users.refreshStatisticsSoon((err) => ctx.log.warn({ err, requestId: ctx.requestId }, "could not refresh the user tables' statistics"));
}
