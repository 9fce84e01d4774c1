// Authorization requests of the code flow (/oauth/v2/authorize): stored until a login UI finishes them, then holding
// the SHA-256 of their authorization code until it is redeemed. Finishing and redeeming are single conditional
// UPDATEs, so of two concurrent calls exactly one wins, on any replica.
import type { Db } from "./index.js";

/** What /oauth/v2/authorize stores. */
export interface NewAuthRequest {
  id: string;
  instanceId: string;
  appId: string;
  clientId: string;
  redirectUri: string;
  scopes: string[];
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  prompt: string[];
  maxAge: number | null;
  loginHint: string | null;
  uiLocales: string[];
  hintUserId: string | null;
  expiresAt: Date;
  createdAt: Date;
}

export interface AuthRequestRow extends NewAuthRequest {
  /** The project of the request's application (its login gates). */
  app: { projectId: string; orgId: string };
  finishedAt: Date | null;
  sessionId: string | null;
  userId: string | null;
  authTime: Date | null;
  amr: string[];
  codeExpiresAt: Date | null;
  codeUsedAt: Date | null;
}

/** How a request is finished: with a session's sign-in and a code, or with an error (no session, no code). */
export type Finish =
  | { sessionId: string; userId: string; authTime: Date; amr: string[]; codeHash: Uint8Array<ArrayBuffer>; codeExpiresAt: Date }
  | { error: true };

const SELECT = {
  id: true,
  instanceId: true,
  appId: true,
  clientId: true,
  redirectUri: true,
  scopes: true,
  state: true,
  nonce: true,
  codeChallenge: true,
  codeChallengeMethod: true,
  prompt: true,
  maxAge: true,
  loginHint: true,
  uiLocales: true,
  hintUserId: true,
  expiresAt: true,
  createdAt: true,
  finishedAt: true,
  sessionId: true,
  userId: true,
  authTime: true,
  amr: true,
  codeExpiresAt: true,
  codeUsedAt: true,
  app: { select: { projectId: true, orgId: true } },
} as const;

export class AuthRequestRepo {
  constructor(readonly db: Db) {}

  async create(r: NewAuthRequest): Promise<void> {
    await this.db.authRequest.create({ data: r });
  }

  find(instanceId: string, id: string): Promise<AuthRequestRow | null> {
    return this.db.authRequest.findFirst({ where: { id, instanceId }, select: SELECT });
  }

  /** The request whose authorization code has this SHA-256. */
  findByCode(instanceId: string, codeHash: Uint8Array<ArrayBuffer>): Promise<AuthRequestRow | null> {
    return this.db.authRequest.findFirst({ where: { codeHash, instanceId }, select: SELECT });
  }

  /** Finishes a request that is neither finished nor expired at `now`; false when it was (someone else won). */
  async finish(instanceId: string, id: string, now: Date, how: Finish): Promise<boolean> {
    const data = "error" in how ? { finishedAt: now } : { finishedAt: now, ...how };
    const { count } = await this.db.authRequest.updateMany({ where: { id, instanceId, finishedAt: null, expiresAt: { gt: now } }, data });
    return count === 1;
  }

  /** Marks the code redeemed unless it already was; false when it was (a replay, or a concurrent redemption that won). */
  async redeem(id: string, now: Date): Promise<boolean> {
    const { count } = await this.db.authRequest.updateMany({ where: { id, codeUsedAt: null }, data: { codeUsedAt: now } });
    return count === 1;
  }

  /** Deletes requests that expired before `before` (their codes are long dead by then). */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.authRequest.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }
}
