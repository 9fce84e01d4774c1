// Users' authentication methods: the TOTP secret (sealed), passkeys, one-time codes, the OTP lockout counter, the
// password history, and what the factor checks of a session read. Secrets only ever arrive here sealed or hashed.
import { Prisma } from "../../gen/prisma/client.js";
import { alreadyExists } from "../domain/errors.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { query, statement } from "./sql.js";

/** What the authentication-method commands know about their user (one read). */
export interface AuthnSubject {
  id: string;
  orgId: string;
  type: "HUMAN" | "MACHINE";
  state: "ACTIVE" | "INACTIVE" | "LOCKED" | "INITIAL";
  username: string;
  loginName: string;
  displayName: string;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
  otpEmailAddedAt: Date | null;
  /** The instance's name: the issuer of TOTP URIs and the relying party's name of passkeys. */
  instanceName: string;
  /** The organization's name (the mails' sender and branding). */
  orgName: string;
  /** BCP 47; the language of the mails sent to the user. */
  preferredLanguage: string | null;
}

export interface TotpRow {
  secretEnc: Uint8Array;
  verifiedAt: Date | null;
  lastUsedStep: bigint | null;
}

export interface PasskeyRow {
  id: string;
  userId: string;
  name: string;
  rpId: string;
  credentialId: string | null;
  publicKey: Uint8Array | null;
  counter: bigint;
  transports: string[];
  challenge: unknown;
  verifiedAt: Date | null;
  lastUsedAt: Date | null;
  createdAt: Date;
}

export interface CodeRow {
  codeHash: Uint8Array;
  target: string | null;
  failedAttempts: number;
  expiresAt: Date;
}

/** Rows of PasswordHistory kept per user. */
export const PASSWORD_HISTORY_KEPT = 24;

const PASSKEY_SELECT = {
  id: true,
  userId: true,
  name: true,
  rpId: true,
  credentialId: true,
  publicKey: true,
  counter: true,
  transports: true,
  challenge: true,
  verifiedAt: true,
  lastUsedAt: true,
  createdAt: true,
} as const;

export class AuthnRepo {
  constructor(readonly db: Db) {}

  async subject(instanceId: string, userId: string): Promise<AuthnSubject | null> {
    const u = await this.db.user.findFirst({
      where: { id: userId, instanceId },
      select: {
        id: true,
        orgId: true,
        type: true,
        state: true,
        username: true,
        displayName: true,
        givenName: true,
        familyName: true,
        email: true,
        emailVerified: true,
        phone: true,
        phoneVerified: true,
        otpEmailAddedAt: true,
        preferredLanguage: true,
        org: { select: { primaryDomain: true, name: true } },
        instance: { select: { name: true } },
      },
    });
    if (!u) return null;
    const { org, instance, givenName, familyName, displayName, ...rest } = u;
    const loginName = `${u.username}@${org.primaryDomain}`;
    const fullName = [givenName, familyName].filter(Boolean).join(" ");
    return { ...rest, loginName, displayName: displayName || fullName || loginName, instanceName: instance.name, orgName: org.name };
  }

  // ------------------------------------------------------------ TOTP

  totp(userId: string): Promise<TotpRow | null> {
    return this.db.userTotp.findUnique({ where: { userId }, select: { secretEnc: true, verifiedAt: true, lastUsedStep: true } });
  }

  /** Replaces a pending registration; AlreadyExists when the user has a ready TOTP. */
  async startTotp(row: { userId: string; instanceId: string; secretEnc: Uint8Array<ArrayBuffer>; createdAt: Date }): Promise<void> {
    await this.db.userTotp.deleteMany({ where: { userId: row.userId, verifiedAt: null } });
    await unique(this.db.userTotp.create({ data: row }), () => alreadyExists("Errors.User.TOTP.AlreadyReady", "the user already has a TOTP authenticator"));
  }

