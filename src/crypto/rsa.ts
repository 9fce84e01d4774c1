import { createPublicKey, generateKeyPair, type KeyObject } from "node:crypto";
import { promisify } from "node:util";

const generateKeyPairAsync = promisify(generateKeyPair);

export const MIN_RSA_BITS = 2048;
// Verifying with very large moduli is slow; nobody needs more than this.
export const MAX_RSA_BITS = 8192;

/**
 * A fresh RSA-2048 key pair, generated off the event loop. The private key is
 * PKCS#1 PEM ("RSA PRIVATE KEY"), which the key files of ZITADEL-style
 * clients carry and every RSA library reads; the public key is SPKI PEM.
 */
export async function generateRsaKeyPair(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generateKeyPairAsync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

const PUBLIC_PEM = /^\s*-----BEGIN (PUBLIC KEY|RSA PUBLIC KEY)-----\r?\n[A-Za-z0-9+/=\r\n]+-----END \1-----\s*$/;

/**
 * Reads a caller's RSA public key (SPKI "PUBLIC KEY" or PKCS#1 "RSA PUBLIC
 * KEY" PEM) and returns it as normalised SPKI PEM, or why it is refused.
 * Private keys and certificates are refused rather than reduced to their
 * public part: a caller must never send us a private key.
 */
export function normaliseRsaPublicKey(pem: string): { pem: string } | { error: string } {
  if (!PUBLIC_PEM.test(pem)) return { error: "public_key must be one PEM-encoded public key (PUBLIC KEY or RSA PUBLIC KEY)" };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: "pem" });
  } catch {
    return { error: "public_key is not a readable public key" };
  }
  if (key.asymmetricKeyType !== "rsa") return { error: "public_key must be an RSA key (RS256)" };
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) return { error: `public_key must have at least ${MIN_RSA_BITS} bits` };
  if (bits > MAX_RSA_BITS) return { error: `public_key must have at most ${MAX_RSA_BITS} bits` };
  return { pem: key.export({ type: "spki", format: "pem" }) as string };
}
