import { randomFillSync } from "node:crypto";

// Crockford base32: ids sort by creation time (48-bit ms timestamp, as in
// ULID) and carry 80 random bits, so replicas need no coordination.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

// Random bytes are drawn from a pool refilled 4 KiB at a time: one system call per ~400 ids instead of one each.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

export function newId(now = Date.now()): string {
  let out = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let bits = 0;
  let acc = 0;
  for (let i = poolOffset; i < poolOffset + 10; i++) {
    acc = (acc << 8) | (pool[i] as number);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  poolOffset += 10;
  return out;
}

/** Caller-chosen ids must be URL-safe and reasonably short. */
export const ID_PATTERN = /^[A-Za-z0-9_.@-]{1,200}$/;
