// Issued tokens, the batching token writer, assertion replay detection, the
// OAuth client and key reads, and the one bearer-token resolution read.
import { createHash } from "node:crypto";
import { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";
import { dateOf, type Paged, pageOnDriver, type Window } from "./paging.js";
import type { RefreshTokenRow } from "./refresh-tokens.js";
import { bytesOf, gateAllowed } from "./sign-in-sql.js";
import { query, queryJson, statement } from "./sql.js";
import { machineUserByClientId, PROFILE_COLUMNS } from "./users.js";

/** What a token (or a used-assertion marker) row holds. */
export interface TokenRow {
  id: string;
  instanceId: string;
  /** "opaque", "jwt" or "assertion" (a used-assertion marker). */
  format: string;
  tokenHash?: Uint8Array | null;
  userId?: string | null;
  clientId: string;
  appId?: string | null;
  /** What the client authenticated with ("secret", "key:<id>"): replacing or removing it revokes the token. */
  credentialId?: string | null;
  scopes?: string[];
  audience?: string[];
  /** A user's sign-in session and the grant (auth request, refresh token family) the token was issued under. */
  sessionId?: string | null;
  grantId?: string | null;
  /** RFC 8693 §4.1: who acts for the user (a delegation), nested to the earliest actor. */
  act?: TokenActor | null;
  expiresAt: Date;
  createdAt?: Date;
}

/** An actor of RFC 8693 §4.1: its subject, and the actor before it, if any. */
export interface TokenActor {
  sub: string;
  act?: TokenActor;
}

/**
 * Batches up to this many rows go out as prepared statements, one per batch size (so at most this many per
 * connection): PostgreSQL then parses and plans each shape once per connection instead of at every batch.
 */
const NAMED_BATCH_SIZES = 16;

/** One INSERT of token rows (ON CONFLICT DO NOTHING) returning the ids written. */
function insertTokens(rows: TokenRow[]) {
  const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : []);
  const values = Prisma.join(
    rows.map(
      (r) => Prisma.sql`(${r.id}, ${r.instanceId}, ${r.format}, ${r.tokenHash ?? null}, ${r.userId ?? null}, ${r.clientId}, ${r.appId ?? null},
          ${r.credentialId ?? null}, ${list(r.scopes)}::text[], ${list(r.audience)}::text[], ${r.sessionId ?? null}, ${r.grantId ?? null},
          ${r.act ? JSON.stringify(r.act) : null}::jsonb, ${r.expiresAt}::timestamptz, ${r.createdAt ?? new Date()}::timestamptz)`,
    ),
  );
  return statement(
    Prisma.sql`
        INSERT INTO "OAuthToken" ("id", "instanceId", "format", "tokenHash", "userId", "clientId", "appId", "credentialId", "scopes", "audience",
          "sessionId", "grantId", "act", "expiresAt", "createdAt")
        VALUES ${values} ON CONFLICT DO NOTHING RETURNING "id"`,
    rows.length <= NAMED_BATCH_SIZES ? `token_insert_${rows.length}` : undefined,
  );
}

/** What a code or refresh grant redeems: the auth request of the code, or the refresh token it exchanges. */
/** What a grant redeems: an authorization code, or a refresh token (with the rotation's answer sealed for a retry). */
export type Redemption = { code: string } | { refreshToken: string; successorSealed?: Uint8Array<ArrayBuffer> };

