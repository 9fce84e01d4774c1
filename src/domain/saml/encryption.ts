// Encrypted assertions (SAML Core §2.3.4, XML Encryption 1.1): the signed Assertion becomes the content of an
// xenc:EncryptedData (Type Element) under AES-256-GCM with a fresh key and 96-bit IV (CipherValue = IV, ciphertext,
// 128-bit tag), and that key travels in an xenc:EncryptedKey for the SP's encryption certificate under RSA-OAEP
// (rsa-oaep-mgf1p: MGF1 with SHA-1, and SHA-1 as the OAEP digest, which is what every SP library here decrypts:
// node-saml's and samlify's xml-encryption read no other MGF, and OAEP's security does not rest on SHA-1's collision
// resistance). The signature is made before encryption, so it is checked on the Assertion after decryption.
import { constants, createCipheriv, type KeyObject, publicEncrypt, randomBytes, X509Certificate } from "node:crypto";
import { el, textEl, xmlns } from "./canonical.js";

const XENC = "http://www.w3.org/2001/04/xmlenc#";
const DS = "http://www.w3.org/2000/09/xmldsig#";
export const AES256_GCM = "http://www.w3.org/2009/xmlenc11#aes256-gcm";
export const RSA_OAEP_MGF1P = "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p";
const SHA1 = "http://www.w3.org/2000/09/xmldsig#sha1";

/** Public keys of SP encryption certificates (base64 DER), parsed once. */
const keys = new Map<string, KeyObject>();
function publicKeyOf(certBase64: string): KeyObject {
  let key = keys.get(certBase64);
  if (!key) {
    key = new X509Certificate(Buffer.from(certBase64, "base64")).publicKey;
    if (keys.size > 200) keys.clear();
    keys.set(certBase64, key);
  }
  return key;
}

/** The content of a saml:EncryptedAssertion (already canonical in place: xenc declared on EncryptedData). */
export function encryptedData(plaintext: string, certBase64: string): string {
  const key = randomBytes(32);
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([iv, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  const wrapped = publicEncrypt({ key: publicKeyOf(certBase64), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha1" }, key);
  const cipherData = (b: Buffer) => el("xenc:CipherData", {}, textEl("xenc:CipherValue", {}, b.toString("base64")));
  const encryptedKey = el(
    "xenc:EncryptedKey",
    {},
    el("xenc:EncryptionMethod", { Algorithm: RSA_OAEP_MGF1P }, el("ds:DigestMethod", { Algorithm: SHA1 }, "")) + cipherData(wrapped),
  );
  return el(
    "xenc:EncryptedData",
    { Type: `${XENC}Element` },
    el("xenc:EncryptionMethod", { Algorithm: AES256_GCM }, "") + el("ds:KeyInfo", {}, encryptedKey, xmlns("ds", DS)) + cipherData(body),
    xmlns("xenc", XENC),
  );
}
