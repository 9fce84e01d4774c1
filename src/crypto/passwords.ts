import { pbkdf2, scrypt, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";
import { hash, verify } from "@node-rs/argon2";
import { verify as bcryptVerify } from "@node-rs/bcrypt";

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane); argon2id is the
// library's default variant (its enum is a const enum, unusable under
// isolatedModules). @node-rs/argon2 hashes on libuv's thread pool, so the
// event loop is never blocked.
const PARAMS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
const ARGON2_VERSION = 19;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

/**
 * The most expensive parameters an imported hash may have, per algorithm. An
 * administrator (or a leaked import file) choosing absurd costs would
 * otherwise let every sign-in of that user pin a thread of the pool for
 * seconds or take a GiB of memory: such hashes are refused at import, and a
 * stored one above the ceilings (imported before they were lowered) never
 * verifies. Each default sits just above what common systems write (Django's
 * PBKDF2, Laravel's and Rails' bcrypt, RFC 9106's argon2id, passlib's scrypt),
 * and one check at the ceiling takes under a second on one core (scrypt: 0.3 s
 * per unit of p).
 */
export interface HashCeilings {
  pbkdf2Iterations: number;
  bcryptCost: number;
  argon2MemoryKiB: number;
  argon2Passes: number;
  argon2Parallelism: number;
  scryptMemoryKiB: number;
  scryptParallelism: number;
}

export const DEFAULT_HASH_CEILINGS: Readonly<HashCeilings> = {
  pbkdf2Iterations: 1_000_000,
  bcryptCost: 13,
  argon2MemoryKiB: 65_536,
  argon2Passes: 10,
  argon2Parallelism: 8,
  scryptMemoryKiB: 65_536,
  scryptParallelism: 4,
};

// Set once by the composition root from SVC_PASSWORD_HASH_MAX_*: the same for every request of the process.
let ceilings: Readonly<HashCeilings> = DEFAULT_HASH_CEILINGS;

export function setHashCeilings(value: Readonly<HashCeilings>): void {
  ceilings = { ...value };
}

export function hashCeilings(): Readonly<HashCeilings> {
  return ceilings;
}

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

// scrypt's working set is 128·N·r bytes (plus a little); node refuses to go past maxmem.
const scryptMemory = (log2N: number, r: number) => 128 * 2 ** log2N * r;

/**
 * Parses a stored or imported hash: undefined when the format is unsupported or
 * the hash malformed. Says nothing about its cost (costTooHigh does).
 */
