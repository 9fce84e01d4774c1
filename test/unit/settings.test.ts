// Validation and stored-value parsing of settings: pure rules, no database.
import { describe, expect, it } from "@jest/globals";
import { DomainError } from "../../src/domain/errors.js";
import { checkPassword, DEFAULT_SETTINGS, parseStored, type SettingInput, type SettingKind, validateSetting } from "../../src/domain/settings/settings.js";

function reason<K extends SettingKind>(kind: K, input: SettingInput<K>): string | undefined {
  try {
    validateSetting(kind, input);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    expect((e as DomainError).kind).toBe("InvalidArgument");
    return (e as DomainError).id;
  }
}

const complexity = DEFAULT_SETTINGS.password_complexity;
const login = DEFAULT_SETTINGS.login;
const security = DEFAULT_SETTINGS.security;
const branding = DEFAULT_SETTINGS.branding;

describe("built-in defaults", () => {
  it("are the documented ones", () => {
    expect(DEFAULT_SETTINGS.password_complexity).toEqual({
      historyCount: 0,
      minLength: 8,
      requiresUppercase: true,
      requiresLowercase: true,
      requiresNumber: true,
      requiresSymbol: true,
    });
    expect(DEFAULT_SETTINGS.password_expiry).toEqual({ maxAgeDays: 0, expireWarnDays: 0 });
    expect(DEFAULT_SETTINGS.lockout).toEqual({
      maxPasswordAttempts: 10,
      maxOtpAttempts: 5,
      permanentLockout: false,
      lockoutDurationSeconds: 300,
      maxLockoutDurationSeconds: 3600,
    });
    expect(login).toMatchObject({ allowUsernamePassword: true, allowRegister: false, allowExternalIdp: true, forceMfa: false, passkeysAllowed: true });
    expect(login.ignoreUnknownUsernames).toBe(false);
    expect([login.passwordCheckLifetimeSeconds, login.externalLoginCheckLifetimeSeconds, login.mfaInitSkipLifetimeSeconds]).toEqual([
      864_000, 864_000, 2_592_000,
    ]);
    expect([login.secondFactorCheckLifetimeSeconds, login.multiFactorCheckLifetimeSeconds]).toEqual([64_800, 43_200]);
    expect(security).toEqual({ allowedCorsOrigins: [], iframeEnabled: false, iframeAllowedOrigins: [] });
    expect(DEFAULT_SETTINGS.domain).toEqual({ loginNameIncludesDomain: true, smtpSenderAddressMatchesInstanceDomain: false, usernamesUniqueInInstance: false });
    for (const c of [branding.primaryColor, branding.backgroundColor, branding.warnColor, branding.fontColor]) expect(c).toMatch(/^#[0-9a-f]{6}$/);
  });

  it("are themselves valid", () => {
    for (const kind of Object.keys(DEFAULT_SETTINGS) as SettingKind[]) {
      expect(validateSetting(kind, DEFAULT_SETTINGS[kind] as never)).toEqual(DEFAULT_SETTINGS[kind]);
    }
  });
});

describe("password complexity", () => {
  it("takes a minimum length from 1 to 256", () => {
    for (const minLength of [1, 12, 256]) expect(reason("password_complexity", { ...complexity, minLength })).toBeUndefined();
    for (const minLength of [0, 257, 1.5, -1, Number.NaN, 2 ** 64]) {
      expect(reason("password_complexity", { ...complexity, minLength })).toBe("Errors.Settings.PasswordComplexity.MinLengthInvalid");
    }
  });

  it("keeps from 0 to 24 previous passwords", () => {
    expect(complexity.historyCount).toBe(0);
    for (const historyCount of [0, 5, 24]) expect(reason("password_complexity", { ...complexity, historyCount })).toBeUndefined();
    for (const historyCount of [-1, 25, 1.5]) {
      expect(reason("password_complexity", { ...complexity, historyCount })).toBe("Errors.Settings.PasswordComplexity.HistoryCountInvalid");
    }
  });

  it("is what checkPassword enforces", () => {
    const relaxed = { minLength: 4, requiresUppercase: false, requiresLowercase: true, requiresNumber: false, requiresSymbol: false };
    expect(() => checkPassword("abcd", relaxed)).not.toThrow();
    expect(() => checkPassword("abc", relaxed)).toThrow("at least 4 characters");
    expect(() => checkPassword("ABCD", relaxed)).toThrow("a lowercase letter");
    expect(() => checkPassword("Abcdefg1", DEFAULT_SETTINGS.password_complexity)).toThrow("a symbol");
    expect(() => checkPassword("Abcdefg1!", DEFAULT_SETTINGS.password_complexity)).not.toThrow();
    // Code points, not UTF-16 units: four emoji are four characters.
    expect(() => checkPassword("😀😀😀", relaxed)).toThrow("at least 4 characters");
  });
});

describe("password expiry and lockout", () => {
  it("bounds days and keeps the warning inside the maximum age", () => {
    expect(reason("password_expiry", { maxAgeDays: 90, expireWarnDays: 14 })).toBeUndefined();
    expect(reason("password_expiry", { maxAgeDays: 90, expireWarnDays: 90 })).toBeUndefined();
    expect(reason("password_expiry", { maxAgeDays: 3651, expireWarnDays: 0 })).toBe("Errors.Settings.PasswordExpiry.MaxAgeInvalid");
    expect(reason("password_expiry", { maxAgeDays: 30, expireWarnDays: 31 })).toBe("Errors.Settings.PasswordExpiry.WarnDaysInvalid");
    expect(reason("password_expiry", { maxAgeDays: 0, expireWarnDays: 5 })).toBe("Errors.Settings.PasswordExpiry.WarnDaysInvalid");
  });

  it("takes 0 (off) to 1000 attempts", () => {
    expect(reason("lockout", { maxPasswordAttempts: 0, maxOtpAttempts: 1000 })).toBeUndefined();
    expect(reason("lockout", { maxPasswordAttempts: 1001, maxOtpAttempts: 0 })).toBe("Errors.Settings.Lockout.MaxAttemptsInvalid");
    expect(reason("lockout", { maxPasswordAttempts: 3, maxOtpAttempts: -1 })).toBe("Errors.Settings.Lockout.MaxAttemptsInvalid");
  });
});

describe("login", () => {
  it("fills lifetimes left out with their defaults", () => {
    const { passwordCheckLifetimeSeconds: _, ...rest } = login;
    const v = validateSetting("login", { ...rest, secondFactorCheckLifetimeSeconds: 0 });
    expect(v.passwordCheckLifetimeSeconds).toBe(login.passwordCheckLifetimeSeconds);
    expect(v.secondFactorCheckLifetimeSeconds).toBe(0);
  });

  it("takes whole, non-negative lifetimes up to ten years", () => {
    expect(reason("login", { ...login, mfaInitSkipLifetimeSeconds: 87_600 * 3600 })).toBeUndefined();
    for (const bad of [-1, 0.5, 87_600 * 3600 + 1]) {
      expect(reason("login", { ...login, multiFactorCheckLifetimeSeconds: bad })).toBe("Errors.Settings.Login.LifetimeInvalid");
    }
  });

  it("keeps at least one way to sign in", () => {
    expect(reason("login", { ...login, allowUsernamePassword: false, allowExternalIdp: false, passkeysAllowed: false })).toBe(
      "Errors.Settings.Login.NoLoginMethod",
    );
    expect(reason("login", { ...login, allowUsernamePassword: false, allowExternalIdp: false })).toBeUndefined();
  });

  it("allows every second and multi factor by default, and an empty list means all of them", () => {
    expect(login.secondFactors).toEqual(["otp", "u2f", "otp_email"]);
    expect(login.multiFactors).toEqual(["u2f_with_verification"]);
    expect(validateSetting("login", { ...login, secondFactors: [], multiFactors: [] })).toMatchObject({
      secondFactors: ["otp", "u2f", "otp_email"],
      multiFactors: ["u2f_with_verification"],
    });
    expect(validateSetting("login", { ...login, secondFactors: ["otp", "otp"] }).secondFactors).toEqual(["otp"]);
  });
});

describe("security", () => {
  it("takes origins of the form scheme://host[:port] and normalizes them", () => {
    const v = validateSetting("security", {
      ...security,
      allowedCorsOrigins: ["https://App.Example.com", "http://localhost:3000", "https://app.example.com"],
      iframeAllowedOrigins: ["https://portal.example.com:8443"],
    });
    expect(v.allowedCorsOrigins).toEqual(["https://app.example.com", "http://localhost:3000"]);
    expect(v.iframeAllowedOrigins).toEqual(["https://portal.example.com:8443"]);
  });

  it("refuses anything else", () => {
    for (const bad of [
      "*",
      "app.example.com",
      "ftp://example.com",
      "https://example.com/",
      "https://example.com/path",
      "https://example.com?q=1",
      "https://example.com#x",
      "https://user:pw@example.com",
      "https://",
      "https://exa mple.com",
      "javascript:alert(1)",
      "",
    ]) {
      expect(reason("security", { ...security, allowedCorsOrigins: [bad] })).toBe("Errors.Settings.Security.OriginInvalid");
    }
    expect(reason("security", { ...security, iframeAllowedOrigins: ["null"] })).toBe("Errors.Settings.Security.OriginInvalid");
  });

  it("takes at most 100 origins", () => {
    const many = Array.from({ length: 101 }, (_, i) => `https://h${i}.example.com`);
    expect(reason("security", { ...security, allowedCorsOrigins: many })).toBe("Errors.Settings.Security.TooManyOrigins");
  });
});

describe("branding", () => {
  it("takes #rrggbb colours, stored in lower case", () => {
    expect(validateSetting("branding", { ...branding, primaryColor: "#ABCDEF" }).primaryColor).toBe("#abcdef");
    for (const bad of ["", "#abc", "abcdef", "#abcdeg", "#abcdef0", "red", "rgb(1,2,3)"]) {
      expect(reason("branding", { ...branding, warnColor: bad })).toBe("Errors.Settings.Branding.ColorInvalid");
    }
  });

  it("takes an https logo URL or none", () => {
    expect(reason("branding", { ...branding, logoUrl: "https://cdn.example.com/logo.svg" })).toBeUndefined();
    expect(validateSetting("branding", { ...branding, logoUrl: "  " }).logoUrl).toBe("");
    for (const bad of ["http://cdn.example.com/logo.svg", "data:image/png;base64,AAAA", "javascript:alert(1)", "not a url", "https://u:p@example.com/l.png"]) {
      expect(reason("branding", { ...branding, logoUrl: bad })).toBe("Errors.Settings.Branding.LogoUrlInvalid");
    }
    expect(reason("branding", { ...branding, logoUrl: `https://example.com/${"a".repeat(2048)}` })).toBe("Errors.Settings.Branding.LogoUrlInvalid");
  });
});

describe("stored values", () => {
  it("fall back to the default per field when missing or of the wrong type", () => {
    expect(parseStored("lockout", { maxPasswordAttempts: 5 })).toMatchObject({ maxPasswordAttempts: 5, maxOtpAttempts: 5, permanentLockout: false });
    expect(parseStored("lockout", { maxPasswordAttempts: "5", extra: 1 })).toEqual(DEFAULT_SETTINGS.lockout);
    expect(parseStored("security", { allowedCorsOrigins: [1] })).toEqual(DEFAULT_SETTINGS.security);
    expect(parseStored("domain", null)).toEqual(DEFAULT_SETTINGS.domain);
    expect(parseStored("domain", [])).toEqual(DEFAULT_SETTINGS.domain);
  });

  it("never hand out the shared default object", () => {
    const v = parseStored("security", undefined);
    expect(v).not.toBe(DEFAULT_SETTINGS.security);
  });
});
