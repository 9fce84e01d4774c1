import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "../../src/config.js";

describe("configuration defaults", () => {
  it("listens on the loopback interface unless SVC_HOST says otherwise (no accidental exposure on first start)", () => {
    expect(loadConfig({}).host).toBe("127.0.0.1");
    expect(loadConfig({ SVC_HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
  });
});

describe("password hash ceilings", () => {
  it("default to the documented values and take SVC_PASSWORD_HASH_MAX_*", () => {
    expect(loadConfig({})).toMatchObject({
      passwordHashMaxPbkdf2Iterations: 1_000_000,
      passwordHashMaxBcryptCost: 13,
      passwordHashMaxArgon2MemoryKiB: 65_536,
      passwordHashMaxArgon2Passes: 10,
      passwordHashMaxArgon2Parallelism: 8,
      passwordHashMaxScryptMemoryKiB: 65_536,
      passwordHashMaxScryptParallelism: 4,
    });
    expect(loadConfig({ SVC_PASSWORD_HASH_MAX_BCRYPT_COST: "10" }).passwordHashMaxBcryptCost).toBe(10);
    expect(() => loadConfig({ SVC_PASSWORD_HASH_MAX_BCRYPT_COST: "32" })).toThrow(/SVC_PASSWORD_HASH_MAX_BCRYPT_COST must be an integer between 4 and 31/);
  });
});
