import { hash, verify } from "@node-rs/argon2";

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane); argon2id is the
// library's default variant (its enum is a const enum, unusable under
// isolatedModules). @node-rs/argon2 hashes on libuv's thread pool, so the
// event loop is never blocked.
const PARAMS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

export function verifyArgon2(encoded: string, password: string): Promise<boolean> {
  return verify(encoded, password);
}

/** Imported hashes svc can verify (and re-hash to argon2id on the next login). */
export function importedHashFormat(encoded: string): "argon2" | "bcrypt" | "scrypt" | "pbkdf2" | undefined {
  if (/^\$argon2(id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/.test(encoded)) return "argon2";
  if (/^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(encoded)) return "bcrypt";
  if (/^\$scrypt\$ln=\d+,r=\d+,p=\d+\$[A-Za-z0-9+/.=-]+\$[A-Za-z0-9+/.=-]+$/.test(encoded)) return "scrypt";
  if (/^\$pbkdf2(-sha1|-sha256|-sha512)?\$(i=)?\d+\$[A-Za-z0-9+/.=-]+\$[A-Za-z0-9+/.=-]+$/.test(encoded)) return "pbkdf2";
  return undefined;
}
