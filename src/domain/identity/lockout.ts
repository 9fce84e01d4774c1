// Failed credential checks and the lockout policy. The counter lives on the
// user row and is incremented atomically, so every replica enforces the same
// limit; reaching it locks the user in the same transaction.
import { invalidateAuth } from "../../store/auth-cache.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { lockoutPolicy } from "../settings/settings.js";

/** Records a failed password check; returns true when it locked the user. */
export async function recordFailedPasswordCheck(ctx: Ctx, user: { id: string; orgId: string }): Promise<boolean> {
  const policy = await lockoutPolicy(ctx, user.orgId);
  const now = ctx.clock();
  return ctx.db.$transaction(async (tx) => {
    const after = await tx.user.update({
      where: { id: user.id },
      data: { failedPasswordAttempts: { increment: 1 } },
      select: { failedPasswordAttempts: true, state: true },
    });
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.password.check.failed" });
    const limit = policy.maxPasswordAttempts;
    if (limit === 0 || after.failedPasswordAttempts < limit || (after.state !== "ACTIVE" && after.state !== "INITIAL")) return false;
    await tx.user.update({ where: { id: user.id }, data: { state: "LOCKED", lockedAt: now, updatedAt: now } });
    await invalidateAuth(tx, { userId: user.id });
    await recordEvent(ctx, tx, {
      aggregateType: "user",
      aggregateId: user.id,
      orgId: user.orgId,
      type: "user.locked",
      payload: { reason: "lockout policy", failedPasswordAttempts: after.failedPasswordAttempts },
    });
    return true;
  });
}
