// Refresh tokens (only their SHA-256). A family is everything issued under one authorization code: its id is the
// auth request's, and the access tokens of the family carry it as OAuthToken.grantId, so revoking a family (a replayed
// code or refresh token, a revocation request) ends its refresh tokens and its access tokens in one go.
import type { Db } from "./index.js";

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

export class RefreshTokenRepo {
  constructor(readonly db: Db) {}

  async insert(row: RefreshTokenRow): Promise<void> {
    await this.db.refreshToken.create({ data: row });
  }

  findByHash(instanceId: string, tokenHash: Uint8Array<ArrayBuffer>): Promise<StoredRefreshToken | null> {
    return this.db.refreshToken.findFirst({ where: { tokenHash, instanceId }, select: SELECT });
  }

  /** Marks the token exchanged unless it already was or was revoked; false then (a replay, or a concurrent use that won). */
  async markUsed(id: string, now: Date): Promise<boolean> {
    const { count } = await this.db.refreshToken.updateMany({ where: { id, usedAt: null, revokedAt: null }, data: { usedAt: now } });
    return count === 1;
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

  /** Deletes tokens whose family ended before `before`. */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.refreshToken.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }
}
