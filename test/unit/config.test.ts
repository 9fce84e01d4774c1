import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "../../src/config.js";

describe("configuration defaults", () => {
  it("listens on the loopback interface unless SVC_HOST says otherwise (no accidental exposure on first start)", () => {
    expect(loadConfig({}).host).toBe("127.0.0.1");
    expect(loadConfig({ SVC_HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
  });

  it("starts a new embedded database from the build's snapshot unless SVC_EMBEDDED_SNAPSHOT=false", () => {
    expect(loadConfig({}).embeddedSnapshot).toBe(true);
    expect(loadConfig({ SVC_EMBEDDED_SNAPSHOT: "true" }).embeddedSnapshot).toBe(true);
    expect(loadConfig({ SVC_EMBEDDED_SNAPSHOT: "false" }).embeddedSnapshot).toBe(false);
    expect(() => loadConfig({ SVC_EMBEDDED_SNAPSHOT: "no" })).toThrow(/SVC_EMBEDDED_SNAPSHOT must be true or false/);
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

describe("sign-in settings", () => {
  it("send browsers to the hosted login under the external URL unless SVC_LOGIN_URL says otherwise", () => {
    expect(loadConfig({ SVC_EXTERNAL_URL: "https://id.example.com/" }).loginUrl).toBe("https://id.example.com/ui/login/login");
    expect(loadConfig({ SVC_LOGIN_URL: "https://login.example.com/signin" }).loginUrl).toBe("https://login.example.com/signin");
    expect(() => loadConfig({ SVC_LOGIN_URL: "login.example.com" })).toThrow(/SVC_LOGIN_URL must be an absolute URL/);
    expect(() => loadConfig({ SVC_LOGIN_URL: "ftp://login.example.com" })).toThrow(/SVC_LOGIN_URL must use http: or https:/);
  });

  it("default the lifetimes as documented; the refresh idle lifetime fits in the absolute one", () => {
    expect(loadConfig({})).toMatchObject({
      accessTokenLifetimeUser: 43_200,
      idTokenLifetime: 43_200,
      refreshTokenLifetime: 90 * 86_400,
      refreshTokenIdleLifetime: 30 * 86_400,
      authRequestLifetime: 600,
      authCodeLifetime: 60,
    });
    expect(() => loadConfig({ SVC_REFRESH_TOKEN_IDLE_LIFETIME: "7200", SVC_REFRESH_TOKEN_LIFETIME: "3600" })).toThrow(
      /SVC_REFRESH_TOKEN_IDLE_LIFETIME must not be longer than SVC_REFRESH_TOKEN_LIFETIME/,
    );
    // A signing key outlives every token it signed, user tokens included.
    expect(loadConfig({ SVC_ID_TOKEN_LIFETIME: String(20 * 86_400) }).signingKeyOverlapSeconds).toBe(20 * 86_400 + 3_600);
  });
});

describe("logs and metrics", () => {
  it("take SVC_LOG_FORMAT (auto, json, pretty), SVC_METRICS_TOKEN and SVC_TRUST_PROXY, refusing anything else", () => {
    expect(loadConfig({}).logFormat).toBe("auto");
    expect(loadConfig({ SVC_LOG_FORMAT: "pretty" }).logFormat).toBe("pretty");
    expect(() => loadConfig({ SVC_LOG_FORMAT: "xml" })).toThrow(/SVC_LOG_FORMAT/);
    expect(loadConfig({ SVC_METRICS_TOKEN: "t" }).metricsToken).toBe("t");
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ SVC_TRUST_PROXY: "loopback, 10.0.0.0/8" }).trustProxy).toBe("loopback,10.0.0.0/8");
    expect(loadConfig({ SVC_TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(() => loadConfig({ SVC_TRUST_PROXY: "everyone" })).toThrow(/SVC_TRUST_PROXY/);
  });
});
