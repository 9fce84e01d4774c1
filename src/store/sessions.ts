// Sign-in sessions: the row, the user a user check names (with what the checks need to know about it), the list
// read, and ending a session with the tokens issued from it.
import { Prisma } from "../../gen/prisma/client.js";
import { type EventRow, insertEventFrom, outboxCte } from "./events.js";
import type { Db } from "./index.js";
import type { OutboxRouter } from "./outbox.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver, type Window } from "./paging.js";
import {
  READY_FACTOR_COLUMNS,
  SESSION_USER_COLUMNS,
  SIGN_IN_SETTING_KINDS,
  type SignInFacts,
  type SignInUser,
  settingsJson,
  signInFactsOf,
  signInUserColumns,
  signInUserOf,
} from "./sign-in-sql.js";
import { query, queryJson, statement } from "./sql.js";

/** An application a session signed into: what ending the session tells it needs (SAML NameID and SessionIndex, OIDC sid). */
export interface NewParticipant {
  sessionId: string;
  appId: string;
  instanceId: string;
  protocol: "oidc" | "saml";
  nameId?: string;
  nameIdFormat?: string;
  sessionIndex?: string;
  sid?: string;
}

export interface ParticipantRow {
  sessionId: string;
  appId: string;
  instanceId: string;
  protocol: "oidc" | "saml";
  nameId: string | null;
  nameIdFormat: string | null;
  sessionIndex: string | null;
  sid: string | null;
  firstAt: Date;
  lastAt: Date;
}

