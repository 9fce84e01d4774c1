// Users and their profile rows (emails, phones, addresses), metadata and the
// provisioners' externalIds: every read shape, the hot-path statements (user
// insert in users-insert.ts, GetUser here), the row lock of SCIM changes.
import { Prisma, type User } from "../../gen/prisma/client.js";
import { alreadyExists } from "../domain/errors.js";
import type { UserView } from "../domain/identity/users.js";
import type { ListTotal, Page, TextMatch } from "../domain/list.js";
import { ActionRepo } from "./actions.js";
import { unique } from "./errors.js";
import { deliveriesOf } from "./events.js";
import type { Db } from "./index.js";
import type { OutboxRouter } from "./outbox.js";
import { countAndPage, textFilter } from "./paging.js";
import { query, statement } from "./sql.js";
import { insertUserStatement, type NewUser } from "./users-insert.js";

export type { NewUser, NewUserRow } from "./users-insert.js";

/** The columns a change may write (never the user's identity, type or instance). */
export type UserPatch = Partial<Omit<User, "id" | "instanceId" | "orgId" | "type" | "createdAt">>;

/** What commands acting on a user need to know about it. */
export interface TargetUser {
  id: string;
  orgId: string;
  type: User["type"];
  state: User["state"];
  username: string;
}

const TARGET_SELECT = { id: true, orgId: true, type: true, state: true, username: true } satisfies Prisma.UserSelect;

/** The profile columns that token claims and userinfo read too (src/store/tokens.ts). */
export const PROFILE_COLUMNS = {
  username: true,
  givenName: true,
  familyName: true,
  nickName: true,
  displayName: true,
  preferredLanguage: true,
  email: true,
  emailVerified: true,
  phone: true,
  phoneVerified: true,
} as const satisfies Prisma.UserSelect;

/** The columns a v2 UpdateUser compares its input with. */
const PROFILE_SELECT = {
  ...PROFILE_COLUMNS,
  gender: true,
  machineName: true,
  description: true,
  accessTokenType: true,
  updatedAt: true,
} satisfies Prisma.UserSelect;
export type UserProfileRow = Prisma.UserGetPayload<{ select: typeof PROFILE_SELECT }>;

/** A user's row as a SCIM change reads it under the row lock. */
export type LockedScimUser = TargetUser & Pick<User, "email" | "emailVerified" | "phone" | "phoneVerified">;

/** Rows of the multi-valued SCIM attributes, validated, positions kept. */
export interface ContactRow {
  id: string;
  position: number;
  value: string;
  type: string | null;
  display: string | null;
  primary: boolean;
}
export interface AddressRow {
  id: string;
  position: number;
  type: string | null;
  streetAddress: string | null;
  locality: string | null;
  region: string | null;
  postalCode: string | null;
  country: string | null;
  formatted: string | null;
  primary: boolean;
}
export interface ProfileRows {
  emails: ContactRow[];
  phoneNumbers: ContactRow[];
  addresses: AddressRow[];
}

/** The v2 user view as one SQL statement over `u` and its organization `o`, for reads on the driver (src/store/sql.ts). */
/** The columns of a UserViewRow over the user `u` and its organization `o`. */
export const USER_VIEW_COLUMNS = Prisma.sql`u."id", u."orgId", u."type"::text AS "type", u."state"::text AS "state", u."username", u."givenName", u."familyName",
    u."nickName", u."displayName", u."preferredLanguage", u."gender", u."email", u."emailVerified", u."phone", u."phoneVerified",
    u."passwordChangeRequired", u."passwordChangedAt", u."machineName", u."description", u."accessTokenType"::text AS "accessTokenType",
    u."secretCreatedAt" IS NOT NULL AS "hasSecret", u."createdAt", u."updatedAt", o."primaryDomain"`;

export const USER_VIEW_FROM = Prisma.sql`
  SELECT ${USER_VIEW_COLUMNS}
  FROM "User" u JOIN "Organization" o ON o."id" = u."orgId"`;

export type UserViewRow = Omit<UserView, "loginNames" | "preferredLoginName" | "passwordChangedAt" | "createdAt" | "updatedAt"> & {
  primaryDomain: string;
  passwordChangedAt: Date | string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
};

/** The embedded database may hand timestamps back as text. */
const asDate = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