/** A valid token as an administrator lists it (never its hash). */
export interface UserTokenRow {
  id: string;
  userId: string;
  clientId: string;
  scopes: string[];
  audience: string[];
  credentialId: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/** The user columns authentication, claims and userinfo read, with memberships and the org's state. */
const USER_SELECT = {
  id: true,
  instanceId: true,
  orgId: true,
  type: true,
  state: true,
  ...PROFILE_COLUMNS,
  updatedAt: true,
  accessTokenType: true,
  org: { select: { state: true } },
  instanceMemberships: { select: { roles: true } },
  orgMemberships: { select: { orgId: true, roles: true } },
} as const;

export type TokenUserRow = Prisma.UserGetPayload<{ select: typeof USER_SELECT }>;

export interface StoredTokenRow {
  id: string;
  instanceId: string;
  format: string;
  clientId: string;
  appId: string | null;
  scopes: string[];
  audience: string[];
  expiresAt: Date;
  createdAt: Date;
  revokedAt: Date | null;
  /** The session the token was issued from (code flow, refresh), if any. */
  sessionId: string | null;
  /** Who acts for the user (TokenRow.act); JSON as stored. */
  act: Prisma.JsonValue | null;
  user: TokenUserRow | null;
}

export interface StoredPatRow {
  id: string;
  instanceId: string;
  expiresAt: Date | null;
  createdAt: Date;
  user: TokenUserRow;
}

export interface ClientAppRow {
  id: string;
  instanceId: string;
  orgId: string;
  projectId: string;
  type: string;
  state: string;
  secretHash: Uint8Array | null;
  authMethod: string;
  accessTokenType: "BEARER" | "JWT";
  /** Application.config: the OIDC settings of an OIDC app. */
  config: unknown;
  project: { state: string; authorizationRequired: boolean; projectAccessRequired: boolean; org: { state: string } };
}

export interface ClientMachineUserRow {
  id: string;
  username: string;
  orgId: string;
  type: string;
  state: string;
  secretHash: Uint8Array | null;
  accessTokenType: "BEARER" | "JWT";
  org: { state: string };
}

export interface MachineKeyRow {
  publicKey: string;
  expiresAt: Date | null;
  user: { id: string; orgId: string; type: string; state: string; accessTokenType: "BEARER" | "JWT"; org: { state: string } };
}

/**
 * Group commit for OAuthToken rows: rows queued while a write is in flight go
 * to the database together in one INSERT (one commit, one WAL flush) instead
 * of one transaction each. Every caller still waits for its row to be
 * committed before it answers, so other replicas can always find the token.
 *
 * One INSERT at a time (bigger batches, fewer round trips and commits). Three
 * in flight were measured against it (27-28 November 2026, paired runs in one
 * process, README Performance): 1.5x the client credentials throughput while
 * other work kept the machine's load near 12 and commits took 3-10 ms, but
 * 0.6x at a load near 5 (median 2,571 against 4,192 tokens/s) with more CPU
 * per token in svc and in PostgreSQL; starting a second INSERT only once the
 * first had run for 2 ms was in between (2,893). Ten in flight, a transaction
 * per token as most adapters do, was the slowest: concurrent INSERTs contend on
 * the foreign-key lock of their user row.
 */
class TokenWriter {
  private queue: { row: TokenRow; done: (inserted: boolean) => void; fail: (err: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    private readonly db: Db,
    private readonly maxInFlight = 1,
    private readonly maxBatch = 200,
  ) {}

  /** Several rows in the same INSERT; per row whether it was inserted (false: a row with the same id exists). */
  insertMany(rows: TokenRow[]): Promise<boolean[]> {
    const all = rows.map((row) => new Promise<boolean>((done, fail) => this.queue.push({ row, done, fail })));
    if (this.inFlight < this.maxInFlight) this.flush();
    return Promise.all(all);
  }

  private flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    this.inFlight++;
    // One plain INSERT (Prisma's createManyAndReturn costs several times the CPU of a raw statement).
    const insert = query<{ id: string }>(this.db, insertTokens(batch.map((b) => b.row)));
    insert
      .then(
        (created) => {
          // A row queued twice in one batch (the same assertion's marker from two requests) is written once: only the
          // first caller's is fresh, or a replay batched with the original would pass as well.
          const ids = new Set(created.map((r) => r.id));
          for (const b of batch) b.done(ids.delete(b.row.id));
        },
        (err: unknown) => {
          for (const b of batch) b.fail(err);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.flush();
      });
  }
}

/**
 * The writers of one database client: issued tokens, and used-assertion markers (a separate queue: a client
 * assertion waits for its marker before the grant goes on).
 */
const writers = new WeakMap<object, { tokens: TokenWriter; markers: TokenWriter }>();
function writersOf(db: Db) {
  let w = writers.get(db);
  if (!w) {
    w = { tokens: new TokenWriter(db), markers: new TokenWriter(db) };
    writers.set(db, w);
  }
  return w;
}

/** A used assertion: who it belongs to, what identifies it, and until when it could still be accepted. */
export interface UsedAssertion {
  instanceId: string;
  /** The assertion's iss = sub. */
  subject: string;
  /** The jti, or without one the assertion's signing input. */
  identifier: string;
  owner: { userId: string; appId?: undefined } | { appId: string; userId?: undefined };
  expiresAt: Date;
  at: Date;
}

export class TokenRepo {
  constructor(readonly db: Db) {}

