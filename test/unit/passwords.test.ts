// Password verification of imported hashes. Every vector below was made by a
// tool independent of svc for the password "Correct-Horse-7!":
// argon2: the reference `argon2` CLI (Debian package argon2); bcrypt:
// `htpasswd -B` (apache2-utils), Python's crypt(3) and pyca bcrypt; scrypt
// and PBKDF2: Python's passlib and hashlib (scrypt, pbkdf2_hmac).
import { describe, expect, it } from "@jest/globals";
import {
  checkImportedHash,
  costTooHigh,
  DEFAULT_HASH_CEILINGS,
  hashPassword,
  type ParsedHash,
  parsePasswordHash,
  verifyPassword,
} from "../../src/crypto/passwords.js";

const importedHashFormat = (encoded: string) => {
  const r = checkImportedHash(encoded);
  return "format" in r ? r.format : undefined;
};

const PASSWORD = "Correct-Horse-7!";

const VECTORS: Record<string, string> = {
  "argon2i (argon2 CLI)": "$argon2i$v=19$m=1024,t=2,p=1$c29tZXNhbHQxMjM$wClJaJtG8rvKo42EX2roHcpwfKZPV8IEph3CwycBksU",
  "argon2d (argon2 CLI)": "$argon2d$v=19$m=1024,t=2,p=1$c29tZXNhbHQxMjM$RzGiceWeufHYE//bm8DTFBoQXzh+D3FRoyQKEJKEzEg",
  "argon2id, other parameters (argon2 CLI)": "$argon2id$v=19$m=1024,t=2,p=1$c29tZXNhbHQxMjM$Q/MvYnaC+FRpLms+mPF1PAvOWuNQA6YcKoOf6Ik4eqU",
  "argon2id version 0x10 (argon2 CLI)": "$argon2id$v=16$m=19456,t=2,p=1$c29tZXNhbHQxMjM$9YQEG3h8e4DLZimciv6TsUFXLuHdnfKHaYdbruxu1fY",
  "bcrypt $2y$ (htpasswd -B)": "$2y$05$OCfjVmrquiWTBwGarFiDi.c/EnwcP20XDjlQk/cSSgHTfocKNYo5C",
  "bcrypt $2b$ (crypt(3))": "$2b$05$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey",
  "bcrypt $2a$ (pyca bcrypt)": "$2a$05$wNFVORtUb3JYiXsale3hfu9XMqTYYAqldfRl7Y7KbZjb3zor9i7.S",
  "scrypt (passlib)": "$scrypt$ln=10,r=8,p=1$urc2hrDW+h9jjBECoDTmvA$nvx3uu4b9RvSaos/QqUTWnp1epsuaIpG9b5ewbMtOs8",
  "scrypt p=2 (hashlib.scrypt)": "$scrypt$ln=10,r=8,p=2$c6MCup/cCD5KeS1cMYHZ3Q$LW4ExO3oHomOg7X8PT56JY64wQbLeiVhMu4Jly3mgV4",
  "pbkdf2-sha256 i= form (hashlib.pbkdf2_hmac)": "$pbkdf2-sha256$i=1000$JGuFf0YXU4AsCI0qoCrRuQ$jUVcBeG6BfrV5rz6u+FVmJtrW0qYvoEK0Mv3QG1pVgo",
  "pbkdf2-sha256 passlib form": "$pbkdf2-sha256$1000$5LxXCoEwRgih9F5LiTFmrA$hDD21078e.TxwjJiOX16mCXHNPk4AVm5pn6.K5/hq8c",
  "pbkdf2 (SHA-1) passlib form": "$pbkdf2$1000$PYew9v5f632v9R4DYEyJ0Q$zpCmtBVIyKCN.i7rwzFhhjGDw8M",
  "pbkdf2-sha512 passlib form":
    "$pbkdf2-sha512$1000$Tsm5N0YohbD2PifEuBcCAA$hq3rTyYNrW7GiF98AHDIrX9Q2fqlrEX5cEZcELIUSw/6BzaV1vyd7ReOO0U34aTiuTr53sCt0npdsQlZZUKO9A",
};

describe("verifyPassword", () => {
  it.each(Object.entries(VECTORS))("verifies %s and asks for a rehash", async (_name, encoded) => {
    expect(await verifyPassword(encoded, PASSWORD)).toMatchObject({ ok: true, needsRehash: true });
  });

  it.each(Object.entries(VECTORS))("refuses a wrong password for %s", async (_name, encoded) => {
    expect(await verifyPassword(encoded, "Correct-Horse-7?")).toMatchObject({ ok: false, needsRehash: false });
    expect(await verifyPassword(encoded, "")).toMatchObject({ ok: false, needsRehash: false });
  });

  it("does not ask to rehash argon2id with svc's own parameters", async () => {
    const own = await hashPassword(PASSWORD);
    expect(own.startsWith("$argon2id$v=19$m=19456,t=2,p=1$")).toBe(true);
    expect(await verifyPassword(own, PASSWORD)).toMatchObject({ ok: true, needsRehash: false });
    expect(await verifyPassword(own, "nope")).toMatchObject({ ok: false, needsRehash: false });
  });

  it("refuses a hash whose derived bytes were tampered with", async () => {
    const scrypt = VECTORS["scrypt (passlib)"] as string;
    expect(await verifyPassword(scrypt.replace("$nvx3", "$nvx4"), PASSWORD)).toMatchObject({ ok: false, needsRehash: false });
    const bcrypt = VECTORS["bcrypt $2b$ (crypt(3))"] as string;
    expect(await verifyPassword(bcrypt.replace(/ey$/, "ez"), PASSWORD)).toMatchObject({ ok: false, needsRehash: false });
    const pbkdf2 = VECTORS["pbkdf2-sha256 i= form (hashlib.pbkdf2_hmac)"] as string;
    // Same salt and hash, different iteration count.
    expect(await verifyPassword(pbkdf2.replace("i=1000", "i=1001"), PASSWORD)).toMatchObject({ ok: false, needsRehash: false });
  });

  it("never verifies an unsupported or malformed hash", async () => {
    for (const encoded of ["", "plain", "$1$abc$def", "$5$rounds=5000$salt$hash", "$argon2id$m=1,t=1,p=1$x$y", "$2x$05$abc", "$scrypt$ln=10$a$b"]) {
      expect(importedHashFormat(encoded)).toBeUndefined();
      expect(await verifyPassword(encoded, PASSWORD)).toMatchObject({ ok: false, needsRehash: false });
    }
  });
});

