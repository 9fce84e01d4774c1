// The Device Authorization Grant (RFC 8628): a device without a browser asks for a device code and a user code; the
// user types the user code at the hosted login's /ui/login/device, signs in there as for any auth request (the same
// auth request machinery, so every sign-in policy applies), allows the application on the consent page, and the device,
// polling the token endpoint with its device code, gets the tokens (grants/device-code.ts).
//
// The user code is 8 letters of a 20-letter alphabet without vowels (no words, RFC 8628 §6.1), about 34.5 bits: with
// the entry page's limits (device-entry.ts) guessing one of the live codes within their lifetime is out of reach.
import { createHash, randomInt } from "node:crypto";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import { DomainError } from "../errors.js";
import { newId } from "../ids.js";
import type { ClientRecord } from "./client-auth.js";
import { unauthorizedClient } from "./errors.js";
import { type OidcClient, oidcClient } from "./grants/oidc-client.js";
import type { OAuthRuntime } from "./runtime.js";
import { scopeTokens } from "./scopes.js";

export const GRANT_DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code";
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;
/** How long a device code and its user code live (seconds). */
export const DEVICE_CODE_LIFETIME = 600;
/** The polling interval a device starts with (seconds); slow_down raises it by SLOW_DOWN_STEP. */
export const DEVICE_POLL_INTERVAL = 5;
export const SLOW_DOWN_STEP = 5;
/** The path of the user code page under the external URL. */
export const DEVICE_PAGE = "/ui/login/device";
const MAX_SCOPE_TOKEN = 200;
/**
 * At most this many unexpired device authorizations per client (as MAX_LIVE_PUSHES for PAR): the endpoint is anonymous
 * for a public client, so without a bound anyone who knows a client_id could make the table hold any number of rows.
 */
export const MAX_LIVE_DEVICE_AUTHORIZATIONS = 5_000;

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** A new user code as shown: XXXX-XXXX. */
export function newUserCode(): string {
  let code = "";
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** A typed user code in its stored form (upper case, dashes and spaces dropped); undefined when it cannot be one. */
export function normalizeUserCode(typed: string): string | undefined {
  if (typed.length > 40) return undefined;
  const code = typed.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const c of code) if (!USER_CODE_ALPHABET.includes(c)) return undefined;
  return code;
}

/** What the user code is found by: its SHA-256 with the instance (the column is unique across instances). */
export function userCodeHash(instanceId: string, normalized: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash("sha256").update(`${instanceId}\n${normalized}`).digest());
}

/** The application of a device authorization request: an OIDC app (public or authenticated) that has the grant. */
export async function deviceClient(rt: OAuthRuntime, authenticated: ClientRecord | undefined, params: Record<string, string | undefined>): Promise<OidcClient> {
  const client = await oidcClient(rt, authenticated, params, GRANT_DEVICE_CODE);
  if (!client.active) throw unauthorizedClient("the application is not active");
  return client;
}

/** RFC 8628 §3.1–3.2: a device code and a user code for `client`, stored (hashed) until they expire. */
export async function startDeviceAuthorization(
  rt: OAuthRuntime,
  client: OidcClient,
  params: Record<string, string | undefined>,
  now: Date,
): Promise<DeviceAuthorizationResponse> {
  if ((await rt.store.deviceAuthorizations.liveCount(rt.instanceId, client.clientId, now, MAX_LIVE_DEVICE_AUTHORIZATIONS)) >= MAX_LIVE_DEVICE_AUTHORIZATIONS) {
    const wait = String(DEVICE_POLL_INTERVAL * 12);
    throw new DomainError("ResourceExhausted", "Errors.RateLimited", `too many device authorizations: try again in ${wait} s`, { retryAfter: wait });
  }
  const scopes = [...new Set(scopeTokens(params.scope).filter((s) => s.length <= MAX_SCOPE_TOKEN))];
  const deviceCode = newOpaqueToken();
  const expiresAt = new Date(now.getTime() + DEVICE_CODE_LIFETIME * 1000);
  // A user code already live (of 2.56e10) is drawn again.
  for (let attempt = 0; attempt < 5; attempt++) {
    const userCode = newUserCode();
    const stored = await rt.store.deviceAuthorizations.create({
      id: newId(),
      instanceId: rt.instanceId,
      appId: client.appId,
      clientId: client.clientId,
      deviceCodeHash: sha256(deviceCode),
      userCodeHash: userCodeHash(rt.instanceId, normalizeUserCode(userCode) as string),
      scopes,
      interval: DEVICE_POLL_INTERVAL,
      expiresAt,
      createdAt: now,
    });
    if (!stored) continue;
    const verification = `${rt.issuer}${DEVICE_PAGE}`;
    return {
      device_code: deviceCode,
      user_code: userCode,
      verification_uri: verification,
      verification_uri_complete: `${verification}?${new URLSearchParams({ user_code: userCode })}`,
      expires_in: DEVICE_CODE_LIFETIME,
      interval: DEVICE_POLL_INTERVAL,
    };
  }
  throw new Error("no free user code after 5 attempts");
}
