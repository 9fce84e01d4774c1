import { recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { lockoutPolicy } from "../settings/settings.js";

/** Records a failed password check; returns true when it locked the user. */
export async function recordFailedPasswordCheck(ctx: Ctx, user: { id: string; orgId: string }): Promise<boolean> {
  const policy = await lockoutPolicy(ctx, user.orgId);
  const now = ctx.clock();
  return ctx.store.transaction(async (tx) => {
    const after = await tx.users.countFailedPassword(user.id);
    await recordEvent(ctx, tx, userEvent(user, "user.password.check.failed"));
    const limit = policy.maxPasswordAttempts;
    if (limit === 0 || after.failedPasswordAttempts < limit || (after.state !== "ACTIVE" && after.state !== "INITIAL")) return false;
    await tx.users.update(user.id, { state: "LOCKED", lockedAt: now, updatedAt: now });
    await tx.auth.invalidate({ userId: user.id });
    await recordEvent(ctx, tx, userEvent(user, "user.locked", { reason: "lockout policy", failedPasswordAttempts: after.failedPasswordAttempts }));
    return true;
  });
}
