// RFC 7009 revocation, and the housekeeping of expired token rows.
import type { ClientRecord } from "./client-auth.js";
import { invalidRequest, unauthorizedClient } from "./errors.js";
import { issuedTo } from "./introspection.js";
import { resolveToken } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";

/** RFC 7009. Unknown tokens are fine; a token of another client is refused. */
export async function revoke(rt: OAuthRuntime, caller: ClientRecord, token: string | undefined, now: Date): Promise<void> {
  if (!token) throw invalidRequest("token is required");
  const t = await resolveToken(rt, token, now);
  if (!t || t.kind === "pat") return;
  if (!issuedTo(t, caller)) throw unauthorizedClient("the token was not issued to this client");
  await rt.store.transaction(async (tx) => {
    await tx.tokens.revoke(t.id, now);
    await tx.auth.invalidate(t.subject === "user" ? { userId: t.principal.userId } : { orgId: t.orgId });
  });
}

/** Purges token rows and used-assertion markers an hour after they expired (idempotent: any replica may). */
export function purgeExpiredTokens(rt: OAuthRuntime): Promise<void> {
  return rt.store.tokens.purgeExpired(rt.instanceId, new Date(rt.clock().getTime() - 3_600_000));
}
