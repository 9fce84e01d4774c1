// What the code and refresh grants issue for a user's sign-in: an access token (the app's format), an ID token with
// the sign-in's claims, and with offline_access a refresh token. The rows are written in the same statement as the
// redemption of the grant (the code marked used, the old refresh token marked exchanged), so a replay that comes
// second always finds, and revokes, everything the first use issued.
import { newOpaqueToken, sha256 } from "../../../crypto/tokens.js";
import type { RefreshTokenRow } from "../../../store/refresh-tokens.js";
import type { Redemption } from "../../../store/tokens.js";
import { eventRow } from "../../audit/events.js";
import { newId } from "../../ids.js";
import { systemActor } from "../../request-context.js";
import { invalidGrant } from "../errors.js";
import { prepareTokens, type TokenResponse } from "../issue.js";
import type { UserInfoSource } from "../resolve.js";
import type { OAuthRuntime } from "../runtime.js";
import type { GrantedScopes } from "../scopes.js";
import type { OidcClient } from "./oidc-client.js";
import { sealSuccessor } from "./refresh-reuse.js";

export const OFFLINE_ACCESS = "offline_access";

export interface UserIssue {
  client: OidcClient;
  /** The user, with the profile the ID token's claims come from. */
  user: UserInfoSource;
  granted: GrantedScopes;
  /** The auth request the code came from: the family of every token issued under it. */
  familyId: string;
  sessionId: string | null;
  authTime: Date;
  amr: string[];
  nonce?: string;
  /** With a refresh token: the scopes it carries (the originally granted ones) and when its family ends. */
  refresh?: { scopes: string[]; audience: string[]; expiresAt: Date };
  now: Date;
}

/**
 * Issues the tokens if the redemption of `redeem` (written with them) wins; otherwise answers what `lost` finds (a
 * concurrent rotation's answer, within the reuse interval), or revokes the family as a replay and answers
 * invalid_grant.
 */
export async function issueForUser(
  rt: OAuthRuntime,
  u: UserIssue,
  redeem: { code: string } | { refreshToken: string; presented: string },
  what: string,
  lost?: () => Promise<TokenResponse | undefined>,
): Promise<TokenResponse> {
  const { response, row } = await prepareTokens(rt, {
    userId: u.user.id,
    profile: u.user,
    orgId: u.user.orgId,
    clientId: u.client.clientId,
    appId: u.client.appId,
    credentialId: u.client.credential,
    granted: u.granted,
    lifetime: rt.lifetimes.user,
    tokenType: u.client.accessTokenType,
    alg: u.client.oidc.idTokenSignedResponseAlg,
    now: u.now,
    signIn: {
      nonce: u.nonce,
      authTime: u.authTime,
      sessionId: u.sessionId ?? undefined,
      amr: u.amr,
      userinfoClaims: u.client.oidc.idTokenUserinfoAssertion,
      roleClaims: u.client.oidc.idTokenRoleAssertion,
      idTokenLifetime: rt.lifetimes.idToken,
      grantId: u.familyId,
    },
  });
  let refresh: { token: string; row: RefreshTokenRow } | undefined;
  if (u.refresh) {
    const token = newOpaqueToken();
    refresh = {
      token,
      row: {
        id: newId(),
        instanceId: rt.instanceId,
        tokenHash: sha256(token),
        familyId: u.familyId,
        userId: u.user.id,
        clientId: u.client.clientId,
        appId: u.client.appId,
        sessionId: u.sessionId,
        scopes: u.refresh.scopes,
        audience: u.refresh.audience,
        authTime: u.authTime,
        amr: u.amr,
        expiresAt: u.refresh.expiresAt,
        createdAt: u.now,
      },
    };
  }
  const answer = refresh ? { ...response, refresh_token: refresh.token } : response;
  // A rotation keeps its answer, sealed for the holder of the exchanged token, for a retry (grants/refresh-reuse.ts).
  const redemption: Redemption =
    "code" in redeem
      ? redeem
      : { refreshToken: redeem.refreshToken, successorSealed: sealSuccessor(rt.instanceId, { id: redeem.refreshToken, presented: redeem.presented }, answer) };
  if (!(await rt.store.tokens.issueRedeeming(redemption, row, refresh?.row, u.now))) {
    const other = await lost?.();
    if (other) return other;
    await revokeFamily(rt, u.familyId, u.user, u.now, `${what}.replayed`);
    throw invalidGrant(`the ${what.replace("_", " ")} was already used`);
  }
  return answer;
}

/**
 * Revokes every token of a family (its refresh tokens, and the access tokens issued under it) at once on every
 * replica, with an audit event: `type` says why (a replayed code or refresh token, a revocation request).
 */
export async function revokeFamily(rt: OAuthRuntime, familyId: string, user: { id: string; orgId: string }, now: Date, type: string): Promise<void> {
  await rt.store.transaction(async (tx) => {
    const revoked = await tx.refreshTokens.revokeFamily(familyId, now);
    await tx.auth.invalidate({ userId: user.id });
    await tx.events.append(
      eventRow(
        systemActor(rt.instanceId, () => now),
        { aggregateType: "oauth.grant", aggregateId: familyId, orgId: user.orgId, type: `oauth.grant.${type}`, payload: { userId: user.id, ...revoked } },
      ),
    );
  });
}

/** The user's granted scopes plus offline_access when it was asked for and the app may use refresh tokens. */
export function withOffline(granted: GrantedScopes, requested: readonly string[], client: OidcClient): GrantedScopes {
  if (!requested.includes(OFFLINE_ACCESS) || !client.oidc.grantTypes.includes("refresh_token")) return granted;
  return { ...granted, scopes: [...granted.scopes.filter((s) => s !== OFFLINE_ACCESS), OFFLINE_ACCESS] };
}