export function parsePasswordHash(encoded: string): ParsedHash | undefined {
  let m = ARGON2.exec(encoded);
  if (m) {
    const [memory, passes, lanes] = [Number(m[3]), Number(m[4]), Number(m[5])];
    if (memory < 1 || passes < 1 || lanes < 1) return undefined;
    return { format: "argon2", variant: m[1] as "argon2i" | "argon2d" | "argon2id", version: Number(m[2]), memory, passes, lanes };
  }
  m = BCRYPT.exec(encoded);
  if (m) {
    const cost = Number(m[1]);
    return cost >= 4 && cost <= 31 ? { format: "bcrypt", cost } : undefined;
  }
  m = SCRYPT.exec(encoded);
  if (m) {
    const [log2N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const hashBytes = decodeBase64(m[5] as string);
    if (log2N < 1 || log2N > 63 || r < 1 || p < 1 || hashBytes.length < 16 || hashBytes.length > 128) return undefined;
    return { format: "scrypt", log2N, r, p, salt: decodeBase64(m[4] as string), hash: hashBytes };
  }
  m = PBKDF2.exec(encoded);
  if (m) {
    const iterations = Number(m[2]);
    const hashBytes = decodeBase64(m[4] as string);
    if (!Number.isSafeInteger(iterations) || iterations < 1 || hashBytes.length < 16 || hashBytes.length > 128) return undefined;
    return { format: "pbkdf2", digest: (m[1] ?? "sha1") as Digest, iterations, salt: decodeBase64(m[3] as string), hash: hashBytes };
  }
  return undefined;
}

/** Which parameter of a parsed hash is above its ceiling, in words; undefined when none is. */
export function costTooHigh(parsed: ParsedHash, c: Readonly<HashCeilings> = ceilings): string | undefined {
  const over = (what: string, value: number, max: number) => (value > max ? `${what} ${value} is above the ceiling of ${max}` : undefined);
  switch (parsed.format) {
    case "argon2":
      return (
        over("argon2 memory (KiB)", parsed.memory, c.argon2MemoryKiB) ??
        over("argon2 passes", parsed.passes, c.argon2Passes) ??
        over("argon2 parallelism", parsed.lanes, c.argon2Parallelism)
      );
    case "bcrypt":
      return over("bcrypt cost", parsed.cost, c.bcryptCost);
    case "scrypt":
      return (
        over("scrypt memory (KiB, 128·N·r)", scryptMemory(parsed.log2N, parsed.r) / 1024, c.scryptMemoryKiB) ??
        over("scrypt parallelism", parsed.p, c.scryptParallelism)
      );
    case "pbkdf2":
      return over("PBKDF2 iterations", parsed.iterations, c.pbkdf2Iterations);
  }
}

/** What an imported hash is: its format, or why it is refused. */
export type ImportedHash = { format: ParsedHash["format"] } | { refused: "unsupported" } | { refused: "cost"; reason: string };

export function checkImportedHash(encoded: string): ImportedHash {
  const parsed = parsePasswordHash(encoded);
  if (!parsed) return { refused: "unsupported" };
  const reason = costTooHigh(parsed);
  return reason ? { refused: "cost", reason } : { format: parsed.format };
}

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;
const pbkdf2Async = promisify(pbkdf2);

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface Verification {
  ok: boolean;
  /** A right password whose hash is not argon2id with the current parameters: store a fresh one. */
  needsRehash: boolean;
  /** The stored hash's format (undefined when unsupported). */
  format?: ParsedHash["format"];
}

/**
 * Verifies a password against an argon2 (any variant), bcrypt, scrypt or
 * PBKDF2 hash. Every algorithm runs on libuv's thread pool (argon2 and bcrypt
 * in native code, scrypt and PBKDF2 in node's crypto), never on the event
 * loop. Every comparison of derived bytes is constant-time (argon2's and
 * bcrypt's inside their libraries). An unsupported or malformed hash, or one
 * above the cost ceilings, never verifies.
 */
export async function verifyPassword(encoded: string, password: string): Promise<Verification> {
  const parsed = parsePasswordHash(encoded);
  if (!parsed || costTooHigh(parsed)) return { ok: false, needsRehash: false, format: parsed?.format };
  const ok = await derivedMatches(parsed, encoded, password);
  if (parsed.format !== "argon2") return { ok, needsRehash: ok, format: parsed.format };
  const current =
    parsed.variant === "argon2id" &&
    parsed.version === ARGON2_VERSION &&
    parsed.memory === PARAMS.memoryCost &&
    parsed.passes === PARAMS.timeCost &&
    parsed.lanes === PARAMS.parallelism;
  return { ok, needsRehash: ok && !current, format: "argon2" };
}

async function derivedMatches(parsed: ParsedHash, encoded: string, password: string): Promise<boolean> {
  switch (parsed.format) {
    case "argon2":
      return verify(encoded, password).catch(() => false);
    case "bcrypt":
      return bcryptVerify(password, encoded).catch(() => false);
    case "scrypt": {
      const { log2N, r, p, salt } = parsed;
      const derived = await scryptAsync(password, salt, parsed.hash.length, { N: 2 ** log2N, r, p, maxmem: scryptMemory(log2N, r) + 1024 * 1024 });
      return sameBytes(derived, parsed.hash);
    }
    case "pbkdf2": {
      const derived = await pbkdf2Async(password, parsed.salt, parsed.iterations, parsed.hash.length, parsed.digest);
      return sameBytes(derived, parsed.hash);
    }
  }
}