export interface SessionRow {
  id: string;
  instanceId: string;
  userId: string | null;
  orgId: string | null;
  tokenHash: Uint8Array;
  sequence: number;
  creatorId: string;
  userCheckedAt: Date | null;
  passwordCheckedAt: Date | null;
  passwordChangeRequired: boolean;
  totpCheckedAt: Date | null;
  otpEmailCheckedAt: Date | null;
  webauthnCheckedAt: Date | null;
  webauthnUserVerified: boolean;
  intentCheckedAt: Date | null;
  webauthnChallenge: unknown;
  otpEmailCodeHash: Uint8Array | null;
  otpEmailExpiresAt: Date | null;
  metadata: unknown;
  userAgent: unknown;
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a session change writes besides the new token hash and sequence. */
export type SessionPatch = Partial<
  Pick<
    SessionRow,
    | "userId"
    | "orgId"
    | "userCheckedAt"
    | "passwordCheckedAt"
    | "passwordChangeRequired"
    | "totpCheckedAt"
    | "otpEmailCheckedAt"
    | "webauthnCheckedAt"
    | "webauthnUserVerified"
    | "intentCheckedAt"
    | "otpEmailExpiresAt"
    | "expiresAt"
  >
> & {
  webauthnChallenge?: Prisma.InputJsonValue | null;
  otpEmailCodeHash?: Uint8Array<ArrayBuffer> | null;
  metadata?: Prisma.InputJsonValue;
};

export type NewSession = Omit<SessionRow, "webauthnChallenge" | "otpEmailCodeHash" | "metadata" | "userAgent" | "tokenHash"> & {
  tokenHash: Uint8Array<ArrayBuffer>;
  webauthnChallenge: Prisma.InputJsonValue | null;
  otpEmailCodeHash: Uint8Array<ArrayBuffer> | null;
  metadata: Prisma.InputJsonValue;
  userAgent: Prisma.InputJsonValue | null;
};

/** The user a session is about, with what its checks and the sign-in rules read. */
export interface SessionUserRow {
  id: string;
  orgId: string;
  type: "HUMAN" | "MACHINE";
  state: "ACTIVE" | "INACTIVE" | "LOCKED" | "INITIAL";
  username: string;
  displayName: string | null;
  givenName: string | null;
  familyName: string | null;
  passwordChangeRequired: boolean;
  passwordChangedAt: Date | null;
  org: { state: "ACTIVE" | "INACTIVE"; primaryDomain: string };
}

const SESSION_USER_SELECT = {
  id: true,
  orgId: true,
  type: true,
  state: true,
  username: true,
  displayName: true,
  givenName: true,
  familyName: true,
  passwordChangeRequired: true,
  passwordChangedAt: true,
  org: { select: { state: true, primaryDomain: true } },
} as const;

/** Filters of a session list, and-ed. */
/** The comparisons of a creation-date filter. */
const CREATED_OPS = { eq: "=", gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/** Every column of a SessionRow, for the list statement. */
const SESSION_LIST_COLUMNS = [
  "id",
  "instanceId",
  "userId",
  "orgId",
  "tokenHash",
  "sequence",
  "creatorId",
  "userCheckedAt",
  "passwordCheckedAt",
  "passwordChangeRequired",
  "totpCheckedAt",
  "otpEmailCheckedAt",
  "webauthnCheckedAt",
  "webauthnUserVerified",
  "intentCheckedAt",
  "webauthnChallenge",
  "otpEmailCodeHash",
  "otpEmailExpiresAt",
  "metadata",
  "userAgent",
  "expiresAt",
  "createdAt",
  "updatedAt",
] as const satisfies readonly (keyof SessionRow)[];

/** The timestamps of a session row read on the driver (the embedded database may hand them back as text). */
function sessionDates(r: SessionRow): SessionRow {
  const opt = (v: Date | null) => (v === null ? null : dateOf(v));
  return {
    ...r,
    userCheckedAt: opt(r.userCheckedAt),
    passwordCheckedAt: opt(r.passwordCheckedAt),
    totpCheckedAt: opt(r.totpCheckedAt),
    otpEmailCheckedAt: opt(r.otpEmailCheckedAt),
    webauthnCheckedAt: opt(r.webauthnCheckedAt),
    intentCheckedAt: opt(r.intentCheckedAt),
    otpEmailExpiresAt: opt(r.otpEmailExpiresAt),
    expiresAt: opt(r.expiresAt),
    createdAt: dateOf(r.createdAt),
    updatedAt: dateOf(r.updatedAt),
  };
}

export interface SessionFilter {
  instanceId: string;
  /** Only sessions live at this instant (not expired). */
  liveAt: Date;
  ids?: string[];
  userIds?: string[];
  created?: { op: "eq" | "gt" | "gte" | "lt" | "lte"; at: Date }[];
}

/** Which second factors a user has ready (what a sign-in must then ask for). */
export interface ReadyFactors {
  totp: boolean;
  otpEmail: boolean;
  passkeys: number;
}

/** A nullable JSON column's value: SQL NULL for null. */
const jsonOrNull = (v: Prisma.InputJsonValue | null) => (v === null ? Prisma.DbNull : v);

export class SessionRepo {
  /** `router`: where the session's event goes besides the trail (the outbox, see outbox.ts). */
  constructor(
    readonly db: Db,
    private readonly router?: OutboxRouter,
  ) {}

  /**
   * Writes a new session with its audit event in one statement (both or neither); with `clearFailedPasswordsOf`, the
   * same statement starts that user's count of wrong passwords again (see UserRepo.clearFailedPasswords).
   */
  async insert(row: NewSession, event: EventRow, clearFailedPasswordsOf?: string): Promise<void> {
    const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));
    const clear = clearFailedPasswordsOf
      ? Prisma.sql`, cleared AS (
          UPDATE "User" SET "failedPasswordAttempts" = 0, "lockedAt" = NULL, "passwordLockPending" = false
          WHERE "id" = ${clearFailedPasswordsOf} AND "instanceId" = ${row.instanceId}
            AND ("failedPasswordAttempts" > 0 OR ("lockedAt" IS NOT NULL AND "state" <> 'LOCKED')))`
      : Prisma.empty;
    const outbox = await outboxCte(this.db, this.router, event, "inserted");
    await query(
      this.db,
      statement(
        Prisma.sql`WITH inserted AS (
          INSERT INTO "Session" ("id", "instanceId", "userId", "orgId", "tokenHash", "sequence", "creatorId", "userCheckedAt", "passwordCheckedAt",
            "passwordChangeRequired", "totpCheckedAt", "otpEmailCheckedAt", "webauthnCheckedAt", "webauthnUserVerified", "intentCheckedAt",
            "webauthnChallenge", "otpEmailCodeHash", "otpEmailExpiresAt", "metadata", "userAgent", "expiresAt", "createdAt", "updatedAt")
          VALUES (${row.id}, ${row.instanceId}, ${row.userId}, ${row.orgId}, ${row.tokenHash}::bytea, ${row.sequence}::int, ${row.creatorId},
            ${row.userCheckedAt}::timestamptz, ${row.passwordCheckedAt}::timestamptz, ${row.passwordChangeRequired}::boolean,
            ${row.totpCheckedAt}::timestamptz, ${row.otpEmailCheckedAt}::timestamptz, ${row.webauthnCheckedAt}::timestamptz,
            ${row.webauthnUserVerified}::boolean, ${row.intentCheckedAt}::timestamptz, ${json(row.webauthnChallenge)}::jsonb,
            ${row.otpEmailCodeHash}::bytea, ${row.otpEmailExpiresAt}::timestamptz, ${json(row.metadata)}::jsonb, ${json(row.userAgent)}::jsonb,
            ${row.expiresAt}::timestamptz, ${row.createdAt}::timestamptz, ${row.updatedAt}::timestamptz)
          RETURNING 1
        ), event AS (${insertEventFrom(event, Prisma.raw("inserted"))})${clear}${outbox.sql}
        SELECT 1`,
        `${clearFailedPasswordsOf ? "session_insert_clearing" : "session_insert"}${outbox.count ? `_outbox_${outbox.count}` : ""}`,
      ),
    );
  }

