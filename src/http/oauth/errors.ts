// The one mapping from domain errors to RFC 6749 §5.2 error responses.
import type { ServerResponse } from "node:http";
import type { DomainError } from "../../domain/errors.js";
import { OAuthErrors } from "../../domain/oauth/tokens.js";
import type { NodeResponse } from "../node-types.js";

export type Res = NodeResponse;

export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

export function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(json)) });
  (res as ServerResponse).end(json);
}

/** By domain error id: the OAuth `error`, the status, and (when the domain's message is not for the wire) the description. */
const BY_ID: Record<string, { error: string; status: number; description?: string }> = {
  [OAuthErrors.InvalidRequest]: { error: "invalid_request", status: 400 },
  [OAuthErrors.InvalidClient]: { error: "invalid_client", status: 401 },
  [OAuthErrors.InvalidGrant]: { error: "invalid_grant", status: 400 },
  [OAuthErrors.UnauthorizedClient]: { error: "unauthorized_client", status: 400 },
  [OAuthErrors.UnsupportedGrantType]: { error: "unsupported_grant_type", status: 400 },
  [OAuthErrors.InvalidScope]: { error: "invalid_scope", status: 400 },
  [OAuthErrors.InvalidTarget]: { error: "invalid_target", status: 400 },
  [OAuthErrors.AuthorizationPending]: { error: "authorization_pending", status: 400 },
  [OAuthErrors.SlowDown]: { error: "slow_down", status: 400 },
  [OAuthErrors.ExpiredToken]: { error: "expired_token", status: 400 },
  [OAuthErrors.AccessDenied]: { error: "access_denied", status: 400 },
  "Errors.Input.Text": { error: "invalid_request", status: 400, description: "parameters must not contain U+0000" },
  // RFC 6749 names temporarily_unavailable for the authorization endpoint; other providers answer it at the token
  // endpoint too, with 503, which is what a client's retry logic understands.
  "Errors.Database.Unavailable": { error: "temporarily_unavailable", status: 503 },
  // A token written whose commit went unanswered: a retry costs a second token at most.
  "Errors.Database.OutcomeUnknown": { error: "temporarily_unavailable", status: 503 },
  // An action target marked interrupt_on_error failed: what was being issued is refused, for now.
  "Errors.Action.Target.Failed": { error: "temporarily_unavailable", status: 503 },
  // RFC 8628 §3.5 registered slow_down for a client that must wait before trying again; with 429 and Retry-After.
  "Errors.RateLimited": { error: "slow_down", status: 429 },
};

/**
 * Answers `err` as an OAuth error; false when it has no OAuth meaning (an internal error). `basicSent`: the client
 * authenticated (or tried to) with HTTP Basic.
 */
export function sendOAuthError(res: Res, err: DomainError, basicSent: boolean): boolean {
  const m = BY_ID[err.id];
  if (!m) return false;
  // RFC 6749 §5.2: invalid_client is a 401, with a challenge for the scheme the client used in the Authorization
  // header. A client that authenticated in the body (client_secret_post, private_key_jwt) is not challenged to use
  // Basic, as node-oidc-provider does.
  const challenge: Record<string, string> = m.status === 401 && basicSent ? { "www-authenticate": 'Basic realm="svc"' } : {};
  const retry: Record<string, string> = err.metadata.retryAfter ? { "retry-after": err.metadata.retryAfter } : {};
  sendJson(res, m.status, { error: m.error, error_description: m.description ?? err.message }, { ...NO_STORE, ...challenge, ...retry });
  return true;
}
