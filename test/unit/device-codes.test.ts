// The device grant's user codes: their alphabet and shape, and how a typed code is read (case, dashes, spaces).
import { describe, expect, it } from "@jest/globals";
import { newUserCode, normalizeUserCode, USER_CODE_ALPHABET, userCodeHash } from "../../src/domain/oauth/device.js";

describe("user codes", () => {
  it("are 8 letters of 20 consonants, shown as XXXX-XXXX, and differ", () => {
    expect(USER_CODE_ALPHABET).toHaveLength(20);
    expect(USER_CODE_ALPHABET).not.toMatch(/[AEIOUY0-9]/);
    const codes = new Set(Array.from({ length: 200 }, () => newUserCode()));
    for (const c of codes) expect(c).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(codes.size).toBeGreaterThan(195);
  });

  it("are read case-insensitively, dashes and spaces ignored; anything else is no code", () => {
    expect(normalizeUserCode("bcdf-ghjk")).toBe("BCDFGHJK");
    expect(normalizeUserCode(" BCDF GHJK ")).toBe("BCDFGHJK");
    expect(normalizeUserCode("BCDFGHJK")).toBe("BCDFGHJK");
    for (const bad of ["", "BCDF-GHJ", "BCDF-GHJKL", "ABCD-EFGH", "BCDF-GHJ1", "BCDF_GHJK", "x".repeat(41)]) expect(normalizeUserCode(bad)).toBeUndefined();
  });

  it("are stored as a hash that depends on the instance", () => {
    expect(Buffer.from(userCodeHash("i1", "BCDFGHJK")).equals(Buffer.from(userCodeHash("i1", "BCDFGHJK")))).toBe(true);
    expect(Buffer.from(userCodeHash("i1", "BCDFGHJK")).equals(Buffer.from(userCodeHash("i2", "BCDFGHJK")))).toBe(false);
  });
});
