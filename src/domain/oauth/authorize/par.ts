// Pushed authorization requests (RFC 9126): a client sends its authorization request to /oauth/v2/par, authenticated
// as at the token endpoint, and gets a request_uri to send the browser with instead of the parameters. The request is
// checked when pushed (errors go back to the client, never through the browser) and stored in the database (any
// replica may receive the browser) under the SHA-256 of the request_uri's random part; /oauth/v2/authorize takes it
// out once, for that client, within PAR_LIFETIME_SECONDS, and checks it again (the application may have changed).
import { newOpaqueToken, sha256 } from "../../../crypto/tokens.js";
import { DomainError } from "../../errors.js";
import { newId } from "../../ids.js";
import type { ClientRecord } from "../client-auth.js";
import { oidcClient } from "../grants/oidc-client.js";
import type { OAuthRuntime } from "../runtime.js";
import { checkAuthorization, KNOWN } from "./authorize.js";
import { asMap, PAR_LIFETIME_SECONDS, REQUEST_URI_PREFIX } from "./pushed.js";

/** At most this many bytes of parameters are stored per request (the form reader allows 64 KiB). */
const MAX_PARAMS_BYTES = 16 * 1024;
/**
 * At most this many usable pushed requests per client: with PAR_LIFETIME_SECONDS, some 80 sign-ins a second of one
 * application, and a bound on what one client (even with valid credentials) can make the table hold.
 */
export const MAX_LIVE_PUSHES = 5_000;

export type PushOutcome = { kind: "pushed"; request_uri: string; expires_in: number } | { kind: "error"; error: string; error_description: string };

/**
 * RFC 9126 §2.1: `authenticated` is the client the endpoint authenticated (undefined: a public client naming itself
 * with client_id). The parameters are those of an authorization request; request_uri cannot be among them.
 */
export async function pushAuthorizationRequest(
  rt: OAuthRuntime,
  authenticated: ClientRecord | undefined,
  form: Record<string, string | undefined>,
  now: Date,
): Promise<PushOutcome> {
  // An inactive application does not authenticate (invalid_client, 401), with credentials or as a public client.
  const client = await oidcClient(rt, authenticated, form, "authorization_code");
  const params: Record<string, string> = {};
  for (const name of KNOWN) {
    const v = form[name];
    if (v !== undefined && name !== "client_id") params[name] = v;
  }
  if (Buffer.byteLength(JSON.stringify(params)) > MAX_PARAMS_BYTES) {
    return { kind: "error", error: "invalid_request", error_description: `the request's parameters must be at most ${MAX_PARAMS_BYTES} bytes` };
  }
  const checked = await checkAuthorization(rt, client, asMap(params), now, true);
  if (checked.kind !== "valid") return { kind: "error", error: checked.error, error_description: checked.description };
  if ((await rt.store.authRequests.livePushes(rt.instanceId, client.clientId, now)) >= MAX_LIVE_PUSHES) {
    const wait = String(PAR_LIFETIME_SECONDS);
    throw new DomainError("ResourceExhausted", "Errors.RateLimited", `too many pushed authorization requests: try again in ${wait} s`, { retryAfter: wait });
  }
  const secret = newOpaqueToken();
  await rt.store.authRequests.push({
    id: newId(),
    instanceId: rt.instanceId,
    clientId: client.clientId,
    refHash: sha256(secret),
    params,
    expiresAt: new Date(now.getTime() + PAR_LIFETIME_SECONDS * 1000),
    createdAt: now,
  });
  return { kind: "pushed", request_uri: `${REQUEST_URI_PREFIX}${secret}`, expires_in: PAR_LIFETIME_SECONDS };
}
