// The reuse interval of refresh token rotation (Okta's grace period, Auth0's reuse interval): a client whose answer to
// a rotation was lost (a crash or a dropped connection after the commit) presents the token it still holds again; for
// a short while it gets the very answer of the rotation — the same successor refresh token, access token and ID
// token — instead of a revoked family. What makes that possible without keeping the successor in the clear: the
// answer is sealed (AES-256-GCM) with a key derived from the *presented* token's plaintext, which svc never stores
// (only its SHA-256, from which the key cannot be computed). Only whoever holds the old token can open it, and that is
// exactly who the rotation answered; the database (with or without the master key) reveals nothing. Past the interval,
// or once the successor was used, presenting the old token is a replay and revokes the family as before.
import { createHash } from "node:crypto";
import { seal, unseal } from "../../../crypto/secretbox.js";
import { sha256 } from "../../../crypto/tokens.js";
import { eventRow } from "../../audit/events.js";
import { systemActor } from "../../request-context.js";
import type { TokenResponse } from "../issue.js";
import type { OAuthRuntime } from "../runtime.js";

const keyOf = (instanceId: string, presented: string) => createHash("sha256").update(`svc:refresh-successor:v1\0${instanceId}\0${presented}`).digest();
const aadOf = (instanceId: string, refreshTokenId: string) => `svc:refresh-successor:${instanceId}:${refreshTokenId}`;

/** The rotation's answer sealed for the holder of the presented token (stored with the exchanged token). */
export function sealSuccessor(instanceId: string, exchanged: { id: string; presented: string }, answer: TokenResponse): Uint8Array<ArrayBuffer> {
  return seal(keyOf(instanceId, exchanged.presented), Buffer.from(JSON.stringify(answer), "utf8"), aadOf(instanceId, exchanged.id));
}

function openSuccessor(instanceId: string, id: string, presented: string, sealed: Uint8Array): TokenResponse | undefined {
  try {
    return JSON.parse(unseal(keyOf(instanceId, presented), sealed, aadOf(instanceId, id)).toString("utf8")) as TokenResponse;
  } catch {
    return undefined;
  }
}

/**
 * The answer of the rotation that exchanged `old`, when `presented` (its plaintext) is presented again within the
 * reuse interval, its family is not revoked and the successor was not used yet; else undefined (a replay).
 */
export async function answerAgain(
  rt: OAuthRuntime,
  old: { id: string; familyId: string; userId: string; usedAt: Date; revokedAt: Date | null },
  presented: string,
  orgId: string,
  now: Date,
): Promise<TokenResponse | undefined> {
  const interval = rt.lifetimes.refreshReuse ?? 0;
  if (interval <= 0 || old.revokedAt || now.getTime() - old.usedAt.getTime() > interval * 1000) return undefined;
  const sealed = await rt.store.refreshTokens.successorSealed(rt.instanceId, old.id);
  const answer = sealed ? openSuccessor(rt.instanceId, old.id, presented, sealed) : undefined;
  if (!answer?.refresh_token) return undefined;
  const successor = await rt.store.refreshTokens.findByHash(rt.instanceId, sha256(answer.refresh_token));
  if (!successor || successor.usedAt || successor.revokedAt || successor.familyId !== old.familyId) return undefined;
  await rt.store.events.append(
    eventRow(
      systemActor(rt.instanceId, () => now),
      { aggregateType: "oauth.grant", aggregateId: old.familyId, orgId, type: "oauth.grant.refresh_token.answered_again", payload: { userId: old.userId } },
    ),
  );
  return answer;
}