/** Field by field (not a spread): one object shape for every user, which keeps a 1,000-row page cheap to build. */
export function viewFromRow(r: UserViewRow): UserView {
  const loginName = `${r.username}@${r.primaryDomain}`;
  return {
    id: r.id,
    orgId: r.orgId,
    type: r.type,
    state: r.state,
    username: r.username,
    loginNames: [loginName],
    preferredLoginName: loginName,
    givenName: r.givenName,
    familyName: r.familyName,
    nickName: r.nickName,
    displayName: r.displayName,
    preferredLanguage: r.preferredLanguage,
    gender: r.gender,
    email: r.email,
    emailVerified: r.emailVerified,
    phone: r.phone,
    phoneVerified: r.phoneVerified,
    passwordChangeRequired: r.passwordChangeRequired,
    passwordChangedAt: r.passwordChangedAt === null ? null : asDate(r.passwordChangedAt),
    machineName: r.machineName,
    description: r.description,
    accessTokenType: r.accessTokenType,
    hasSecret: r.hasSecret,
    createdAt: asDate(r.createdAt),
    updatedAt: asDate(r.updatedAt),
  };
}

/** The class of svc's advisory locks ("svc"), as in members.ts and projects.ts; the key is hashed into the second half. */
const LOCK_CLASS = 0x737663;

/**
 * The user unique indexes as the domain's AlreadyExists: the (instance, organization, lower-cased username) one, a provisioner's
 * externalId, and otherwise the id.
 */
function userUnique<T>(write: Promise<T>): Promise<T> {
  const taken = unique(write, () => alreadyExists("Errors.User.AlreadyExists", "a user with this username already exists"), "usernameLower");
  const externalId = unique(taken, () => alreadyExists("Errors.User.ExternalIdTaken", "another user of this provisioner has this externalId"), "externalId");
  return unique(externalId, () => alreadyExists("Errors.User.IdTaken", "a user with this id already exists"));
}

/**
 * The machine user a client id names: its login name `username@<organization domain>` (unique in the instance),
 * else its user id or its bare username. Usernames are unique per organization only, so a bare name may be taken in several:
 * it names the oldest such machine user, so that a namesake created later in another organization can never take
 * over (or break) an existing client id; the others authenticate with their login name (or user id, JWT profile).
 */
export async function machineUserByClientId<S extends Prisma.UserSelect & { createdAt: true }>(db: Db, instanceId: string, clientId: string, select: S) {
  const name = clientId.toLowerCase();
  const at = name.lastIndexOf("@");
  const [byLoginName, byId, byName] = await Promise.all([
    at > 0
      ? db.user.findFirst({ where: { instanceId, type: "MACHINE", usernameLower: name.slice(0, at), org: { primaryDomain: name.slice(at + 1) } }, select })
      : null,
    // The user id names the machine too (the iss and sub of its JWT-profile assertions).
    db.user.findFirst({ where: { id: clientId, instanceId, type: "MACHINE" }, select }),
    db.user.findFirst({ where: { instanceId, type: "MACHINE", usernameLower: name }, orderBy: [{ createdAt: "asc" }, { id: "asc" }], select }),
  ]);
  if (byLoginName) return { user: byLoginName, by: "loginName" as const };
  // A user id and another machine's username may be spelt alike (both can be chosen): the older user keeps the
  // client id, so a user created later can never take it over.
  const created = (u: unknown) => (u as { createdAt: Date }).createdAt.getTime();
  if (byId && (!byName || created(byId) <= created(byName))) return { user: byId, by: "id" as const };
  return byName ? { user: byName, by: "username" as const } : null;
}

/** When this process last refreshed the user tables' statistics (ms), per database client, and how often it may. */
const statisticsRefreshedAt = new WeakMap<object, number>();
const STATISTICS_INTERVAL_MS = 60_000;

export class UserRepo {
  /** `router`: where the creation event goes besides the trail (the outbox, see outbox.ts). */
  constructor(
    readonly db: Db,
    private readonly router?: OutboxRouter,
  ) {}

  /**
   * After a burst of writes (a SCIM Bulk of many users): refresh the planner's statistics of the user tables in the
   * background, at most once a minute per process, rather than waiting for autovacuum. Prepared statements planned
   * with the statistics of before the burst would otherwise keep slow plans. Failures only cost the refresh.
   */
  refreshStatisticsSoon(onError: (err: unknown) => void): void {
    const now = Date.now();
    if (now - (statisticsRefreshedAt.get(this.db) ?? 0) < STATISTICS_INTERVAL_MS) return;
    statisticsRefreshedAt.set(this.db, now);
    void query(this.db, { text: 'ANALYZE "User", "UserEmail", "ScimExternalId"', values: [] }).catch(onError);
  }

