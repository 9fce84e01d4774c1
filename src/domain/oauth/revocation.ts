// RFC 7009 revocation, and the housekeeping of expired token rows.
import { sha256 } from "../../crypto/tokens.js";
import type { ClientRecord } from "./client-auth.js";
import { invalidRequest, unauthorizedClient } from "./errors.js";
import { revokeFamily } from "./grants/user-tokens.js";
import { issuedTo } from "./introspection.js";
import { MAX_TOKEN_BYTES, resolveToken } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";

/**
 * RFC 7009. Unknown tokens are fine; a token of another client is refused. A refresh token takes its whole family
 * with it (every refresh token and access token issued under the same sign-in), as RFC 7009 §2.1 suggests.
 */
export async function revoke(rt: OAuthRuntime, caller: ClientRecord, token: string | undefined, now: Date): Promise<void> {
  if (!token) throw invalidRequest("token is required");
  if (token.length > MAX_TOKEN_BYTES) return;
  const t = await resolveToken(rt, token, now);
  if (!t) return revokeRefreshToken(rt, caller, token, now);
  if (t.kind === "pat") return;
  if (!issuedTo(t, caller)) throw unauthorizedClient("the token was not issued to this client");
  await rt.store.transaction(async (tx) => {
    await tx.tokens.revoke(t.id, now);
    await tx.auth.invalidate(t.subject === "user" ? { userId: t.principal.userId } : { orgId: t.orgId });
  });
}

async function revokeRefreshToken(rt: OAuthRuntime, caller: ClientRecord, token: string, now: Date): Promise<void> {
  const row = await rt.store.refreshTokens.findByHash(rt.instanceId, sha256(token));
  if (!row || row.revokedAt) return;
  if (caller.kind !== "app" || caller.appId !== row.appId) throw unauthorizedClient("the token was not issued to this client");
  const user = await rt.store.tokens.findUser(row.userId);
  await revokeFamily(rt, row.familyId, { id: row.userId, orgId: user?.orgId ?? caller.orgId }, now, "refresh_token.revoked");
}

/**
 * Purges token rows, used-assertion markers, auth requests, device authorizations, refresh tokens, sign-in sessions and
 * external sign-in intents an hour after they expired, pushed authorization requests once expired (idempotent: any
 * replica may).
 */
export async function purgeExpiredTokens(rt: OAuthRuntime): Promise<void> {
  const before = new Date(rt.clock().getTime() - 3_600_000);
  await rt.store.tokens.purgeExpired(rt.instanceId, before);
  await rt.store.authRequests.purgeExpired(rt.instanceId, before);
  await rt.store.authRequests.purgeExpiredPushes(rt.instanceId, rt.clock());
  await rt.store.deviceAuthorizations.purgeExpired(rt.instanceId, before);
  await rt.store.refreshTokens.purgeExpired(rt.instanceId, before);
  await rt.store.sessions.purgeExpired(rt.instanceId, before);
  await rt.store.idps.purgeExpired(rt.instanceId, before);
  await rt.store.saml.purgeExpired(rt.instanceId, before);
}
