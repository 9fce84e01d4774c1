// Bearer token → principal. Shared by every adapter (Connect, REST, SCIM,
// OAuth); nothing else turns a token into an identity. PATs, opaque and JWT
// access tokens are all accepted (one resolution path: resolve.ts); the
// management APIs (v2, SCIM) require the management audience (PATs always
// have it).
import type { Principal } from "../context.js";
import { unauthenticated } from "../errors.js";
import { MAX_TOKEN_BYTES, resolveToken } from "./resolve.js";
import { type OAuthRuntime, runtimeFor } from "./runtime.js";

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

/**
 * Transitional form of `authenticateBearer` for transports that do not hold the runtime yet: `handle` is what
 * createOAuth registered the runtime under (the Prisma client, or the Store given to createOAuth), or the runtime itself.
 */
export async function authenticate(handle: object, instanceId: string, authorization: string | null | undefined, now: Date): Promise<Principal> {
  const rt = runtimeFor(handle) ?? (isRuntime(handle) ? handle : undefined);
  if (!rt || rt.instanceId !== instanceId) {
    bearerToken(authorization);
    throw new Error("no token runtime for this instance (createOAuth registers it)");
  }
  return authenticateBearer(rt, authorization, now);
}

const isRuntime = (x: object): x is OAuthRuntime => "tokens" in x && "keys" in x && "issuer" in x;