  // ------------------------------------------------------------ reads

  findTarget(instanceId: string, id: string): Promise<TargetUser | null> {
    return this.db.user.findFirst({ where: { id, instanceId }, select: TARGET_SELECT });
  }

  /** One prepared statement on the driver: GetUserByID is among the most called reads. */
  async view(instanceId: string, id: string): Promise<UserView | undefined> {
    const [row] = await query<UserViewRow>(
      this.db,
      statement(Prisma.sql`${USER_VIEW_FROM} WHERE u."id" = ${id} AND u."instanceId" = ${instanceId}`, "user_view_by_id"),
    );
    return row && viewFromRow(row);
  }

  profile(id: string): Promise<UserProfileRow> {
    return this.db.user.findUniqueOrThrow({ where: { id }, select: PROFILE_SELECT });
  }

  async passwordHash(id: string): Promise<string | null> {
    const row = await this.db.user.findUnique({ where: { id }, select: { passwordHash: true } });
    return row?.passwordHash ?? null;
  }

  async state(id: string): Promise<User["state"] | undefined> {
    return (await this.db.user.findUnique({ where: { id }, select: { state: true } }))?.state;
  }

  /** A human user of `orgId`: what SCIM sees. */
  findScimUser(instanceId: string, orgId: string, id: string): Promise<{ id: string } | null> {
    return this.db.user.findFirst({ where: { id, instanceId, orgId, type: "HUMAN" }, select: { id: true } });
  }

  /**
   * Locks a human user of `orgId` for the rest of the transaction: concurrent SCIM changes of one user apply one
   * after the other, and a delete in between is seen.
   */
  async lockScimUser(instanceId: string, orgId: string, id: string): Promise<LockedScimUser | undefined> {
    const [row] = await this.db.$queryRaw<LockedScimUser[]>`
      SELECT "id", "orgId", "type"::text AS "type", "state"::text AS "state", "username", "email", "emailVerified", "phone", "phoneVerified"
      FROM "User" WHERE "id" = ${id} AND "instanceId" = ${instanceId} AND "orgId" = ${orgId} AND "type" = 'HUMAN' FOR UPDATE`;
    return row;
  }

  // ------------------------------------------------------------ writes

  /**
   * Runs the one-statement insert (users-insert.ts): "noOrg" when the organization does not exist, "wide" when
   * usernames are unique in the instance and the caller has not checked the name under lockUsername (wideChecked).
   */
  async insert(user: NewUser, wideChecked = false): Promise<"inserted" | "noOrg" | "wide"> {
    const routes = this.router ? await this.router.routes(user.event, new ActionRepo(this.db)) : [];
    const deliveries = routes.length ? deliveriesOf(user.event, routes) : [];
    const [row] = await userUnique(query<{ n: number; wide: boolean }>(this.db, insertUserStatement(user, wideChecked, deliveries)));
    if (row?.n === 1) return "inserted";
    return row?.wide && !wideChecked ? "wide" : "noOrg";
  }