  /**
   * Spends time step `step` of the user's TOTP (ready, or pending when `completesAt` is given, which makes it ready):
   * only while no later or equal step was spent, so a code is accepted once even by concurrent requests.
   */
  async spendTotpStep(userId: string, step: bigint, completesAt?: Date): Promise<boolean> {
    const { count } = await this.db.userTotp.updateMany({
      where: { userId, verifiedAt: completesAt ? null : { not: null }, OR: [{ lastUsedStep: null }, { lastUsedStep: { lt: step } }] },
      data: { lastUsedStep: step, ...(completesAt ? { verifiedAt: completesAt } : {}) },
    });
    return count === 1;
  }

  async removeTotp(userId: string): Promise<boolean> {
    const { count } = await this.db.userTotp.deleteMany({ where: { userId } });
    return count > 0;
  }

  /** Every sealed TOTP secret of the instance (re-sealing under a new master key). */
  sealedTotpSecrets(instanceId: string): Promise<{ userId: string; secretEnc: Uint8Array }[]> {
    return this.db.userTotp.findMany({ where: { instanceId }, select: { userId: true, secretEnc: true } });
  }

  /** The newest sealed TOTP secret: what start-up opens to check the master key. */
  newestTotpSecret(instanceId: string): Promise<{ userId: string; secretEnc: Uint8Array } | null> {
    return this.db.userTotp.findFirst({ where: { instanceId }, orderBy: { createdAt: "desc" }, select: { userId: true, secretEnc: true } });
  }

  async resealTotp(userId: string, secretEnc: Uint8Array<ArrayBuffer>): Promise<void> {
    await this.db.userTotp.update({ where: { userId }, data: { secretEnc } });
  }

  // ------------------------------------------------------------ OTP lockout

  /** Counts a failed one-time code (TOTP or e-mail); returns the count and the state after it. */
  /**
   * Reserves one check of a one-time code before it is verified, as reservePasswordCheck does for passwords: counts it
   * as failed (a right code clears the count) only while the user may try now, in one statement, so that concurrent
   * guesses cannot outrun the limit. May try: ACTIVE or INITIAL, and below `limit` (0: no limit), or the codes' lock
   * period over (`firstLockSeconds` after the limit was reached, doubled per further period, at most
   * `maxLockSeconds`). The check that reaches the limit starts the period (`otpLockedAt`). Null: the user may not try.
   */
  async reserveOtpCheck(
    userId: string,
    policy: { limit: number; firstLockSeconds: number; maxLockSeconds: number },
    now: Date,
  ): Promise<{ failedOtpAttempts: number } | null> {
    const { limit, firstLockSeconds, maxLockSeconds } = policy;
    const [row] = await query<{ failedOtpAttempts: number }>(
      this.db,
      statement(
        Prisma.sql`UPDATE "User" SET "failedOtpAttempts" = "failedOtpAttempts" + 1,
            "otpLockedAt" = CASE WHEN ${limit}::int > 0 AND "failedOtpAttempts" + 1 >= ${limit}::int THEN ${now}::timestamptz ELSE "otpLockedAt" END
          WHERE "id" = ${userId} AND "state" IN ('ACTIVE', 'INITIAL') AND (
            ${limit}::int = 0 OR "failedOtpAttempts" < ${limit}::int OR "otpLockedAt" IS NULL
            OR "otpLockedAt" + make_interval(secs => LEAST(${firstLockSeconds}::float8 * power(2::float8, LEAST("failedOtpAttempts" - ${limit}::int, 40)), ${maxLockSeconds}::float8))
              <= ${now}::timestamptz)
          RETURNING "failedOtpAttempts"`,
        "user_reserve_otp_check",
      ),
    );
    return row ?? null;
  }

  /** A right code starts the count of wrong ones again and ends the codes' lock period; no write when there is none. */
  async resetFailedOtp(userId: string): Promise<void> {
    await this.db.user.updateMany({
      where: { id: userId, OR: [{ failedOtpAttempts: { gt: 0 } }, { otpLockedAt: { not: null } }] },
      data: { failedOtpAttempts: 0, otpLockedAt: null },
    });
  }