  /**
   * Writes issued tokens through the batching writer (with `marker`, in the same INSERT): per row whether it was
   * inserted. Outside any transaction by design (group commit).
   */
  insertBatched(rows: TokenRow[]): Promise<boolean[]> {
    return writersOf(this.db).tokens.insertMany(rows);
  }

  /** Writes one token row on this store's connection (inside a transaction: with the rest of it); false on an id collision. */
  async insertOne(row: TokenRow): Promise<boolean> {
    return (await query<{ id: string }>(this.db, insertTokens([row]))).length === 1;
  }

  /**
   * Replay detection: the marker row of a used assertion, kept in the database so every replica sees it. The
   * marker is `assertion:` + a hash of the subject and identifier; `markerOf` builds it for writing with a token.
   */
  markerOf(a: UsedAssertion): TokenRow {
    const marker = createHash("sha256").update(`${a.subject}\n${a.identifier}`).digest("base64url");
    return {
      id: `assertion:${marker}`,
      instanceId: a.instanceId,
      format: "assertion",
      userId: a.owner.userId ?? null,
      appId: a.owner.appId ?? null,
      clientId: a.subject,
      expiresAt: a.expiresAt,
      createdAt: a.at,
    };
  }

  /** Records a used assertion now; false when it was already used. */
  async recordAssertion(a: UsedAssertion): Promise<boolean> {
    const [fresh] = await writersOf(this.db).markers.insertMany([this.markerOf(a)]);
    return fresh === true;
  }

  /** A PAT and an opaque OAuth token by the SHA-256 of the secret (both looked up at once: one of them matches). */
  async findByHash(hash: Uint8Array<ArrayBuffer>): Promise<{ pat: StoredPatRow | null; oauth: StoredTokenRow | null }> {
    const [pat, oauth] = await Promise.all([
      this.db.personalAccessToken.findUnique({ where: { tokenHash: hash }, include: { user: { select: USER_SELECT } } }),
      this.db.oAuthToken.findUnique({ where: { tokenHash: hash }, include: { user: { select: USER_SELECT } } }),
    ]);
    return { pat, oauth };
  }

  /** An OAuth token by id (a JWT's jti). */
  findById(id: string): Promise<StoredTokenRow | null> {
    return this.db.oAuthToken.findUnique({ where: { id }, include: { user: { select: USER_SELECT } } });
  }

  /** The user a token is issued for (ID token claims). */
  findUser(userId: string): Promise<TokenUserRow | null> {
    return this.db.user.findUnique({ where: { id: userId }, select: USER_SELECT });
  }

  /** The user's metadata, by key. */
  metadataOf(userId: string): Promise<{ key: string; value: Uint8Array }[]> {
    return this.db.userMetadata.findMany({ where: { userId }, select: { key: true, value: true }, orderBy: { key: "asc" } });
  }

