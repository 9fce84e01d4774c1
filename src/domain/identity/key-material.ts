// Keys for the JWT assertions of machine users and applications: the caller's
// RSA public key, checked and normalised, or a new pair whose private half is
// handed out once (in a key file) and never stored.
import { generateRsaKeyPair, normaliseRsaPublicKey } from "../../crypto/rsa.js";
import { invalidArgument } from "../errors.js";

const MAX_PUBLIC_KEY_BYTES = 16 * 1024;

/** `invalidId` is the message id of the InvalidArgument for an unusable public key. */
export async function keyMaterial(publicKey: Uint8Array | undefined, invalidId: string): Promise<{ publicKeyPem: string; privateKeyPem?: string }> {
  if (publicKey === undefined) return generateRsaKeyPair();
  if (publicKey.byteLength > MAX_PUBLIC_KEY_BYTES) throw invalidArgument(invalidId, "public_key is too large", { field: "public_key" });
  const parsed = normaliseRsaPublicKey(Buffer.from(publicKey).toString("utf8"));
  if ("error" in parsed) throw invalidArgument(invalidId, parsed.error, { field: "public_key" });
  return { publicKeyPem: parsed.pem };
}
