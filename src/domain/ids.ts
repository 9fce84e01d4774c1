import { randomBytes } from "node:crypto";

// Crockford base32: ids sort by creation time (48-bit ms timestamp, as in
// ULID) and carry 80 random bits, so replicas need no coordination.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

export function newId(now = Date.now()): string {
  let out = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  const rnd = randomBytes(10);
  let bits = 0;
  let acc = 0;
  for (const byte of rnd) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** Caller-chosen ids must be URL-safe and reasonably short. */
export const ID_PATTERN = /^[A-Za-z0-9_.@-]{1,200}$/;
