// Bearer token → principal. Shared by every adapter (Connect, REST, SCIM,
// OAuth); nothing else turns a token into an identity. PATs, opaque and JWT
// access tokens are all accepted (one resolution path: resolve.ts); the
// management APIs (v2, SCIM) require the management audience (PATs always
// have it).
import type { Principal } from "../context.js";
import { unauthenticated } from "../errors.js";
import { MAX_TOKEN_BYTES, resolveToken } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";

export const MISSING_TOKEN = "Errors.Token.Missing";
export const INVALID_TOKEN = "Errors.Token.Invalid";

/** RFC 6750 §2.1: `Authorization: Bearer <b64token>`, scheme case-insensitive. */
export function bearerToken(authorization: string | null | undefined): string {
  if (!authorization) throw unauthenticated(MISSING_TOKEN, "no bearer token in the Authorization header");
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
  if (!m) throw unauthenticated(INVALID_TOKEN, "the Authorization header is not a bearer token");
  return m[1] as string;
}

// One generic answer for every failure: a caller learns nothing about why a token is refused.
const invalid = () => unauthenticated(INVALID_TOKEN, "the token is invalid, expired or revoked");

/** The caller of a management API, through the token runtime the composition root created. */
export async function authenticateBearer(rt: OAuthRuntime, authorization: string | null | undefined, now: Date): Promise<Principal> {
  const token = bearerToken(authorization);
  if (token.length > MAX_TOKEN_BYTES) throw invalid();
  const t = await resolveToken(rt, token, now);
  if (!t) throw invalid();
  // An API application's own token stands for no user: nothing on the management APIs is its to do.
  if (t.subject !== "user") throw unauthenticated(INVALID_TOKEN, "an application's own token cannot call the management API");
  if (!t.management)
    throw unauthenticated(INVALID_TOKEN, "the token's audience does not include the management API (scope urn:svc:iam:org:project:id:svc:aud)");
  return t.principal;
}