  /** What a client id may name: an application (any instance: the caller checks) and a machine user by login name or username. */
  /** The application or machine user a client id names; `by`: how the client id named the user. */
  async findClient(
    instanceId: string,
    clientId: string,
  ): Promise<{ app: ClientAppRow | null; user: ClientMachineUserRow | null; by?: "loginName" | "id" | "username" }> {
    // The application first, in one prepared statement with its project and organization; the machine user (two or
    // three reads) only when no OAuth application of this instance has the client id, which is what a client id names
    // first. A cache miss of an app's record is one statement instead of six.
    const [row] = await queryJson<Record<string, unknown>>(
      this.db,
      statement(
        Prisma.sql`SELECT a."id", a."instanceId", a."orgId", a."projectId", a."type"::text AS "type", a."state"::text AS "state", a."secretHash",
            a."authMethod", a."accessTokenType"::text AS "accessTokenType", a."config", p."state"::text AS "p_state",
            p."authorizationRequired" AS "p_authorizationRequired", p."projectAccessRequired" AS "p_projectAccessRequired", o."state"::text AS "o_state"
          FROM "Application" a JOIN "Project" p ON p."id" = a."projectId" JOIN "Organization" o ON o."id" = p."orgId"
          WHERE a."clientId" = ${clientId}`,
        "client_app_by_client_id",
      ),
    );
    const app: ClientAppRow | null = row
      ? {
          id: row.id as string,
          instanceId: row.instanceId as string,
          orgId: row.orgId as string,
          projectId: row.projectId as string,
          type: row.type as string,
          state: row.state as string,
          secretHash: row.secretHash === null ? null : bytesOf(row.secretHash as string),
          authMethod: row.authMethod as string,
          accessTokenType: row.accessTokenType as "BEARER" | "JWT",
          config: row.config,
          project: {
            state: row.p_state as string,
            authorizationRequired: row.p_authorizationRequired as boolean,
            projectAccessRequired: row.p_projectAccessRequired as boolean,
            org: { state: row.o_state as string },
          },
        }
      : null;
    if (app && app.instanceId === instanceId && (app.type === "API" || app.type === "OIDC")) return { app, user: null };
    const user = await machineUserByClientId(this.db, instanceId, clientId, {
      id: true,
      username: true,
      orgId: true,
      type: true,
      state: true,
      secretHash: true,
      accessTokenType: true,
      createdAt: true,
      org: { select: { state: true } },
    });
    return { app, user: user?.user ?? null, by: user?.by };
  }

  /** Whether an application has this client id. */
  async appClientExists(clientId: string): Promise<boolean> {
    return (await this.db.application.findUnique({ where: { clientId }, select: { id: true } })) !== null;
  }

  /** A machine user's key with its user (JWT profile grant). */
  findMachineKey(instanceId: string, kid: string, userId: string): Promise<MachineKeyRow | null> {
    return this.db.machineKey.findFirst({
      where: { id: kid, userId, instanceId },
      select: {
        publicKey: true,
        expiresAt: true,
        user: { select: { id: true, orgId: true, type: true, state: true, accessTokenType: true, org: { select: { state: true } } } },
      },
    });
  }

  /** The public key of a client assertion: an application's key or a machine user's. */
  findClientKey(kid: string, owner: { appId: string } | { userId: string }): Promise<{ publicKey: string; expiresAt: Date | null } | null> {
    const select = { publicKey: true, expiresAt: true } as const;
    return "appId" in owner
      ? this.db.appKey.findFirst({ where: { id: kid, appId: owner.appId }, select })
      : this.db.machineKey.findFirst({ where: { id: kid, userId: owner.userId }, select });
  }