  // ------------------------------------------------------------ e-mail

  /** Sets or clears the e-mail OTP factor; false when it already was in that state. */
  async setOtpEmail(userId: string, addedAt: Date | null): Promise<boolean> {
    const { count } = await this.db.user.updateMany({
      where: { id: userId, otpEmailAddedAt: addedAt ? null : { not: null } },
      data: { otpEmailAddedAt: addedAt },
    });
    return count === 1;
  }

  /** Marks the e-mail verified while it is still `email`; false when it changed meanwhile. */
  async verifyEmail(userId: string, email: string, now: Date): Promise<boolean> {
    const { count } = await this.db.user.updateMany({ where: { id: userId, email }, data: { emailVerified: true, updatedAt: now } });
    return count === 1;
  }

  /** Marks the phone number verified while it is still `phone`; false when it changed meanwhile. */
  async verifyPhone(userId: string, phone: string, now: Date): Promise<boolean> {
    const { count } = await this.db.user.updateMany({ where: { id: userId, phone }, data: { phoneVerified: true, updatedAt: now } });
    return count === 1;
  }

  // ------------------------------------------------------------ one-time codes

  async putCode(row: {
    userId: string;
    kind: string;
    codeHash: Uint8Array<ArrayBuffer>;
    target: string | null;
    expiresAt: Date;
    createdAt: Date;
  }): Promise<void> {
    const { userId, kind, ...data } = row;
    await this.db.userCode.upsert({
      where: { userId_kind: { userId, kind } },
      create: row,
      update: { ...data, failedAttempts: 0 },
    });
  }

  code(userId: string, kind: string): Promise<CodeRow | null> {
    return this.db.userCode.findUnique({
      where: { userId_kind: { userId, kind } },
      select: { codeHash: true, target: true, failedAttempts: true, expiresAt: true },
    });
  }

  /** Counts a wrong guess at the code `codeHash` (not at a newer one that replaced it); returns the count, 0 when it is gone. */
  async countFailedCode(userId: string, kind: string, codeHash: Uint8Array<ArrayBuffer>): Promise<number> {
    const rows = await this.db.userCode.updateManyAndReturn({
      where: { userId, kind, codeHash },
      data: { failedAttempts: { increment: 1 } },
      select: { failedAttempts: true },
    });
    return rows[0]?.failedAttempts ?? 0;
  }

  /** Removes the code `codeHash` (spending it, or after too many guesses); false when it was spent or replaced meanwhile. */
  async deleteCode(userId: string, kind: string, codeHash: Uint8Array<ArrayBuffer>): Promise<boolean> {
    const { count } = await this.db.userCode.deleteMany({ where: { userId, kind, codeHash } });
    return count === 1;
  }

  // ------------------------------------------------------------ passkeys

  async addPasskey(row: { id: string; instanceId: string; userId: string; rpId: string; challenge: object; createdAt: Date }): Promise<void> {
    await this.db.passkey.create({ data: row });
  }

  /** Pending registrations of the user started before `before` (abandoned) go. */
  async dropPendingPasskeys(userId: string, before: Date): Promise<void> {
    await this.db.passkey.deleteMany({ where: { userId, verifiedAt: null, createdAt: { lt: before } } });
  }

  countPasskeys(userId: string): Promise<number> {
    return this.db.passkey.count({ where: { userId } });
  }

  passkey(userId: string, id: string): Promise<PasskeyRow | null> {
    return this.db.passkey.findFirst({ where: { id, userId }, select: PASSKEY_SELECT });
  }

  /** The user's ready passkeys (of one relying party when given), oldest first. */
  readyPasskeys(userId: string, rpId?: string): Promise<PasskeyRow[]> {
    return this.db.passkey.findMany({
      where: { userId, verifiedAt: { not: null }, ...(rpId !== undefined ? { rpId } : {}) },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      select: PASSKEY_SELECT,
    });
  }

