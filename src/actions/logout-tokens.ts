// Delivering a queued back-channel logout (src/store/logout-deliveries.ts) for the outbox's worker: the logout token
// (OIDC Back-Channel Logout 1.0 §2.4) is made and signed at each attempt, with the application's ID token algorithm
// and typ logout+jwt (§2.4's recommendation, which keeps it from being taken for an ID token), and POSTed as
// application/x-www-form-urlencoded `logout_token=...` (§2.5). The receiver's address is held to the actions' SSRF
// rule: public only, unless SVC_ACTIONS_ALLOW_PRIVATE=true (also for dev-mode applications: an ORG_OWNER may edit an
// application, and must not be able to make svc POST to its internal network).
import { randomUUID } from "node:crypto";
import { SIGNING_ALGS, type SigningAlg } from "../domain/access/app-settings.js";
import type { IdpCertificate } from "../domain/saml/runtime.js";
import type { LogoutTokenPayload } from "../store/logout-deliveries.js";
import { postToTarget } from "./http.js";

export const BACKCHANNEL_LOGOUT_EVENT_URI = "http://schemas.openid.net/event/backchannel-logout";
/** How long a logout token is valid: a receiver takes it at once, and the worker signs a new one for each retry. */
const LOGOUT_TOKEN_SECONDS = 120;
/** A receiver's answer within this; it is a small POST the receiver acts on before answering. */
const LOGOUT_TIMEOUT_MS = 10_000;

export interface LogoutTokenSigner {
  issuer: string;
  sign(claims: Record<string, unknown>, typ: string, alg: SigningAlg): Promise<string>;
  /** The SAML IdP (its entity id, its active certificate) that signs the SOAP LogoutRequests (saml-logout-delivery.ts). */
  saml?: { entityId: string; certificate(): Promise<IdpCertificate> };
}

/** The claims of a logout token: iss, aud, iat, exp, jti, events, sub and sid; never a nonce (§2.4). */
export function logoutTokenClaims(issuer: string, p: LogoutTokenPayload, nowSeconds: number): Record<string, unknown> {
  return {
    iss: issuer,
    aud: p.clientId,
    iat: nowSeconds,
    exp: nowSeconds + LOGOUT_TOKEN_SECONDS,
    jti: randomUUID(),
    events: { [BACKCHANNEL_LOGOUT_EVENT_URI]: {} },
    ...(p.sub ? { sub: p.sub } : {}),
    sid: p.sid,
  };
}

/** One attempt: resolves with the receiver's status (2xx: delivered), rejects with a CallFailure when it could not be made. */
export async function postLogoutToken(signer: LogoutTokenSigner, p: LogoutTokenPayload, now: Date, allowPrivate: boolean): Promise<number> {
  const alg: SigningAlg = SIGNING_ALGS.find((a) => a === p.alg) ?? "RS256";
  const token = await signer.sign(logoutTokenClaims(signer.issuer, p, Math.floor(now.getTime() / 1000)), "logout+jwt", alg);
  const res = await postToTarget(p.uri, {
    headers: { "content-type": "application/x-www-form-urlencoded", "cache-control": "no-store" },
    body: new URLSearchParams({ logout_token: token }).toString(),
    timeoutMs: LOGOUT_TIMEOUT_MS,
    allowPrivate,
    maxAnswerBytes: 0,
  });
  return res.status;
}