  /** The instance's projects among `ids` with their role-assertion setting (one prepared statement, off Prisma's runtime). */
  projectsOf(instanceId: string, ids: string[]): Promise<{ id: string; projectRoleAssertion: boolean }[]> {
    return query<{ id: string; projectRoleAssertion: boolean }>(
      this.db,
      statement(
        Prisma.sql`SELECT "id", "projectRoleAssertion" FROM "Project" WHERE "id" = ANY(${ids}::text[]) AND "instanceId" = ${instanceId}`,
        "token_projects",
      ),
    );
  }

  /**
   * The instance's projects among `ids`, each with whether `user` passes its
   * gates: with authorizationRequired the user holds an active grant of one of
   * its roles; with projectAccessRequired the user's organization owns the
   * project or holds an active project grant of it.
   */
  projectGates(instanceId: string, ids: string[], user: { id: string; orgId: string }): Promise<{ id: string; allowed: boolean }[]> {
    const allowed = gateAllowed(Prisma.raw("p"), Prisma.sql`${user.id}`, Prisma.sql`${user.orgId}`);
    return query<{ id: string; allowed: boolean }>(
      this.db,
      statement(
        Prisma.sql`SELECT p."id", ${allowed} AS "allowed" FROM "Project" p WHERE p."id" = ANY(${ids}::text[]) AND p."instanceId" = ${instanceId}`,
        "token_project_gates",
      ),
    );
  }

  /**
   * A code or refresh grant's write, as one statement (atomic without a transaction's round trips): the redemption
   * (the code marked used, or the old refresh token marked exchanged) and, only if it wins, the new access token row
   * and refresh token row. False when the grant was already redeemed (or the refresh token revoked): nothing written.
   */
  async issueRedeeming(redeem: Redemption, token: TokenRow, refresh: RefreshTokenRow | undefined, now: Date): Promise<boolean> {
    const list = (v: string[] | undefined) => v ?? [];
    const redemption =
      "code" in redeem
        ? Prisma.sql`UPDATE "AuthRequest" SET "codeUsedAt" = ${now}::timestamptz
            WHERE "id" = ${redeem.code} AND "instanceId" = ${token.instanceId} AND "codeUsedAt" IS NULL RETURNING 1`
        : Prisma.sql`UPDATE "RefreshToken" SET "usedAt" = ${now}::timestamptz, "successorSealed" = ${redeem.successorSealed ?? null}::bytea
            WHERE "id" = ${redeem.refreshToken} AND "instanceId" = ${token.instanceId} AND "usedAt" IS NULL AND "revokedAt" IS NULL RETURNING 1`;
    const t = token;
    const refreshInsert = refresh
      ? Prisma.sql`, refreshed AS (
          INSERT INTO "RefreshToken" ("id", "instanceId", "tokenHash", "familyId", "userId", "clientId", "appId", "sessionId", "scopes", "audience",
            "authTime", "amr", "expiresAt", "createdAt")
          SELECT ${refresh.id}::text, ${refresh.instanceId}::text, ${refresh.tokenHash}::bytea, ${refresh.familyId}::text, ${refresh.userId}::text,
            ${refresh.clientId}::text, ${refresh.appId}::text, ${refresh.sessionId}::text, ${refresh.scopes}::text[], ${refresh.audience}::text[],
            ${refresh.authTime}::timestamptz, ${refresh.amr}::text[], ${refresh.expiresAt}::timestamptz, ${refresh.createdAt}::timestamptz
          FROM redeemed)`
      : Prisma.empty;
    // No ON CONFLICT: a colliding id or hash fails the whole statement, redemption included.
    const [row] = await query<{ redeemed: number }>(
      this.db,
      statement(
        Prisma.sql`WITH redeemed AS (${redemption}), issued AS (
          INSERT INTO "OAuthToken" ("id", "instanceId", "format", "tokenHash", "userId", "clientId", "appId", "credentialId", "scopes", "audience",
            "sessionId", "grantId", "expiresAt", "createdAt")
          SELECT ${t.id}::text, ${t.instanceId}::text, ${t.format}::text, ${t.tokenHash ?? null}::bytea, ${t.userId ?? null}::text, ${t.clientId}::text,
            ${t.appId ?? null}::text, ${t.credentialId ?? null}::text, ${list(t.scopes)}::text[], ${list(t.audience)}::text[], ${t.sessionId ?? null}::text,
            ${t.grantId ?? null}::text, ${t.expiresAt}::timestamptz, ${t.createdAt ?? now}::timestamptz
          FROM redeemed)${refreshInsert}
        SELECT count(*)::int AS "redeemed" FROM redeemed`,
        `grant_issue_${"code" in redeem ? "code" : "refresh"}${refresh ? "_with_refresh" : ""}`,
      ),
    );
    return row?.redeemed === 1;
  }