  /** Serialises, until the transaction ends, everything that claims this (lower-cased) username in the instance. */
  async lockUsername(instanceId: string, usernameLower: string): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, hashtext(${`username:${instanceId}:${usernameLower}`}))`;
  }

  /** Whether a user other than `exceptUserId` has this (lower-cased) username anywhere in the instance. */
  async usernameTaken(instanceId: string, usernameLower: string, exceptUserId: string): Promise<boolean> {
    const row = await this.db.user.findFirst({ where: { instanceId, usernameLower, id: { not: exceptUserId } }, select: { id: true } });
    return row !== null;
  }

  /** Up to `limit` usernames held in more than one organization of the instance. */
  async usernamesInSeveralOrgs(instanceId: string, limit: number): Promise<string[]> {
    const rows = await this.db.$queryRaw<{ name: string }[]>`
      SELECT "usernameLower" AS "name" FROM "User" WHERE "instanceId" = ${instanceId}
      GROUP BY "usernameLower" HAVING count(DISTINCT "orgId") > 1 ORDER BY "usernameLower" LIMIT ${limit}`;
    return rows.map((r) => r.name);
  }

  async update(id: string, data: UserPatch): Promise<void> {
    await userUnique(this.db.user.update({ where: { id }, data }));
  }

  /** Writes `data` only while the user is in one of `from`; false when it no longer is. */
  async updateInState(id: string, from: readonly User["state"][], data: UserPatch): Promise<boolean> {
    const { count } = await this.db.user.updateMany({ where: { id, state: { in: [...from] } }, data });
    return count === 1;
  }

  /** Replaces the password hash only while it is still `expected`; false when it changed meanwhile. */
  async replacePasswordHash(id: string, expected: string, passwordHash: string): Promise<boolean> {
    const { count } = await this.db.user.updateMany({ where: { id, passwordHash: expected }, data: { passwordHash } });
    return count === 1;
  }

  /** Counts a failed password check; returns the count and the state after it. */
  countFailedPassword(id: string): Promise<Pick<User, "failedPasswordAttempts" | "state">> {
    return this.db.user.update({
      where: { id },
      data: { failedPasswordAttempts: { increment: 1 } },
      select: { failedPasswordAttempts: true, state: true },
    });
  }

  /**
   * Reserves one password check before its hash is verified: counts it as failed (a right password clears the count
   * afterwards) only while the user may try now, in one statement, so that concurrent checks cannot outrun the lock.
   * May try: not LOCKED, and below `limit` (0: no limit), or its lock period over (the period after the limit is
   * reached is `firstLockSeconds`, doubled per further period, at most `maxLockSeconds`). The check that reaches the
   * limit starts the lock period at once (`lockedAt`), pending (`passwordLockPending`) until its password proves wrong,
   * so no other check runs while it is verified. Null: the user may not try now (or does not exist).
   */
  async reservePasswordCheck(
    id: string,
    policy: { limit: number; firstLockSeconds: number; maxLockSeconds: number },
    now: Date,
  ): Promise<{ failedPasswordAttempts: number } | null> {
    const { limit, firstLockSeconds, maxLockSeconds } = policy;
    const [row] = await query<{ failedPasswordAttempts: number }>(
      this.db,
      statement(
        Prisma.sql`UPDATE "User" SET "failedPasswordAttempts" = "failedPasswordAttempts" + 1,
            "lockedAt" = CASE WHEN ${limit}::int > 0 AND "failedPasswordAttempts" + 1 >= ${limit}::int THEN ${now}::timestamptz ELSE "lockedAt" END,
            "passwordLockPending" = ${limit}::int > 0 AND "failedPasswordAttempts" + 1 >= ${limit}::int
          WHERE "id" = ${id} AND "state" <> 'LOCKED' AND (
            ${limit}::int = 0 OR "failedPasswordAttempts" < ${limit}::int OR "lockedAt" IS NULL
            OR "lockedAt" + make_interval(secs => LEAST(${firstLockSeconds}::float8 * power(2::float8, LEAST("failedPasswordAttempts" - ${limit}::int, 40)), ${maxLockSeconds}::float8))
              <= ${now}::timestamptz)
          RETURNING "failedPasswordAttempts"`,
        "user_reserve_password_check",
      ),
    );
    return row ?? null;
  }

  /** A right password starts the count of wrong ones again (and ends a last owner's password lock). */
  async clearFailedPasswords(id: string): Promise<void> {
    await this.db.user.updateMany({
      where: { id, OR: [{ failedPasswordAttempts: { gt: 0 } }, { lockedAt: { not: null }, state: { not: "LOCKED" } }] },
      data: { failedPasswordAttempts: 0, lockedAt: null, passwordLockPending: false },
    });
  }

  /** A wrong password at the limit: the lock its reservation started holds (no longer pending). */
  async confirmPasswordLock(id: string): Promise<void> {
    await this.db.user.updateMany({ where: { id, passwordLockPending: true }, data: { passwordLockPending: false } });
  }

  passwordLock(id: string): Promise<Pick<User, "failedPasswordAttempts" | "state" | "lockedAt" | "passwordLockPending"> | null> {
    return this.db.user.findUnique({ where: { id }, select: { failedPasswordAttempts: true, state: true, lockedAt: true, passwordLockPending: true } });
  }

  /** False when there was no user left to delete. */
  async delete(id: string): Promise<boolean> {
    const { count } = await this.db.user.deleteMany({ where: { id } });
    return count > 0;
  }

  // ------------------------------------------------------------ profile rows (SCIM emails, phoneNumbers, addresses)

  async replaceProfileRows(userId: string, rows: ProfileRows): Promise<void> {
    await Promise.all([
      this.db.userEmail.deleteMany({ where: { userId } }),
      this.db.userPhone.deleteMany({ where: { userId } }),
      this.db.userAddress.deleteMany({ where: { userId } }),
    ]);
    // One statement per kind, only when there are rows.
    if (rows.emails.length) await this.db.userEmail.createMany({ data: rows.emails.map((r) => ({ ...r, userId })) });
    if (rows.phoneNumbers.length) await this.db.userPhone.createMany({ data: rows.phoneNumbers.map((r) => ({ ...r, userId })) });
    if (rows.addresses.length) await this.db.userAddress.createMany({ data: rows.addresses.map((r) => ({ ...r, userId })) });
  }

  /**
   * Keeps the SCIM emails / phoneNumbers rows in step with a v2 change of the
   * user's email or phone: the row holding the old value (the primary one,
   * which is what the v2 API shows) takes the new value; none given removes it.
   */
  async syncPrimaryContact(kind: "email" | "phone", userId: string, previous: string | null, value: string | null, newRowId: string): Promise<void> {
    const table = (kind === "email" ? this.db.userEmail : this.db.userPhone) as unknown as typeof this.db.userEmail;
    const rows = await table.findMany({ where: { userId }, orderBy: { position: "asc" }, select: { id: true, value: true, primary: true, position: true } });
    const row = rows.find((r) => r.primary) ?? rows.find((r) => r.value === previous);
    if (row && value === null) await table.delete({ where: { id: row.id } });
    else if (row && value !== null) await table.update({ where: { id: row.id }, data: { value } });
    else if (value !== null) {
      const position = rows.length ? Math.min(...rows.map((r) => r.position)) - 1 : 0;
      await table.create({ data: { id: newRowId, userId, position, value, primary: true } });
    }
  }

  /** The provisioner's externalId of the user; null removes it. */
  async setExternalId(e: { userId: string; orgId: string; provisionerId: string; externalId: string | null; now: Date }): Promise<void> {
    const { userId, orgId, provisionerId, externalId, now } = e;
    if (externalId === null) {
      await this.db.scimExternalId.deleteMany({ where: { userId, provisionerId } });
      return;
    }
    await userUnique(
      this.db.scimExternalId.upsert({
        where: { userId_provisionerId: { userId, provisionerId } },
        create: { userId, orgId, provisionerId, externalId, createdAt: now },
        update: { externalId },
      }),
    );
  }

  // ------------------------------------------------------------ metadata

  async setMetadata(userId: string, entries: readonly { key: string; value: Uint8Array<ArrayBuffer> }[], now: Date): Promise<void> {
    for (const m of entries) {
      await this.db.userMetadata.upsert({
        where: { userId_key: { userId, key: m.key } },
        create: { userId, key: m.key, value: m.value, createdAt: now, updatedAt: now },
        update: { value: m.value, updatedAt: now },
      });
    }
  }

  /** How many metadata entries a user has and how many bytes their keys and values take. */
  async metadataUsage(userId: string): Promise<{ entries: number; bytes: number }> {
    const [row] = await this.db.$queryRaw<{ entries: number; bytes: number }[]>`
      SELECT count(*)::int AS "entries", COALESCE(sum(octet_length("key") + octet_length("value")), 0)::int AS "bytes"
      FROM "UserMetadata" WHERE "userId" = ${userId}`;
    return row ?? { entries: 0, bytes: 0 };
  }

  /** The total and one page of a user's metadata, by key, each key matching every one of `keys`. */
  async metadataPage(
    userId: string,
    keys: TextMatch[],
    p: Page,
  ): Promise<ListTotal & { entries: { key: string; value: Uint8Array; createdAt: Date; updatedAt: Date }[] }> {
    const where: Prisma.UserMetadataWhereInput = { userId, AND: keys.map((m) => ({ key: textFilter(m) })) };
    const { rows, ...total } = await countAndPage(
      this.db,
      p,
      (take) => this.db.userMetadata.count({ where, take }),
      this.db.userMetadata.findMany({ where, orderBy: { key: p.asc ? "asc" : "desc" }, skip: p.offset, take: p.limit }),
    );
    return { ...total, entries: rows };
  }

  /** How many of `keys` existed and are now deleted. */
  async deleteMetadata(userId: string, keys: string[]): Promise<number> {
    const { count } = await this.db.userMetadata.deleteMany({ where: { userId, key: { in: keys } } });
    return count;
  }
}
