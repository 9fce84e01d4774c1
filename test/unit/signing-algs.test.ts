// The signing algorithms' pure parts: which algorithm a key signs with (what verification insists on, never the
// token's header), and at_hash per algorithm (OIDC Core §3.1.3.6: the left half of the hash the algorithm uses,
// SHA-512 for Ed25519), checked against WebCrypto's digests.
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { algOf } from "../../src/crypto/signing-keys.js";
import { atHash } from "../../src/domain/oauth/id-token.js";

const leftHalf = async (hash: string, token: string) => {
  const d = new Uint8Array(await crypto.subtle.digest(hash, new TextEncoder().encode(token)));
  return Buffer.from(d.subarray(0, d.length / 2)).toString("base64url");
};

describe("algOf", () => {
  it("names RS256, ES256 (P-256 only) and EdDSA (Ed25519), and nothing for other keys", () => {
    expect(algOf(generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey)).toBe("RS256");
    expect(algOf(generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey)).toBe("ES256");
    expect(algOf(generateKeyPairSync("ed25519").publicKey)).toBe("EdDSA");
    expect(algOf(generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey)).toBeUndefined();
    expect(algOf(generateKeyPairSync("ed448").publicKey)).toBeUndefined();
  });
});

describe("atHash", () => {
  it("is the left half of SHA-256 for RS256 (the default) and ES256, of SHA-512 for EdDSA", async () => {
    const token = "an-access-token.with.dots";
    expect(atHash(token)).toBe(await leftHalf("SHA-256", token));
    expect(atHash(token, "ES256")).toBe(await leftHalf("SHA-256", token));
    expect(atHash(token, "EdDSA")).toBe(await leftHalf("SHA-512", token));
    expect(atHash(token, "EdDSA")).toHaveLength(43);
  });
});
