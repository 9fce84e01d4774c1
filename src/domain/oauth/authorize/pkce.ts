// PKCE (RFC 7636) with S256 only: `plain` sends the verifier itself through the browser, which is what PKCE exists to
// avoid (OAuth 2.0 Security BCP §2.1.1).
import { createHash, timingSafeEqual } from "node:crypto";

/** A S256 challenge is the base64url SHA-256 of the verifier: 43 characters, no padding. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/** Why an authorization request's code_challenge and code_challenge_method are refused; undefined when they are fine. */
export function challengeProblem(challenge: string | undefined, method: string | undefined, required: boolean): string | undefined {
  if (challenge === undefined) {
    if (method !== undefined) return "code_challenge_method without code_challenge";
    return required ? "code_challenge is required (PKCE with S256) for this client" : undefined;
  }
  // RFC 7636 §4.3: a missing method means plain.
  if (method !== "S256") return "code_challenge_method must be S256 (plain is not supported)";
  if (!CHALLENGE.test(challenge)) return "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)";
  return undefined;
}

/** Whether the verifier is well formed and its S256 challenge is `challenge` (compared in constant time). */
export function verifierMatches(challenge: string, verifier: string): boolean {
  if (!VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash("sha256").update(verifier, "ascii").digest("base64url"));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
