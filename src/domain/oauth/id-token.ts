// ID tokens of the authorization code flow: at_hash (OIDC Core §3.1.3.6), and reading an ID token we issued when a
// client hands it back (id_token_hint at the authorization and end-session endpoints).
import { createHash } from "node:crypto";
import { compactVerify, decodeProtectedHeader } from "jose";
import { algOf } from "../../crypto/signing-keys.js";
import type { SigningAlg } from "../access/app-settings.js";
import { MAX_TOKEN_BYTES } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";

/**
 * at_hash: the base64url of the left half of the access token's hash, SHA-256 for RS256 and ES256, SHA-512 for EdDSA
 * with Ed25519 (the hash Ed25519 itself uses, as OpenID's errata and certified relying parties read it).
 */
export function atHash(accessToken: string, alg: SigningAlg = "RS256"): string {
  const digest = createHash(alg === "EdDSA" ? "sha512" : "sha256")
    .update(accessToken, "ascii")
    .digest();
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

/** What an ID token we issued says about its user and sign-in. */
export interface IdTokenHint {
  sub: string;
  /** The session it was issued from, when it came from one. */
  sid?: string;
  aud: string[];
  azp?: string;
}

/**
 * An ID token this issuer signed (with a key still in the JWKS), read whatever its expiry: a hint names a past
 * sign-in (OIDC Core §3.1.2.1), and RP-initiated logout explicitly accepts expired ones. Undefined when it is not
 * one of ours.
 */
export async function readIdTokenHint(rt: OAuthRuntime, token: string): Promise<IdTokenHint | undefined> {
  if (token.length > MAX_TOKEN_BYTES) return undefined;
  try {
    const header = decodeProtectedHeader(token);
    if (typeof header.alg !== "string" || typeof header.kid !== "string" || (header.typ !== undefined && header.typ !== "JWT")) return undefined;
    const key = await rt.keys.publicKey(header.kid);
    // The algorithm is the key's, never the header's choice.
    const alg = key && algOf(key);
    if (!key || alg !== header.alg) return undefined;
    const { payload } = await compactVerify(token, key, { algorithms: [alg] });
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
    if (claims.iss !== rt.issuer || typeof claims.sub !== "string") return undefined;
    const aud = typeof claims.aud === "string" ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud.filter((a) => typeof a === "string") : [];
    if (aud.length === 0) return undefined;
    return {
      sub: claims.sub,
      aud,
      ...(typeof claims.sid === "string" ? { sid: claims.sid } : {}),
      ...(typeof claims.azp === "string" ? { azp: claims.azp } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The client an ID token was issued to: its azp, or its only audience. */
export const hintClient = (h: IdTokenHint): string | undefined => h.azp ?? (h.aud.length === 1 ? h.aud[0] : undefined);
