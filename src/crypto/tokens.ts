import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** 256 random bits, base64url: opaque bearer secrets (PATs, opaque access tokens). */
export function newOpaqueToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Tokens are looked up by their SHA-256, so the database never holds a usable secret. */
export function sha256(value: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash("sha256").update(value, "utf8").digest());
}

/** Whether two hashes are equal, in time independent of where they differ. */
export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