describe("parsePasswordHash", () => {
  it("recognises each format", () => {
    expect(importedHashFormat(VECTORS["argon2i (argon2 CLI)"] as string)).toBe("argon2");
    expect(importedHashFormat(VECTORS["bcrypt $2y$ (htpasswd -B)"] as string)).toBe("bcrypt");
    expect(importedHashFormat(VECTORS["scrypt (passlib)"] as string)).toBe("scrypt");
    expect(importedHashFormat(VECTORS["pbkdf2 (SHA-1) passlib form"] as string)).toBe("pbkdf2");
    expect(parsePasswordHash(VECTORS["pbkdf2 (SHA-1) passlib form"] as string)).toMatchObject({ digest: "sha1", iterations: 1000 });
    expect(parsePasswordHash(VECTORS["scrypt p=2 (hashlib.scrypt)"] as string)).toMatchObject({ log2N: 10, r: 8, p: 2 });
  });

  it("refuses cost parameters that would let one login exhaust the server", () => {
    const salt = "c29tZXNhbHQxMjM";
    const digest = "Q/MvYnaC+FRpLms+mPF1PAvOWuNQA6YcKoOf6Ik4eqU";
    const refused = (encoded: string) => checkImportedHash(encoded);
    expect(refused(`$argon2id$v=19$m=4194304,t=2,p=1$${salt}$${digest}`)).toEqual({
      refused: "cost",
      reason: "argon2 memory (KiB) 4194304 is above the ceiling of 65536",
    });
    expect(refused(`$argon2id$v=19$m=1024,t=64,p=1$${salt}$${digest}`)).toMatchObject({ refused: "cost" });
    expect(refused(`$argon2id$v=19$m=1024,t=1,p=16$${salt}$${digest}`)).toMatchObject({ refused: "cost" });
    expect(refused("$2b$31$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey")).toMatchObject({ refused: "cost" });
    expect(refused("$2b$16$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey")).toEqual({
      refused: "cost",
      reason: "bcrypt cost 16 is above the ceiling of 13",
    });
    expect(refused(`$scrypt$ln=24,r=8,p=1$${salt}$${digest}`)).toMatchObject({ refused: "cost" });
    expect(refused(`$scrypt$ln=10,r=8,p=16$${salt}$${digest}`)).toMatchObject({ refused: "cost" });
    expect(refused(`$pbkdf2-sha256$i=10000000$${salt}$${digest}`)).toEqual({
      refused: "cost",
      reason: "PBKDF2 iterations 10000000 is above the ceiling of 1000000",
    });
  });

  it("accepts every algorithm exactly at its ceiling", () => {
    const salt = "c29tZXNhbHQxMjM";
    const digest = "Q/MvYnaC+FRpLms+mPF1PAvOWuNQA6YcKoOf6Ik4eqU";
    const c = DEFAULT_HASH_CEILINGS;
    expect(checkImportedHash(`$argon2id$v=19$m=${c.argon2MemoryKiB},t=${c.argon2Passes},p=${c.argon2Parallelism}$${salt}$${digest}`)).toEqual({
      format: "argon2",
    });
    expect(checkImportedHash(`$2b$${c.bcryptCost}$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey`)).toEqual({ format: "bcrypt" });
    // 128·2^16·8 bytes = 64 MiB.
    expect(checkImportedHash(`$scrypt$ln=16,r=8,p=${c.scryptParallelism}$${salt}$${digest}`)).toEqual({ format: "scrypt" });
    expect(checkImportedHash(`$pbkdf2-sha512$i=${c.pbkdf2Iterations}$${salt}$${digest}`)).toEqual({ format: "pbkdf2" });
  });

  it("measures against the ceilings it is given", () => {
    const bcrypt = parsePasswordHash("$2b$12$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey") as ParsedHash;
    expect(costTooHigh(bcrypt)).toBeUndefined();
    expect(costTooHigh(bcrypt, { ...DEFAULT_HASH_CEILINGS, bcryptCost: 11 })).toBe("bcrypt cost 12 is above the ceiling of 11");
  });

  it("never verifies a stored hash above the ceilings", async () => {
    // A right password for a hash that would be too costly to check is a failed check, without computing anything.
    const costly = "$2b$16$dPWOmcNThkmQyLevKIY8Ae/WpNzbcpXekCD2GLsTc/Un/6s3vLsey";
    const started = Date.now();
    expect(await verifyPassword(costly, PASSWORD)).toEqual({ ok: false, needsRehash: false, format: "bcrypt" });
    expect(Date.now() - started).toBeLessThan(200);
  });
});
