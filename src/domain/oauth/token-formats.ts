// Access token formats as strategies: an opaque secret looked up by its hash,
// or a JWT (RFC 9068, typ at+jwt; RS256 unless the app asks for ES256 or EdDSA) whose jti names its row. Each knows
// how to encode a new token and how to identify a presented one; resolve.ts
// and issue.ts do the rest the same way for both.
import { createHash, type KeyObject } from "node:crypto";
import { decodeProtectedHeader, jwtVerify } from "jose";
import { algOf } from "../../crypto/signing-keys.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { Store } from "../../store/index.js";
import type { StoredPatRow, StoredTokenRow } from "../../store/tokens.js";
import type { SigningAlg } from "../access/app-settings.js";

/** What a format needs: the issuer and the signing keys (sign, and the public key of a kid). */
export interface FormatContext {
  issuer: string;
  keys: {
    sign(claims: Record<string, unknown>, typ?: string, alg?: SigningAlg): Promise<string>;
    publicKey(kid: string): Promise<KeyObject | undefined>;
  };
}

/** The claims of an access token (a JWT carries them; an opaque token's row holds what it needs). */
export interface AccessClaims {
  jti: string;
  sub: string;
  aud: string[];
  client_id: string;
  scope: string | undefined;
  iat: number;
  exp: number;
  /** Role claims (JWT only). */
  extra: Record<string, unknown>;
  /** The JWT's algorithm (the app's id_token_signed_response_alg); RS256 when absent. */
  alg?: SigningAlg;
}

/** A presented token, identified: its cache key and how to read its row(s). */
export interface Presented {
  key: string;
  lookup(store: Store): Promise<{ pat: StoredPatRow | null; oauth: StoredTokenRow | null }>;
}

export interface TokenFormat {
  readonly name: "opaque" | "jwt";
  /** The token handed out, and the hash its row is found by (opaque only). */
  encode(ctx: FormatContext, claims: AccessClaims): Promise<{ token: string; tokenHash: Uint8Array<ArrayBuffer> | null }>;
  /** A presented token of this format → its key and lookup; undefined when it cannot be one of ours. */
  identify(ctx: FormatContext, token: string, now: Date): Promise<Presented | undefined>;
}

const cacheKeyOf = (token: string) => createHash("sha256").update(token).digest("base64");

export const opaqueFormat: TokenFormat = {
  name: "opaque",
  async encode() {
    const token = newOpaqueToken();
    return { token, tokenHash: sha256(token) };
  },
  async identify(_ctx, token) {
    return {
      key: `o:${cacheKeyOf(token)}`,
      // A PAT and an opaque access token share the shape: both are looked up by hash at once.
      async lookup(store) {
        const { pat, oauth } = await store.tokens.findByHash(sha256(token));
        return { pat, oauth: oauth?.format === "opaque" ? oauth : null };
      },
    };
  },
};

export const jwtFormat: TokenFormat = {
  name: "jwt",
  async encode(ctx, c) {
    const token = await ctx.keys.sign(
      { iss: ctx.issuer, sub: c.sub, aud: c.aud, client_id: c.client_id, scope: c.scope, iat: c.iat, nbf: c.iat, exp: c.exp, jti: c.jti, ...c.extra },
      "at+jwt",
      c.alg,
    );
    return { token, tokenHash: null };
  },
  async identify(ctx, token, now) {
    const jti = await verifyAccessJwt(ctx, token, now);
    if (!jti) return undefined;
    return {
      key: `j:${jti}`,
      async lookup(store) {
        const row = await store.tokens.findById(jti);
        return { pat: null, oauth: row?.format === "jwt" ? row : null };
      },
    };
  },
};

/** The format of a presented token: a JWT has three dot-separated parts. */
export const formatOf = (token: string): TokenFormat => (token.split(".").length === 3 ? jwtFormat : opaqueFormat);

/** The format a client issues (its access token type). */
export const formatFor = (type: "BEARER" | "JWT"): TokenFormat => (type === "JWT" ? jwtFormat : opaqueFormat);

/** Signature, issuer, type and lifetime of one of our JWT access tokens → its jti. */
async function verifyAccessJwt(ctx: FormatContext, token: string, now: Date): Promise<string | undefined> {
  try {
    const header = decodeProtectedHeader(token);
    if (typeof header.alg !== "string" || typeof header.kid !== "string") return undefined;
    const key = await ctx.keys.publicKey(header.kid);
    // The algorithm is the key's, never the header's choice.
    const alg = key && algOf(key);
    if (!key || alg !== header.alg) return undefined;
    const { payload } = await jwtVerify(token, key, { algorithms: [alg], issuer: ctx.issuer, typ: "at+jwt", currentDate: now });
    return typeof payload.jti === "string" ? payload.jti : undefined;
  } catch {
    return undefined;
  }
}
