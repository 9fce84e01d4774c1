// The lockout policy's pure rules: the settings' bounds and the temporary lock periods (issue 23, finding 9).
import { describe, expect, it } from "@jest/globals";
import { lockPeriodMs, lockPeriods, OWNER_PASSWORD_LOCK_MS, PENDING_LOCK_MS, reservePasswordCheck } from "../../src/domain/identity/lockout.js";
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

// The interleavings of reservePasswordCheck that a burst of sign-ins produces, with the store's two reads scripted in
// order (the SQL of each is tested through the API in lockout-hardening).
describe("reserving a password check among checks in flight", () => {
  const lockout = policy({ maxPasswordAttempts: 3 });
  const now = new Date("2026-12-02T16:00:00Z");
  function ctxWith(reservations: ({ failedPasswordAttempts: number } | null)[], locks: Record<string, unknown>[]) {
    const calls = { reserve: 0, lock: 0 };
    const users = {
      reservePasswordCheck: async () => reservations[calls.reserve++] ?? null,
      passwordLock: async () => locks[calls.lock++] ?? null,
    };
    return { ctx: { clock: () => now, store: { users } } as unknown as Parameters<typeof reservePasswordCheck>[0], calls };
  }
  const held = (over: Record<string, unknown>) => ({ failedPasswordAttempts: 3, state: "ACTIVE", lockedAt: now, passwordLockPending: true, ...over });

  it("refused, then the lock is gone before it is read (a right password cleared it): tries again at once", async () => {
    const { ctx, calls } = ctxWith([null, { failedPasswordAttempts: 1 }], [held({ failedPasswordAttempts: 0, lockedAt: null, passwordLockPending: false })]);
    expect(await reservePasswordCheck(ctx, { id: "u" }, lockout)).toBe(1);
    expect(calls).toEqual({ reserve: 2, lock: 1 });
  });

  it("refused by a pending lock: waits, and reserves once it ends", async () => {
    const { ctx, calls } = ctxWith([null, null, { failedPasswordAttempts: 1 }], [held({}), held({})]);
    expect(await reservePasswordCheck(ctx, { id: "u" }, lockout)).toBe(1);
    expect(calls).toEqual({ reserve: 3, lock: 2 });
  });

  it("refused by a confirmed lock, a LOCKED user or an abandoned pending lock: no check", async () => {
    for (const lock of [held({ passwordLockPending: false }), held({ state: "LOCKED" }), held({ lockedAt: new Date(now.getTime() - PENDING_LOCK_MS) })]) {
      const { ctx, calls } = ctxWith([null, { failedPasswordAttempts: 1 }], [lock]);
      expect(await reservePasswordCheck(ctx, { id: "u" }, lockout)).toBeNull();
      expect(calls).toEqual({ reserve: 1, lock: 1 });
    }
  });
});