  find(instanceId: string, id: string): Promise<SessionRow | null> {
    return this.db.session.findFirst({ where: { id, instanceId } });
  }

  /**
   * Writes a change of the session if its token is still `expectedHash` (compare-and-set: of two requests with the
   * same token, one wins and the other's token is stale). False when it was changed or deleted meanwhile.
   */
  async update(
    id: string,
    expectedHash: Uint8Array,
    next: { tokenHash: Uint8Array<ArrayBuffer>; sequence: number; updatedAt: Date },
    patch: SessionPatch,
  ): Promise<boolean> {
    const { webauthnChallenge, ...rest } = patch;
    const { count } = await this.db.session.updateMany({
      where: { id, tokenHash: new Uint8Array(expectedHash) },
      data: { ...rest, ...(webauthnChallenge !== undefined ? { webauthnChallenge: jsonOrNull(webauthnChallenge) } : {}), ...next },
    });
    return count === 1;
  }

  /** The user a user check names by id, with what the checks read (one prepared statement). */
  async userById(instanceId: string, id: string): Promise<SignInUser | null> {
    const [row] = await queryJson<Record<string, unknown>>(
      this.db,
      statement(
        Prisma.sql`SELECT ${signInUserColumns(Prisma.sql`${instanceId}`)} FROM "User" u JOIN "Organization" o ON o."id" = u."orgId"
          WHERE u."id" = ${id} AND u."instanceId" = ${instanceId}`,
        "sign_in_user_by_id",
      ),
    );
    return row ? signInUserOf(row) : null;
  }

  /** The user of a login name `username@<organization domain>`, with what the checks read. */
  async userByLoginName(instanceId: string, usernameLower: string, domain: string): Promise<SignInUser | null> {
    const [row] = await queryJson<Record<string, unknown>>(
      this.db,
      statement(
        Prisma.sql`SELECT ${signInUserColumns(Prisma.sql`${instanceId}`)} FROM "User" u JOIN "Organization" o ON o."id" = u."orgId"
          WHERE u."instanceId" = ${instanceId} AND u."usernameLower" = ${usernameLower} AND o."primaryDomain" = ${domain} AND o."instanceId" = ${instanceId}
          LIMIT 1`,
        "sign_in_user_by_login_name",
      ),
    );
    return row ? signInUserOf(row) : null;
  }

