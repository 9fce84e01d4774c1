// A user's OAuth access tokens as an administrator sees them: listed without their value, and revoked at will (all,
// some ids, or one client's), as when a machine's secret leaked to a client that still holds tokens.
import type { UserTokenRow } from "../../store/tokens.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { targetUser } from "./user-access.js";

export type UserTokenView = UserTokenRow;

const MAX_IDS = 1000;

/** The user's tokens still valid now, newest first by default; the user's own, or user.read where it lives. */
export async function listUserTokens(ctx: Ctx, input: { userId: string; page?: PageInput }): Promise<ListTotal & { tokens: UserTokenView[] }> {
  const p = page(input.page);
  const user = await targetUser(ctx, input.userId, "user.read", { selfAllowed: true });
  const { rows, ...total } = await ctx.store.tokens.livePage(user.id, ctx.clock(), p);
  return { ...total, tokens: rows };
}

/** Revokes the user's valid tokens (those with `tokenIds`, or of `clientId`, when given); returns how many. */
export async function revokeUserTokens(
  ctx: Ctx,
  input: { userId: string; tokenIds: readonly string[]; clientId?: string },
): Promise<{ revoked: number; at: Date }> {
  const user = await targetUser(ctx, input.userId, "user.credential.write");
  if (input.tokenIds.length > MAX_IDS) throw invalidArgument("Errors.User.Tokens.TooMany", `at most ${MAX_IDS} token ids per request`, { field: "token_ids" });
  let revoked = 0;
  const at = await commit(ctx, async (tx, now) => {
    revoked = await tx.tokens.revokeOf(user.id, now, { ids: input.tokenIds.length ? [...new Set(input.tokenIds)] : undefined, clientId: input.clientId });
    // All of them (or a client's): the refresh tokens too, or the client would simply mint new access tokens.
    const revokedRefreshTokens = input.tokenIds.length ? 0 : await tx.refreshTokens.revokeOfUser(user.id, now, input.clientId);
    // Cached resolutions of these tokens go on every replica when this commits.
    await tx.auth.invalidate({ userId: user.id });
    return userEvent(user, "user.tokens.revoked", {
      revoked,
      ...(revokedRefreshTokens ? { revokedRefreshTokens } : {}),
      ...(input.tokenIds.length ? { tokenIds: input.tokenIds } : {}),
      ...(input.clientId ? { clientId: input.clientId } : {}),
    });
  });
  return { revoked, at };
}
