// Refresh tokens (only their SHA-256). A family is everything issued under one authorization code: its id is the
// auth request's, and the access tokens of the family carry it as OAuthToken.grantId, so revoking a family (a replayed
// code or refresh token, a revocation request) ends its refresh tokens and its access tokens in one go.
import { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";
import {
  asDate,
  GRANT_USER_COLUMNS,
  type GrantUserRow,
  gatesJson,
  gatesOf,
  grantUserOf,
  LINK_SESSION_COLUMNS,
  type LinkSessionRow,
  linkSessionOf,
} from "./sign-in-sql.js";
import { queryJson, statement } from "./sql.js";

export interface RefreshTokenRow {
  id: string;
  instanceId: string;
  tokenHash: Uint8Array<ArrayBuffer>;
  familyId: string;
  userId: string;
  clientId: string;
  appId: string;
  sessionId: string | null;
  scopes: string[];
  audience: string[];
  authTime: Date;
  amr: string[];
  /** The family's absolute end (carried over by every rotation). */
  expiresAt: Date;
  createdAt: Date;
}

export interface StoredRefreshToken extends Omit<RefreshTokenRow, "tokenHash"> {
  usedAt: Date | null;
  revokedAt: Date | null;
}

const SELECT = {
  id: true,
  instanceId: true,
  familyId: true,
  userId: true,
  clientId: true,
  appId: true,
  sessionId: true,
  scopes: true,
  audience: true,
  authTime: true,
  amr: true,
  expiresAt: true,
  createdAt: true,
  usedAt: true,
  revokedAt: true,
} as const;

/** Everything a refresh_token grant reads, in one statement (see forGrant). */
export interface RefreshGrantRead {
  token: StoredRefreshToken | null;
  /** The token's user (of the instance), with its organization's state. */
  user: GrantUserRow | null;
  /** The session the token was issued from, while it exists. */
  session: LinkSessionRow | null;
  /** Whether an application has the client id of the grant. */
  appClientExists: boolean;
  /** The gates of the projects asked about (`projects` and the token's audience) for the token's user, by project id. */
  gates: Map<string, boolean>;
  asked: string[];
}

type Row = Record<string, unknown>;

const tokenOf = (r: Row): StoredRefreshToken => ({
  id: r.id as string,
  instanceId: r.instanceId as string,
  familyId: r.familyId as string,
  userId: r.userId as string,
  clientId: r.clientId as string,
  appId: r.appId as string,
  sessionId: r.sessionId as string | null,
  scopes: r.scopes as string[],
  audience: r.audience as string[],
  authTime: asDate(r.authTime as Date),
  amr: r.amr as string[],
  expiresAt: asDate(r.expiresAt as Date),
  createdAt: asDate(r.createdAt as Date),
  usedAt: r.usedAt === null ? null : asDate(r.usedAt as Date),
  revokedAt: r.revokedAt === null ? null : asDate(r.revokedAt as Date),
});

export class RefreshTokenRepo {
  constructor(readonly db: Db) {}

  findByHash(instanceId: string, tokenHash: Uint8Array<ArrayBuffer>): Promise<StoredRefreshToken | null> {
    return this.db.refreshToken.findFirst({ where: { tokenHash, instanceId }, select: SELECT });
  }

  /**
   * The refresh token with this hash and what its grant checks, in one prepared statement: its user and the user's
   * organization state, its session, whether an application has `clientId`, and the gates of `projects` and of the
   * token's audience for its user.
   */
  async forGrant(instanceId: string, tokenHash: Uint8Array<ArrayBuffer>, clientId: string, projects: string[]): Promise<RefreshGrantRead> {
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT r."id", r."instanceId", r."familyId", r."userId", r."clientId", r."appId", r."sessionId", r."scopes", r."audience",
          r."authTime", r."amr", r."expiresAt", r."createdAt", r."usedAt", r."revokedAt", ${GRANT_USER_COLUMNS}, ${LINK_SESSION_COLUMNS},
          EXISTS (SELECT 1 FROM "Application" a WHERE a."clientId" = ${clientId}) AS "appClientExists",
          ${gatesJson(Prisma.sql`(${projects}::text[] || r."audience")`, Prisma.sql`r."instanceId"`, Prisma.sql`u."id"`, Prisma.sql`u."orgId"`)} AS "gates"
        FROM "RefreshToken" r
        LEFT JOIN "User" u ON u."id" = r."userId" AND u."instanceId" = r."instanceId"
        LEFT JOIN "Organization" o ON o."id" = u."orgId"
        LEFT JOIN "Session" s ON s."id" = r."sessionId" AND s."instanceId" = r."instanceId"
        WHERE r."tokenHash" = ${tokenHash} AND r."instanceId" = ${instanceId}`,
        "refresh_grant_read",
      ),
    );
    if (!row) return { token: null, user: null, session: null, appClientExists: false, gates: new Map(), asked: projects };
    const token = tokenOf(row);
    return {
      token,
      user: grantUserOf(row),
      session: linkSessionOf(row),
      appClientExists: row.appClientExists as boolean,
      gates: gatesOf(row.gates),
      asked: [...projects, ...token.audience],
    };
  }

  /** The sealed answer of the rotation that exchanged the token (grants/refresh-reuse.ts). */
  async successorSealed(instanceId: string, id: string): Promise<Uint8Array | null> {
    const row = await this.db.refreshToken.findFirst({ where: { id, instanceId }, select: { successorSealed: true } });
    return row?.successorSealed ?? null;
  }

  /** Revokes a family: its refresh tokens and the access tokens issued under it; how many of each. */
  async revokeFamily(familyId: string, at: Date): Promise<{ refreshTokens: number; accessTokens: number }> {
    // One after the other: inside a transaction both run on its one connection anyway.
    const refresh = await this.db.refreshToken.updateMany({ where: { familyId, revokedAt: null }, data: { revokedAt: at } });
    const access = await this.db.oAuthToken.updateMany({ where: { grantId: familyId, revokedAt: null, expiresAt: { gt: at } }, data: { revokedAt: at } });
    return { refreshTokens: refresh.count, accessTokens: access.count };
  }

  /** Revokes every live refresh token of a user (deactivated, locked); how many. */
  async revokeOfUser(userId: string, at: Date, clientId?: string): Promise<number> {
    const { count } = await this.db.refreshToken.updateMany({
      where: { userId, revokedAt: null, expiresAt: { gt: at }, ...(clientId ? { clientId } : {}) },
      data: { revokedAt: at },
    });
    return count;
  }

  /**
   * Revokes every live refresh token of an application (its client secret was replaced: every one was issued under
   * the old secret) and the access tokens of their families; how many refresh tokens.
   */
  async revokeOfApp(appId: string, at: Date): Promise<number> {
    const live = await this.db.refreshToken.findMany({
      where: { appId, revokedAt: null, expiresAt: { gt: at } },
      select: { familyId: true },
      distinct: ["familyId"],
    });
    const { count } = await this.db.refreshToken.updateMany({ where: { appId, revokedAt: null, expiresAt: { gt: at } }, data: { revokedAt: at } });
    const families = live.map((r) => r.familyId);
    if (families.length)
      await this.db.oAuthToken.updateMany({ where: { grantId: { in: families }, revokedAt: null, expiresAt: { gt: at } }, data: { revokedAt: at } });
    return count;
  }

  /**
   * Deletes tokens whose family ended before `before`, and drops the sealed rotation answers of tokens exchanged
   * before it (long past any reuse interval).
   */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.refreshToken.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
    await this.db.refreshToken.updateMany({ where: { instanceId, usedAt: { lt: before }, successorSealed: { not: null } }, data: { successorSealed: null } });
  }
}