  /** The users of a bare username in the whole instance (at most `limit`): one names the user, several none. */
  async usersByUsername(instanceId: string, usernameLower: string, limit: number): Promise<SignInUser[]> {
    const rows = await queryJson<Record<string, unknown>>(
      this.db,
      statement(
        Prisma.sql`SELECT ${signInUserColumns(Prisma.sql`${instanceId}`)} FROM "User" u JOIN "Organization" o ON o."id" = u."orgId"
          WHERE u."instanceId" = ${instanceId} AND u."usernameLower" = ${usernameLower} LIMIT ${limit}::int`,
        "sign_in_users_by_username",
      ),
    );
    return rows.flatMap((r) => signInUserOf(r) ?? []);
  }

  /** The users of some sessions, for their views (one query for a page). */
  viewUsers(ids: string[]): Promise<SessionUserRow[]> {
    return ids.length ? this.db.user.findMany({ where: { id: { in: ids } }, select: SESSION_USER_SELECT }) : Promise.resolve([]);
  }

  /**
   * What finishing a sign-in checks about a user of the instance, in one prepared statement: the user and its
   * organization, the settings that apply (SIGN_IN_SETTING_KINDS) and its ready second factors. Null: no such user.
   */
  async signInFacts(instanceId: string, userId: string): Promise<SignInFacts | null> {
    const [row] = await queryJson<Record<string, unknown>>(
      this.db,
      statement(
        Prisma.sql`SELECT ${SESSION_USER_COLUMNS}, ${settingsJson(SIGN_IN_SETTING_KINDS, Prisma.sql`${instanceId}`)}, ${READY_FACTOR_COLUMNS}
          FROM "User" u JOIN "Organization" o ON o."id" = u."orgId" WHERE u."id" = ${userId} AND u."instanceId" = ${instanceId}`,
        "sign_in_facts",
      ),
    );
    return row ? signInFactsOf(row) : null;
  }

  /**
   * The live sessions matching the filter, by creation (the id breaking ties); the total bounded (see Page); one
   * statement on the driver (pageOnDriver), named per shape of the filter.
   */
  async page(f: SessionFilter, w: Window): Promise<Paged<SessionRow>> {
    const where = [Prisma.sql`s."instanceId" = ${f.instanceId}`, Prisma.sql`(s."expiresAt" IS NULL OR s."expiresAt" > ${f.liveAt}::timestamptz)`];
    let shape = "";
    if (f.ids) {
      where.push(Prisma.sql`s."id" = ANY(${f.ids}::text[])`);
      shape += "i";
    }
    if (f.userIds) {
      where.push(Prisma.sql`s."userId" = ANY(${f.userIds}::text[])`);
      shape += "u";
    }
    for (const c of f.created ?? []) {
      where.push(Prisma.sql`s."createdAt" ${Prisma.raw(CREATED_OPS[c.op])} ${c.at}::timestamptz`);
      shape += c.op;
    }
    const page = await pageOnDriver<SessionRow>(
      this.db,
      {
        from: Prisma.sql`"Session" s`,
        alias: "s",
        where: Prisma.join(where, " AND "),
        columns: Prisma.raw(SESSION_LIST_COLUMNS.map((c) => `s."${c}"`).join(", ")),
        order: ["createdAt", "id"],
        name: where.length - 2 <= NAMED_MAX_FILTERS ? `session_list_${shape || "all"}` : undefined,
      },
      w,
    );
    return { ...page, rows: page.rows.map(sessionDates) };
  }

  /**
   * Deletes the session and revokes the unexpired access and refresh tokens issued from it; returns the user it was
   * about (null: it had none), or undefined when there was no such session.
   */
  /** The user's live sessions made since `since` in which no first factor (password, WebAuthn, external sign-in) was proven. */
  countUnproven(instanceId: string, userId: string, since: Date): Promise<number> {
    return this.db.session.count({
      where: {
        instanceId,
        userId,
        createdAt: { gt: since },
        passwordCheckedAt: null,
        webauthnCheckedAt: null,
        intentCheckedAt: null,
        OR: [{ expiresAt: null }, { expiresAt: { gt: since } }],
      },
    });
  }