  /**
   * Revokes the unexpired tokens of a user or an application issued under `credential` ("secret", "key:<id>"), or
   * under any credential when it is undefined; returns how many.
   */
  async revokeIssued(owner: { userId: string } | { appId: string }, at: Date, credential?: string): Promise<number> {
    const { count } = await this.db.oAuthToken.updateMany({
      where: { ...owner, ...(credential !== undefined ? { credentialId: credential } : {}), revokedAt: null, expiresAt: { gt: at } },
      data: { revokedAt: at },
    });
    return count;
  }

  /** One page of a user's valid tokens (unrevoked, unexpired at `now`), by creation. */
  /**
   * A user's valid access tokens by creation (the id breaking ties); the total bounded (see Page): a machine user may
   * hold many (one per client credentials grant). One statement on the driver (pageOnDriver); the (userId, createdAt)
   * index serves both the count and the page.
   */
  async livePage(userId: string, now: Date, p: Window): Promise<Paged<UserTokenRow>> {
    const page = await pageOnDriver<Omit<UserTokenRow, "createdAt" | "expiresAt"> & { createdAt: unknown; expiresAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"OAuthToken" t`,
        alias: "t",
        where: Prisma.sql`t."userId" = ${userId} AND t."revokedAt" IS NULL AND t."expiresAt" > ${now}::timestamptz AND t."format" IN ('opaque', 'jwt')`,
        columns: Prisma.sql`t."id", t."userId", t."clientId", t."scopes", t."audience", t."credentialId", t."createdAt", t."expiresAt"`,
        order: ["createdAt", "id"],
        name: "user_token_list",
      },
      p,
    );
    return { ...page, rows: page.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), expiresAt: dateOf(r.expiresAt) })) };
  }

  /** Revokes a user's valid tokens, only those with `ids` or of `clientId` when given; returns how many. */
  async revokeOf(userId: string, at: Date, only: { ids?: string[]; clientId?: string }): Promise<number> {
    const { count } = await this.db.oAuthToken.updateMany({
      where: {
        userId,
        revokedAt: null,
        expiresAt: { gt: at },
        format: { in: ["opaque", "jwt"] },
        ...(only.ids ? { id: { in: only.ids } } : {}),
        ...(only.clientId ? { clientId: only.clientId } : {}),
      },
      data: { revokedAt: at },
    });
    return count;
  }

  /** Revokes every unexpired token of an organization's users and applications (one statement each). */
  async revokeOrg(orgId: string, at: Date): Promise<number> {
    const live = { revokedAt: null, expiresAt: { gt: at } };
    const [users, apps] = await Promise.all([
      this.db.oAuthToken.updateMany({ where: { ...live, user: { orgId } }, data: { revokedAt: at } }),
      this.db.oAuthToken.updateMany({ where: { ...live, app: { project: { orgId } } }, data: { revokedAt: at } }),
    ]);
    return users.count + apps.count;
  }

  /** RFC 7009: marks the token revoked (idempotent). */
  async revoke(id: string, at: Date): Promise<void> {
    await this.db.oAuthToken.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
  }

  /** Deletes token rows and used-assertion markers that expired before `before`. */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.oAuthToken.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }
}
