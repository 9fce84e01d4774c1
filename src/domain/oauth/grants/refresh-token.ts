// OAuth 2.0 §6 with rotation (Security BCP §4.14.2): every use exchanges the refresh token for a new one of the same
// family; the exchange is a conditional UPDATE in the statement that writes the new tokens, so a token is exchanged
// once, and presenting an exchanged (or revoked) one again revokes the whole family: whoever holds a copy, the
// attacker or the client, loses it. Bound to the client and the session; scopes may narrow, never widen.
import { sha256 } from "../../../crypto/tokens.js";
import { liveOf } from "../../sessions/link.js";
import { usable } from "../client-auth.js";
import { invalidGrant, invalidRequest, invalidScope, isOAuthError, OAuthErrors } from "../errors.js";
import { clientProjects, type GrantedScopes, grantScopes, scopeTokens } from "../scopes.js";
import { oidcClient } from "./oidc-client.js";
import { answerAgain } from "./refresh-reuse.js";
import type { Grant } from "./types.js";
import { issueForUser, OFFLINE_ACCESS, revokeFamily } from "./user-tokens.js";

const TOKEN_MAX = 100;
const invalidToken = () => invalidGrant("the refresh token is invalid, expired or revoked");

export const refreshToken: Grant = {
  type: "refresh_token",
  parameters: ["refresh_token", "scope", "client_id"],
  clientAuthentication: "optional",
  async handle(rt, params, authenticated, now) {
    const client = await oidcClient(rt, authenticated, params, "refresh_token");
    const presented = params.refresh_token;
    if (!presented) throw invalidRequest("refresh_token is required");
    if (presented.length > TOKEN_MAX) throw invalidToken();
    // One read: the token, its user, its session and the gates of the projects its scopes can name.
    const read = await rt.store.refreshTokens.forGrant(rt.instanceId, sha256(presented), client.clientId, clientProjects(client.clientId, client.projectId));
    const old = read.token;
    if (!old || old.appId !== client.appId) throw invalidToken();
    const user = read.user;
    const owner = { id: old.userId, orgId: user?.orgId ?? "" };
    if (old.usedAt) {
      // A retry of a rotation whose answer was lost, within the reuse interval: the same answer again.
      const again = await answerAgain(rt, { ...old, usedAt: old.usedAt }, presented, owner.orgId, now);
      if (again) return again;
      await revokeFamily(rt, old.familyId, owner, now, "refresh_token.replayed");
      throw invalidToken();
    }
    if (old.revokedAt || old.expiresAt.getTime() <= now.getTime()) throw invalidToken();
    if (old.createdAt.getTime() + rt.lifetimes.refreshIdle * 1000 <= now.getTime()) throw invalidGrant("the refresh token expired unused");
    if (!user || user.instanceId !== rt.instanceId || !usable(user)) throw invalidGrant("the user is not active");
    if (old.sessionId && !liveOf(read.session, now)) throw invalidGrant("the session has ended");
    // RFC 6749 §6: at most what was granted; omitted means all of it.
    const requested = params.scope === undefined ? old.scopes : [...new Set(scopeTokens(params.scope))];
    const wider = requested.find((s) => !old.scopes.includes(s));
    if (wider) throw invalidScope(`scope ${wider.slice(0, 200)} was not granted to this refresh token`);
    let granted: GrantedScopes;
    try {
      granted = await grantScopes(rt, requested.filter((s) => s !== OFFLINE_ACCESS).join(" "), user, client.clientId, client.projectId, read);
    } catch (err) {
      // The user lost access to the project since the sign-in: the grant is no longer good.
      if (isOAuthError(err, OAuthErrors.InvalidScope)) throw invalidGrant("the user no longer has access to the application's project");
      throw err;
    }
    if (requested.includes(OFFLINE_ACCESS)) granted = { ...granted, scopes: [...granted.scopes, OFFLINE_ACCESS] };
    return issueForUser(
      rt,
      {
        client,
        user,
        granted,
        familyId: old.familyId,
        sessionId: old.sessionId,
        authTime: old.authTime,
        amr: old.amr,
        // The new refresh token carries what the old one did (RFC 6749 §6), however narrow this access token is.
        refresh: { scopes: old.scopes, audience: old.audience, expiresAt: old.expiresAt },
        now,
      },
      { refreshToken: old.id, presented },
      "refresh_token",
      // Two uses at once (a client's retry racing its first try): the one that lost gets the winner's answer.
      async () => {
        const row = await rt.store.refreshTokens.findByHash(rt.instanceId, sha256(presented));
        return row?.usedAt ? answerAgain(rt, { ...row, usedAt: row.usedAt }, presented, owner.orgId, now) : undefined;
      },
    );
  },
};
