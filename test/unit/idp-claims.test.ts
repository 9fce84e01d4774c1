// The claim mapping of external providers: defaults, custom claims, what counts as a verified e-mail, and the profile
// of a user created from a provider's.
import { describe, expect, it } from "@jest/globals";
import { DomainError } from "../../src/domain/errors.js";
import { claimMapping, externalUserName, profileOf, STANDARD_CLAIMS, storedMapping } from "../../src/domain/idp/claims.js";
import { newUserProfile } from "../../src/domain/idp/intents.js";
import { isLoopback } from "../../src/domain/idp/providers.js";

describe("claim mapping", () => {
  it("defaults to the OpenID Connect standard claims, field by field", () => {
    expect(claimMapping(undefined)).toEqual(STANDARD_CLAIMS);
    expect(claimMapping({ email: " mail ", givenName: "" })).toEqual({ ...STANDARD_CLAIMS, email: "mail" });
    expect(storedMapping({ email: "upn", bogus: 1 })).toEqual({ ...STANDARD_CLAIMS, email: "upn" });
    expect(storedMapping(null)).toEqual(STANDARD_CLAIMS);
  });

  it("refuses what cannot be a claim name", () => {
    expect(() => claimMapping({ email: "a b" })).toThrow(DomainError);
    expect(() => claimMapping({ email: "x".repeat(201) })).toThrow(DomainError);
    expect(claimMapping({ email: "https://schemas.example.com/claims/email" }).email).toBe("https://schemas.example.com/claims/email");
  });

  it('reads the profile through the mapping; only true or "true" verifies an e-mail', () => {
    const m = claimMapping({ email: "mail", emailVerified: "mail_ok" });
    expect(profileOf({ mail: "a@b.example", mail_ok: "true", given_name: "A", name: "A B", email: "ignored@x" }, m)).toEqual({
      email: "a@b.example",
      emailVerified: true,
      givenName: "A",
      familyName: "",
      displayName: "A B",
      preferredUsername: "",
    });
    for (const v of [false, "false", 1, "yes", undefined]) expect(profileOf({ email_verified: v }, STANDARD_CLAIMS).emailVerified).toBe(false);
    expect(profileOf({ email: 42, given_name: ["x"] }, STANDARD_CLAIMS)).toMatchObject({ email: "", givenName: "" });
  });
});

describe("a user from a provider's profile", () => {
  const empty = { email: "", emailVerified: false, givenName: "", familyName: "", displayName: "", preferredUsername: "" };

  it("fills in names from what there is", () => {
    expect(newUserProfile({ ...empty, displayName: "Ada Lovelace", email: "ada@x.example" }, "s1")).toMatchObject({
      username: "ada@x.example",
      givenName: "Ada",
      familyName: "Lovelace",
      displayName: "Ada Lovelace",
    });
    expect(newUserProfile({ ...empty, email: "bob@x.example" }, "s2")).toMatchObject({ givenName: "bob", familyName: "bob", displayName: "bob bob" });
    expect(newUserProfile({ ...empty, preferredUsername: "carl" }, "s3").username).toBe("carl");
    expect(externalUserName(empty, "sub-1")).toBe("sub-1");
  });
});

describe("loopback hosts (http allowed)", () => {
  it.each([
    ["localhost", true],
    ["login.localhost", true],
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["[::1]", true],
    ["example.com", false],
    ["127.0.0.1.example.com", false],
    ["10.0.0.1", false],
  ])("%s: %s", (host, loopback) => {
    expect(isLoopback(host)).toBe(loopback);
  });
});