  /** Every passkey of the user, ready or pending, oldest first. */
  passkeys(userId: string): Promise<PasskeyRow[]> {
    return this.db.passkey.findMany({ where: { userId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }], select: PASSKEY_SELECT });
  }

  /** Makes a pending registration ready; false when it is no longer pending. AlreadyExists for a credential registered before. */
  async completePasskey(
    userId: string,
    id: string,
    data: { name: string; credentialId: string; publicKey: Uint8Array<ArrayBuffer>; counter: bigint; transports: string[]; verifiedAt: Date },
  ): Promise<boolean> {
    const write = this.db.passkey.updateMany({ where: { id, userId, verifiedAt: null }, data: { ...data, challenge: Prisma.DbNull } });
    const { count } = await unique(write, () => alreadyExists("Errors.User.Passkey.AlreadyRegistered", "this authenticator is registered already"));
    return count === 1;
  }

  async removePasskey(userId: string, id: string): Promise<boolean> {
    const { count } = await this.db.passkey.deleteMany({ where: { id, userId } });
    return count > 0;
  }

  /**
   * Records a sign-in with the passkey: its new signature counter, only while the stored one is still `previous`
   * (two concurrent assertions with one counter value cannot both pass).
   */
  async usePasskey(id: string, previous: bigint, counter: bigint, now: Date): Promise<boolean> {
    const { count } = await this.db.passkey.updateMany({ where: { id, counter: previous }, data: { counter, lastUsedAt: now } });
    return count === 1;
  }

  // ------------------------------------------------------------ methods, history, sessions

  async methods(userId: string): Promise<{ password: boolean; passkey: boolean; totp: boolean; otpEmail: boolean; idp: boolean }> {
    const [row] = await this.db.$queryRaw<{ password: boolean; passkey: boolean; totp: boolean; otpEmail: boolean; idp: boolean }[]>`
      SELECT u."passwordHash" IS NOT NULL AS "password",
        EXISTS (SELECT 1 FROM "Passkey" p WHERE p."userId" = u."id" AND p."verifiedAt" IS NOT NULL) AS "passkey",
        EXISTS (SELECT 1 FROM "UserTotp" t WHERE t."userId" = u."id" AND t."verifiedAt" IS NOT NULL) AS "totp",
        u."otpEmailAddedAt" IS NOT NULL AS "otpEmail",
        EXISTS (SELECT 1 FROM "IdpLink" l WHERE l."userId" = u."id") AS "idp"
      FROM "User" u WHERE u."id" = ${userId}`;
    return row ?? { password: false, passkey: false, totp: false, otpEmail: false, idp: false };
  }

  /** The user's `n` most recent previous password hashes, newest first. */
  async passwordHistory(userId: string, n: number): Promise<string[]> {
    if (n <= 0) return [];
    const rows = await this.db.passwordHistory.findMany({
      where: { userId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: n,
      select: { passwordHash: true },
    });
    return rows.map((r) => r.passwordHash);
  }

  /** Keeps the user's current password hash (if any) in its history, and at most PASSWORD_HISTORY_KEPT rows. */
  async keepPasswordInHistory(userId: string, id: string, now: Date): Promise<void> {
    await this.db.$executeRaw`
      INSERT INTO "PasswordHistory" ("id", "userId", "passwordHash", "createdAt")
      SELECT ${id}, "id", "passwordHash", ${now} FROM "User" WHERE "id" = ${userId} AND "passwordHash" IS NOT NULL`;
    await this.db.$executeRaw`
      DELETE FROM "PasswordHistory" WHERE "userId" = ${userId} AND "id" NOT IN (
        SELECT "id" FROM "PasswordHistory" WHERE "userId" = ${userId} ORDER BY "createdAt" DESC, "id" DESC LIMIT ${PASSWORD_HISTORY_KEPT})`;
  }
}