  async terminate(instanceId: string, id: string, at: Date): Promise<{ userId: string | null; orgId: string | null } | undefined> {
    const rows = await this.db.session.findMany({ where: { id, instanceId }, select: { userId: true, orgId: true }, take: 1 });
    if (!rows.length) return undefined;
    await this.db.session.deleteMany({ where: { id, instanceId } });
    const live = { sessionId: id, revokedAt: null, expiresAt: { gt: at } };
    await this.db.oAuthToken.updateMany({ where: live, data: { revokedAt: at } });
    await this.db.refreshToken.updateMany({ where: live, data: { revokedAt: at } });
    return rows[0];
  }

  /**
   * Ends every session of the user but `keep` (the one that made the change, if any), with the access and refresh
   * tokens issued from them; how many ended.
   */
  async terminateOfUser(instanceId: string, userId: string, keep: string | undefined, at: Date): Promise<number> {
    const rows = await this.db.session.findMany({ where: { instanceId, userId, ...(keep ? { id: { not: keep } } : {}) }, select: { id: true } });
    if (!rows.length) return 0;
    const ids = rows.map((r) => r.id);
    await this.db.session.deleteMany({ where: { id: { in: ids } } });
    const live = { sessionId: { in: ids }, revokedAt: null, expiresAt: { gt: at } };
    await this.db.oAuthToken.updateMany({ where: live, data: { revokedAt: at } });
    await this.db.refreshToken.updateMany({ where: live, data: { revokedAt: at } });
    return ids.length;
  }

  /** Ends every session of the organization's users, with the access and refresh tokens issued from them; how many. */
  async terminateOfOrg(instanceId: string, orgId: string, at: Date): Promise<number> {
    const rows = await this.db.session.findMany({ where: { instanceId, orgId }, select: { id: true } });
    if (!rows.length) return 0;
    const ids = rows.map((r) => r.id);
    await this.db.session.deleteMany({ where: { id: { in: ids } } });
    const live = { sessionId: { in: ids }, revokedAt: null, expiresAt: { gt: at } };
    await this.db.oAuthToken.updateMany({ where: live, data: { revokedAt: at } });
    await this.db.refreshToken.updateMany({ where: live, data: { revokedAt: at } });
    return ids.length;
  }

  // ------------------------------------------------------------ participants

  /** Records (or refreshes) that the session signed into the app: one upsert, in the caller's transaction. */
  async participate(p: NewParticipant, at: Date): Promise<void> {
    const row = {
      protocol: p.protocol,
      nameId: p.nameId ?? null,
      nameIdFormat: p.nameIdFormat ?? null,
      sessionIndex: p.sessionIndex ?? null,
      sid: p.sid ?? null,
    };
    await this.db.sessionParticipant.upsert({
      where: { sessionId_appId: { sessionId: p.sessionId, appId: p.appId } },
      create: { sessionId: p.sessionId, appId: p.appId, instanceId: p.instanceId, ...row, firstAt: at, lastAt: at },
      update: { ...row, lastAt: at },
    });
  }

  /** What the session's participation in the app recorded (the NameID a SAML SP was given), or null. */
  participant(sessionId: string, appId: string): Promise<ParticipantRow | null> {
    return this.db.sessionParticipant.findUnique({ where: { sessionId_appId: { sessionId, appId } } }) as Promise<ParticipantRow | null>;
  }

  /** The apps these sessions signed into, oldest first. */
  participants(instanceId: string, sessionIds: readonly string[]): Promise<ParticipantRow[]> {
    if (sessionIds.length === 0) return Promise.resolve([]);
    return this.db.sessionParticipant.findMany({
      where: { instanceId, sessionId: { in: [...sessionIds] } },
      orderBy: [{ firstAt: "asc" }, { appId: "asc" }],
    }) as Promise<ParticipantRow[]>;
  }

  /** The sessions that gave the SAML SP (its app) this NameID. */
  samlParticipantsByNameId(instanceId: string, appId: string, nameId: string): Promise<ParticipantRow[]> {
    return this.db.sessionParticipant.findMany({ where: { instanceId, appId, nameId, protocol: "saml" } }) as Promise<ParticipantRow[]>;
  }

  /** Deletes sessions that expired before `before`. */
  async purgeExpired(instanceId: string, before: Date): Promise<number> {
    const { count } = await this.db.session.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
    return count;
  }
}
