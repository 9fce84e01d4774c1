// JWT assertions (RFC 7523): the JWT bearer grant's assertion and client
// assertions (private_key_jwt) are checked alike; a used assertion is recorded
// in the store (replay detection across replicas).
import { createPublicKey, type KeyObject } from "node:crypto";
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from "jose";
import type { TokenRow, UsedAssertion } from "../../store/tokens.js";
import { invalidGrant } from "./errors.js";
import type { OAuthRuntime } from "./runtime.js";

export const GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** Accepted clock skew for iat/exp/nbf of assertions. */
const SKEW_S = 60;
const MAX_ASSERTION_AGE_S = 3600;
const MAX_ASSERTION_BYTES = 8 * 1024;

/** The header's kid of an RS256 assertion (throws on anything else). */
export function assertionHeader(assertion: string): { kid: string } {
  if (assertion.length > MAX_ASSERTION_BYTES) throw new Error("too long");
  const header = decodeProtectedHeader(assertion);
  if (header.alg !== "RS256") throw new Error("alg");
  if (typeof header.kid !== "string" || header.kid.length === 0 || header.kid.length > 100) throw new Error("kid");
  return { kid: header.kid };
}

/** The claims of a JWS, unverified: only to find the key that verifies it. */
export function unverifiedClaims(jws: string): Record<string, unknown> {
  const part = jws.split(".")[1];
  if (!part) throw new Error("malformed");
  const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown;
  if (!claims || typeof claims !== "object" || Array.isArray(claims)) throw new Error("malformed");
  return claims as Record<string, unknown>;
}

/** Header and claims of an assertion, or undefined when it is not an RS256 JWT with a kid. */
export function readAssertion(assertion: string): { kid: string; claims: Record<string, unknown> } | undefined {
  try {
    const { kid } = assertionHeader(assertion);
    return { kid, claims: unverifiedClaims(assertion) };
  } catch {
    return undefined;
  }
}

const importedKeys = new Map<string, KeyObject>();
function publicKeyObject(id: string, pem: string): KeyObject {
  const k = `${id}\n${pem}`;
  let key = importedKeys.get(k);
  if (!key) {
    key = createPublicKey(pem);
    if (importedKeys.size > 10_000) importedKeys.clear();
    importedKeys.set(k, key);
  }
  return key;
}

export interface AssertionCheck {
  assertion: string;
  kid: string;
  pem: string;
  now: Date;
  audiences: string[];
  subject: string;
  /** Whose assertion it is: the marker row belongs to the user or the app (and goes with it). */
  owner: UsedAssertion["owner"];
}

/**
 * Signature (RS256 only), exp in the future, iat present, not in the future
 * beyond the skew and at most an hour old, aud naming one of `audiences`.
 * Returns the used-assertion record that makes it single use: the jti (or,
 * without one, the assertion itself) until the assertion expires.
 */
async function verified(rt: OAuthRuntime, c: AssertionCheck): Promise<UsedAssertion> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(c.assertion, publicKeyObject(c.kid, c.pem), {
      algorithms: ["RS256"],
      audience: c.audiences,
      issuer: c.subject,
      subject: c.subject,
      currentDate: c.now,
      clockTolerance: SKEW_S,
      requiredClaims: ["exp", "iat"],
    }));
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw invalidGrant("the assertion has expired");
    if (err instanceof joseErrors.JWTClaimValidationFailed) throw invalidGrant(`the assertion's ${err.claim} claim is not acceptable`);
    throw invalidGrant("the assertion's signature does not verify");
  }
  const nowS = Math.floor(c.now.getTime() / 1000);
  const iat = payload.iat as number;
  const exp = payload.exp as number;
  if (iat > nowS + SKEW_S) throw invalidGrant("the assertion was issued in the future");
  if (nowS - iat > MAX_ASSERTION_AGE_S) throw invalidGrant("the assertion is older than one hour");
  // Without a jti the assertion is identified by its signing input (header and claims): the encoded
  // signature is malleable (base64url padding bits are ignored on decoding), the signed part is not.
  const signed = c.assertion.slice(0, c.assertion.lastIndexOf("."));
  return {
    instanceId: rt.instanceId,
    subject: c.subject,
    identifier: typeof payload.jti === "string" ? payload.jti : signed,
    owner: c.owner,
    // Kept while the assertion could still be accepted: until exp (with the skew), but never past the
    // one-hour age limit, so a far-future exp does not keep markers for years.
    expiresAt: new Date(Math.max(Math.min(exp + SKEW_S, iat + MAX_ASSERTION_AGE_S + 1), nowS + SKEW_S) * 1000),
    at: c.now,
  };
}

/** Verifies a client assertion and records it as used now (refused when it already was). */
export async function verifyAssertion(rt: OAuthRuntime, c: AssertionCheck): Promise<void> {
  const used = await verified(rt, c);
  if (!(await rt.store.tokens.recordAssertion(used))) throw invalidGrant("the assertion was already used");
}

/**
 * Verifies a grant's assertion and returns its used-assertion marker, which the JWT profile grant writes in the
 * same INSERT as the token (and refuses if it existed).
 */
export async function verifyAssertionDeferred(rt: OAuthRuntime, c: AssertionCheck): Promise<TokenRow> {
  return rt.store.tokens.markerOf(await verified(rt, c));
}
