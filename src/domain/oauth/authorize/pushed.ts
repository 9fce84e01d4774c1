// A pushed authorization request's request_uri (RFC 9126 §2.2) and taking its parameters out at the authorization
// endpoint (par.ts pushes them).
import { sha256 } from "../../../crypto/tokens.js";
import type { ClientRecord } from "../client-auth.js";
import type { OAuthRuntime } from "../runtime.js";

/** How long a request_uri may be used (RFC 9126 §2.2 suggests 5 to 600 seconds; short keeps the table small). */
export const PAR_LIFETIME_SECONDS = 60;
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";

export const asMap = (params: Record<string, string>) => new Map(Object.entries(params).map(([k, v]) => [k, [v]]));

/** The parameters `client` pushed under `requestUri`, taken out (used once); undefined when there are none to take. */
export async function takePushed(rt: OAuthRuntime, client: ClientRecord, requestUri: string, now: Date): Promise<Map<string, string[]> | undefined> {
  if (!requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > REQUEST_URI_PREFIX.length + 100) return undefined;
  const params = await rt.store.authRequests.takePushed(rt.instanceId, sha256(requestUri.slice(REQUEST_URI_PREFIX.length)), client.clientId, now);
  return params ? asMap(params) : undefined;
}
