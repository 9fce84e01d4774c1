import { pbkdf2, scrypt, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";
import { hash, verify } from "@node-rs/argon2";
import bcrypt from "bcryptjs";

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane); argon2id is the
// library's default variant (its enum is a const enum, unusable under
// isolatedModules). @node-rs/argon2 hashes on libuv's thread pool, so the
// event loop is never blocked.
const PARAMS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
const ARGON2_VERSION = 19;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

// Imported hashes come from administrators, but a hash with absurd cost
// parameters would still let one login pin a CPU or exhaust memory: anything
// beyond these bounds is refused at import and never verified.
const LIMITS = {
  argon2MemoryKiB: 1024 * 1024,
  argon2Passes: 64,
  argon2Lanes: 64,
  bcryptCost: 16,
  scryptMemoryBytes: 256 * 1024 * 1024,
  scryptParallelism: 16,
  pbkdf2Iterations: 10_000_000,
} as const;

type Digest = "sha1" | "sha256" | "sha512";

export type ParsedHash =
  | { format: "argon2"; variant: "argon2i" | "argon2d" | "argon2id"; version: number; memory: number; passes: number; lanes: number }
  | { format: "bcrypt"; cost: number }
  | { format: "scrypt"; log2N: number; r: number; p: number; salt: Buffer; hash: Buffer }
  | { format: "pbkdf2"; digest: Digest; iterations: number; salt: Buffer; hash: Buffer };

const ARGON2 = /^\$(argon2id|argon2i|argon2d)\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/;
const BCRYPT = /^\$2[aby]\$(\d{2})\$[./A-Za-z0-9]{53}$/;
const SCRYPT = /^\$scrypt\$ln=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/.]+={0,2})\$([A-Za-z0-9+/.]+={0,2})$/;
// Both the PHC-like `$pbkdf2-sha256$i=1000$salt$hash` and passlib's `$pbkdf2-sha256$1000$salt$hash`
// (passlib's plain `$pbkdf2$` is SHA-1).
const PBKDF2 = /^\$pbkdf2(?:-(sha1|sha256|sha512))?\$(?:i=)?(\d+)\$([A-Za-z0-9+/.]+={0,2})\$([A-Za-z0-9+/.]+={0,2})$/;

/** Standard base64 or passlib's "adapted" base64 ('.' for '+'), padding optional. */
function decodeBase64(text: string): Buffer {
  return Buffer.from(text.replace(/\./g, "+").replace(/=+$/, ""), "base64");
}

/** Parses a stored or imported hash; undefined when unsupported or beyond the cost limits. */
export function parsePasswordHash(encoded: string): ParsedHash | undefined {
  let m = ARGON2.exec(encoded);
  if (m) {
    const [memory, passes, lanes] = [Number(m[3]), Number(m[4]), Number(m[5])];
    if (memory > LIMITS.argon2MemoryKiB || passes > LIMITS.argon2Passes || lanes < 1 || lanes > LIMITS.argon2Lanes) return undefined;
    return { format: "argon2", variant: m[1] as "argon2i" | "argon2d" | "argon2id", version: Number(m[2]), memory, passes, lanes };
  }
  m = BCRYPT.exec(encoded);
  if (m) {
    const cost = Number(m[1]);
    return cost >= 4 && cost <= LIMITS.bcryptCost ? { format: "bcrypt", cost } : undefined;
  }
  m = SCRYPT.exec(encoded);
  if (m) {
    const [log2N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const salt = decodeBase64(m[4] as string);
    const hashBytes = decodeBase64(m[5] as string);
    if (log2N < 1 || log2N > 30 || r < 1 || p < 1 || p > LIMITS.scryptParallelism) return undefined;
    if (scryptMemory(log2N, r) > LIMITS.scryptMemoryBytes || hashBytes.length < 16 || hashBytes.length > 128) return undefined;
    return { format: "scrypt", log2N, r, p, salt, hash: hashBytes };
  }
  m = PBKDF2.exec(encoded);
  if (m) {
    const iterations = Number(m[2]);
    const hashBytes = decodeBase64(m[4] as string);
    if (iterations < 1 || iterations > LIMITS.pbkdf2Iterations || hashBytes.length < 16 || hashBytes.length > 128) return undefined;
    return { format: "pbkdf2", digest: (m[1] ?? "sha1") as Digest, iterations, salt: decodeBase64(m[3] as string), hash: hashBytes };
  }
  return undefined;
}

/** Imported hashes svc can verify (and re-hash to argon2id on the next login). */
export function importedHashFormat(encoded: string): ParsedHash["format"] | undefined {
  return parsePasswordHash(encoded)?.format;
}

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;
const pbkdf2Async = promisify(pbkdf2);

// scrypt's working set is 128·N·r bytes (plus a little); node refuses to go past maxmem.
const scryptMemory = (log2N: number, r: number) => 128 * 2 ** log2N * r;

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Verifies a password against an argon2 (any variant), bcrypt, scrypt or
 * PBKDF2 hash. `needsRehash` tells the caller to store a fresh argon2id hash
 * with the current parameters once the password is known to be right.
 * Every comparison of derived bytes is constant-time (argon2's inside the
 * library). An unsupported or malformed hash never verifies.
 */
export async function verifyPassword(encoded: string, password: string): Promise<{ ok: boolean; needsRehash: boolean }> {
  const parsed = parsePasswordHash(encoded);
  if (!parsed) return { ok: false, needsRehash: false };
  let ok: boolean;
  switch (parsed.format) {
    case "argon2": {
      ok = await verify(encoded, password).catch(() => false);
      const current =
        parsed.variant === "argon2id" &&
        parsed.version === ARGON2_VERSION &&
        parsed.memory === PARAMS.memoryCost &&
        parsed.passes === PARAMS.timeCost &&
        parsed.lanes === PARAMS.parallelism;
      return { ok, needsRehash: ok && !current };
    }
    case "bcrypt": {
      // bcryptjs works in chunks between event-loop turns; its salt is the first 29 characters.
      const recomputed = await bcrypt.hash(password, encoded.slice(0, 29));
      ok = sameBytes(Buffer.from(recomputed), Buffer.from(encoded));
      break;
    }
    case "scrypt": {
      const { log2N, r, p, salt } = parsed;
      const derived = await scryptAsync(password, salt, parsed.hash.length, {
        N: 2 ** log2N,
        r,
        p,
        maxmem: scryptMemory(log2N, r) + 1024 * 1024,
      });
      ok = sameBytes(derived, parsed.hash);
      break;
    }
    case "pbkdf2": {
      const derived = await pbkdf2Async(password, parsed.salt, parsed.iterations, parsed.hash.length, parsed.digest);
      ok = sameBytes(derived, parsed.hash);
      break;
    }
  }
  return { ok, needsRehash: ok };
}
