// Brute force at the OAuth endpoints: failed client authentications (and failed JWT-profile assertions) count
// against the client id the request names and the address it came from. Past a limit the request is refused before
// any credential is looked at, so the answer says nothing about whether it would have been right. Failures are
// audited; an attacker cannot flood the trail, as the limits bound how many are written per key and window.
import { eventRow } from "../audit/events.js";
import { failureKeys, rateLimited } from "../limits.js";
import { systemActor } from "../request-context.js";
import { GRANT_JWT_BEARER, readAssertion } from "./assertions.js";
import { isOAuthError, OAuthErrors } from "./errors.js";
import type { OAuthRuntime } from "./runtime.js";

export interface Attempt {
  endpoint: string;
  form: Record<string, string | undefined>;
  /** The client id of HTTP Basic credentials, when sent. */
  basicClientId?: string;
  peer?: string;
}

/** The client id a request names: only for counting its failures, never trusted otherwise. */
function namedClient(a: Attempt): string | undefined {
  if (a.basicClientId) return a.basicClientId;
  if (a.form.client_id) return a.form.client_id;
  const assertion = a.form.client_assertion ?? (a.form.grant_type === GRANT_JWT_BEARER ? a.form.assertion : undefined);
  const iss = assertion ? readAssertion(assertion)?.claims.iss : undefined;
  return typeof iss === "string" ? iss : undefined;
}

const counts = (err: unknown, a: Attempt) =>
  isOAuthError(err, OAuthErrors.InvalidClient) || (a.form.grant_type === GRANT_JWT_BEARER && isOAuthError(err, OAuthErrors.InvalidGrant));

/** Runs the endpoint's work under the limits: refused while blocked, its failure counted and audited. */
export async function limitedAttempt<T>(rt: OAuthRuntime, a: Attempt, run: () => Promise<T>): Promise<T> {
  const client = namedClient(a);
  const keys = failureKeys({ client }, a.peer);
  const wait = rt.limits.blockedFor(keys);
  if (wait > 0) throw rateLimited(wait);
  try {
    return await run();
  } catch (err) {
    if (!counts(err, a)) throw err;
    const blocked = await rt.limits.failed(keys);
    const e = eventRow(systemActor(rt.instanceId, rt.clock), {
      aggregateType: "oauth.client",
      aggregateId: (client ?? "").slice(0, 200),
      type: blocked > 0 ? "oauth.client.blocked" : "oauth.client.authentication_failed",
      payload: { endpoint: a.endpoint, peer: a.peer, reason: (err as { id: string }).id, ...(blocked > 0 ? { seconds: blocked } : {}) },
    });
    // The audit trail must not turn a failed authentication into a 500.
    await rt.store.events.append(e).catch((writeErr: unknown) => rt.log.warn({ err: writeErr }, "could not record a failed client authentication"));
    throw err;
  }
}
