// The lockout policy's pure rules: the settings' bounds and the temporary lock periods (issue 23, finding 9).
import { describe, expect, it } from "@jest/globals";
import { lockPeriodMs, lockPeriods, OWNER_PASSWORD_LOCK_MS } from "../../src/domain/identity/lockout.js";
import { DEFAULT_SETTINGS, validateSetting } from "../../src/domain/settings/values.js";

const policy = (v: Partial<typeof DEFAULT_SETTINGS.lockout> = {}) => ({ ...DEFAULT_SETTINGS.lockout, ...v, resourceOwner: "instance" as const });

const reason = (input: Parameters<typeof validateSetting<"lockout">>[1]) => {
  try {
    validateSetting("lockout", input);
    return undefined;
  } catch (err) {
    return (err as { id: string }).id;
  }
};

describe("lockout settings", () => {
  it("default to a temporary lock of 5 minutes, doubling up to 1 hour", () => {
    expect(DEFAULT_SETTINGS.lockout).toMatchObject({ permanentLockout: false, lockoutDurationSeconds: 300, maxLockoutDurationSeconds: 3600 });
    expect(validateSetting("lockout", { maxPasswordAttempts: 5, maxOtpAttempts: 5 })).toEqual({
      maxPasswordAttempts: 5,
      maxOtpAttempts: 5,
      permanentLockout: false,
      lockoutDurationSeconds: 300,
      maxLockoutDurationSeconds: 3600,
    });
  });

  it("take 0 for a duration's default, and keep the longest period at least the first", () => {
    expect(validateSetting("lockout", { maxPasswordAttempts: 5, maxOtpAttempts: 5, lockoutDurationSeconds: 7200, maxLockoutDurationSeconds: 0 })).toMatchObject(
      {
        lockoutDurationSeconds: 7200,
        maxLockoutDurationSeconds: 7200,
      },
    );
    expect(reason({ maxPasswordAttempts: 5, maxOtpAttempts: 5, lockoutDurationSeconds: 600, maxLockoutDurationSeconds: 60 })).toBe(
      "Errors.Settings.Lockout.DurationInvalid",
    );
    expect(reason({ maxPasswordAttempts: 5, maxOtpAttempts: 5, lockoutDurationSeconds: 86_401 })).toBe("Errors.Settings.Lockout.DurationInvalid");
    expect(reason({ maxPasswordAttempts: 5, maxOtpAttempts: 5, maxLockoutDurationSeconds: 31 * 86_400 })).toBe("Errors.Settings.Lockout.DurationInvalid");
    expect(reason({ maxPasswordAttempts: 5, maxOtpAttempts: 5, permanentLockout: true })).toBeUndefined();
  });
});

describe("lock periods", () => {
  it("double per further lock period, up to the longest", () => {
    const p = lockPeriods(policy({ maxPasswordAttempts: 3 }));
    expect([3, 4, 5, 6, 7, 8].map((a) => lockPeriodMs(p, a) / 1000)).toEqual([300, 600, 1200, 2400, 3600, 3600]);
    expect(lockPeriodMs(p, 10_000)).toBe(3_600_000);
  });

  it("under permanent lockout are the fixed period of a last owner", () => {
    const p = lockPeriods(policy({ maxPasswordAttempts: 3, permanentLockout: true }));
    expect([3, 4, 9].map((a) => lockPeriodMs(p, a))).toEqual([OWNER_PASSWORD_LOCK_MS, OWNER_PASSWORD_LOCK_MS, OWNER_PASSWORD_LOCK_MS]);
  });
});
