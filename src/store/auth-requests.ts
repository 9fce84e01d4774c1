// Authorization requests of the code flow (/oauth/v2/authorize): stored until a login UI finishes them, then holding
// the SHA-256 of their authorization code until it is redeemed. Finishing and redeeming are single conditional
// UPDATEs, so of two concurrent calls exactly one wins, on any replica.
import { Prisma } from "../../gen/prisma/client.js";
import { type EventRow, insertEventFrom, outboxCte } from "./events.js";
import type { Db } from "./index.js";
import type { OutboxRouter } from "./outbox.js";
import {
  asDate,
  bytesOf,
  GRANT_USER_COLUMNS,
  type GrantUserRow,
  gateAllowed,
  gatesJson,
  gatesOf,
  grantUserOf,
  LINK_SESSION_COLUMNS,
  type LinkSessionRow,
  linkSessionOf,
  READY_FACTOR_COLUMNS,
  SESSION_USER_COLUMNS,
  SIGN_IN_SETTING_KINDS,
  type SignInFacts,
  settingsJson,
  signInFactsOf,
} from "./sign-in-sql.js";
import { query, queryJson, statement } from "./sql.js";

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
  /** The project of the request's application (its login gates), and whether it asks its users' consent. */
  app: { projectId: string; orgId: string; consentRequired: boolean };
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

/** AuthRequestRow's columns of request `ar` and its application `app`, for reads on the driver. */
export const AUTH_REQUEST_COLUMNS = Prisma.sql`ar."id", ar."instanceId", ar."appId", ar."clientId", ar."redirectUri", ar."scopes", ar."state",
  ar."nonce", ar."codeChallenge", ar."codeChallengeMethod", ar."prompt", ar."maxAge", ar."loginHint", ar."uiLocales", ar."hintUserId",
  ar."expiresAt", ar."createdAt", ar."finishedAt", ar."sessionId", ar."userId", ar."authTime", ar."amr", ar."codeExpiresAt", ar."codeUsedAt",
  app."projectId" AS "app_projectId", app."orgId" AS "app_orgId", COALESCE((app."config"->>'consentRequired')::boolean, false) AS "app_consentRequired"`;

type Row = Record<string, unknown>;
const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : asDate(v as Date));

/** An AuthRequestRow from a row of AUTH_REQUEST_COLUMNS. */
export function authRequestOf(r: Row): AuthRequestRow {
  return {
    id: r.id as string,
    instanceId: r.instanceId as string,
    appId: r.appId as string,
    clientId: r.clientId as string,
    redirectUri: r.redirectUri as string,
    scopes: r.scopes as string[],
    state: r.state as string | null,
    nonce: r.nonce as string | null,
    codeChallenge: r.codeChallenge as string | null,
    codeChallengeMethod: r.codeChallengeMethod as string | null,
    prompt: r.prompt as string[],
    maxAge: r.maxAge as number | null,
    loginHint: r.loginHint as string | null,
    uiLocales: r.uiLocales as string[],
    hintUserId: r.hintUserId as string | null,
    expiresAt: asDate(r.expiresAt as Date),
    createdAt: asDate(r.createdAt as Date),
    app: { projectId: r.app_projectId as string, orgId: r.app_orgId as string, consentRequired: r.app_consentRequired === true },
    finishedAt: dateOrNull(r.finishedAt),
    sessionId: r.sessionId as string | null,
    userId: r.userId as string | null,
    authTime: dateOrNull(r.authTime),
    amr: r.amr as string[],
    codeExpiresAt: dateOrNull(r.codeExpiresAt),
    codeUsedAt: dateOrNull(r.codeUsedAt),
  };
}

/** Everything an authorization_code grant reads, in one statement (see forGrant). */
export interface CodeGrantRead {
  request: AuthRequestRow | null;
  /** The user the request was finished for (of the instance), with its organization's state. */
  user: GrantUserRow | null;
  /** The session it was finished with, while it exists. */
  session: LinkSessionRow | null;
  /** Whether an application has the client id of the grant. */
  appClientExists: boolean;
  /** The gates of `projects` for the request's user, by project id. */
  gates: Map<string, boolean>;
  asked: string[];
}

/** Everything CreateCallback reads, in one statement (see forCallback). */
export interface CallbackRead {
  request: AuthRequestRow | null;
  /** The session named, with its token's hash. */
  session: (LinkSessionRow & { tokenHash: Uint8Array }) | null;
  /** The session's user (of the instance) with what finishing a sign-in checks about it. */
  facts: SignInFacts | null;
  /** Whether the session's user passes the gates of the request's project; null when there is no such project. */
  gate: boolean | null;
  /** The scopes the session's user allowed the request's application (UserConsent); null: none recorded. */
  consentScopes: string[] | null;
}

export class AuthRequestRepo {
  /** `router`: where the finished request's event goes besides the trail (the outbox, see outbox.ts). */
  constructor(
    readonly db: Db,
    private readonly router?: OutboxRouter,
  ) {}

  /** One prepared INSERT (the authorization endpoint writes one per sign-in). */
  async create(r: NewAuthRequest): Promise<void> {
    await query(
      this.db,
      statement(
        Prisma.sql`INSERT INTO "AuthRequest" ("id", "instanceId", "appId", "clientId", "redirectUri", "scopes", "state", "nonce", "codeChallenge",
          "codeChallengeMethod", "prompt", "maxAge", "loginHint", "uiLocales", "hintUserId", "expiresAt", "createdAt")
        VALUES (${r.id}, ${r.instanceId}, ${r.appId}, ${r.clientId}, ${r.redirectUri}, ${r.scopes}::text[], ${r.state}, ${r.nonce}, ${r.codeChallenge},
          ${r.codeChallengeMethod}, ${r.prompt}::text[], ${r.maxAge}::int, ${r.loginHint}, ${r.uiLocales}::text[], ${r.hintUserId},
          ${r.expiresAt}::timestamptz, ${r.createdAt}::timestamptz)`,
        "auth_request_insert",
      ),
    );
  }

  /**
   * What CreateCallback checks, in one prepared statement: the request (of the instance) with its application's
   * project, the session named (of the instance) with its user, the user's organization, login and password expiry
   * settings and ready second factors, and whether the user passes the gates of the request's project.
   */
  async forCallback(instanceId: string, id: string, sessionId: string): Promise<CallbackRead> {
    const gate = gateAllowed(Prisma.raw("p"), Prisma.sql`s."userId"`, Prisma.sql`s."orgId"`);
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT ${AUTH_REQUEST_COLUMNS}, ${LINK_SESSION_COLUMNS}, s."tokenHash" AS "s_tokenHash", ${SESSION_USER_COLUMNS},
          ${settingsJson(SIGN_IN_SETTING_KINDS, Prisma.sql`${instanceId}`)}, ${READY_FACTOR_COLUMNS},
          (SELECT ${gate} FROM "Project" p WHERE p."id" = app."projectId" AND p."instanceId" = ar."instanceId") AS "gate",
          (SELECT c."scopes" FROM "UserConsent" c WHERE c."userId" = s."userId" AND c."appId" = ar."appId") AS "consentScopes"
        FROM (SELECT 1) one
        LEFT JOIN "AuthRequest" ar ON ar."id" = ${id} AND ar."instanceId" = ${instanceId}
        LEFT JOIN "Application" app ON app."id" = ar."appId"
        LEFT JOIN "Session" s ON s."id" = ${sessionId} AND s."instanceId" = ${instanceId}
        LEFT JOIN "User" u ON u."id" = s."userId" AND u."instanceId" = ${instanceId}
        LEFT JOIN "Organization" o ON o."id" = u."orgId"`,
        "callback_read",
      ),
    );
    const session = row ? linkSessionOf(row) : null;
    return {
      request: row?.id ? authRequestOf(row) : null,
      session: session && { ...session, tokenHash: bytesOf(row?.s_tokenHash as string) },
      facts: row ? signInFactsOf(row) : null,
      gate: (row?.gate as boolean | null | undefined) ?? null,
      consentScopes: (row?.consentScopes as string[] | null | undefined) ?? null,
    };
  }

  /** One prepared statement: the login UI reads the request on every page it shows for it. */
  async find(instanceId: string, id: string): Promise<AuthRequestRow | null> {
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT ${AUTH_REQUEST_COLUMNS} FROM "AuthRequest" ar JOIN "Application" app ON app."id" = ar."appId"
          WHERE ar."id" = ${id} AND ar."instanceId" = ${instanceId}`,
        "auth_request_find",
      ),
    );
    return row ? authRequestOf(row) : null;
  }

  /**
   * The request whose authorization code has this SHA-256 and what its grant checks, in one prepared statement: the
   * user it was finished for with the user's organization state, its session, whether an application has `clientId`,
   * and the gates of `projects` for its user.
   */
  async forGrant(instanceId: string, codeHash: Uint8Array<ArrayBuffer>, clientId: string, projects: string[]): Promise<CodeGrantRead> {
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT ${AUTH_REQUEST_COLUMNS}, ${GRANT_USER_COLUMNS}, ${LINK_SESSION_COLUMNS},
          EXISTS (SELECT 1 FROM "Application" a WHERE a."clientId" = ${clientId}) AS "appClientExists",
          ${gatesJson(Prisma.sql`${projects}::text[]`, Prisma.sql`ar."instanceId"`, Prisma.sql`u."id"`, Prisma.sql`u."orgId"`)} AS "gates"
        FROM "AuthRequest" ar JOIN "Application" app ON app."id" = ar."appId"
        LEFT JOIN "User" u ON u."id" = ar."userId" AND u."instanceId" = ar."instanceId"
        LEFT JOIN "Organization" o ON o."id" = u."orgId"
        LEFT JOIN "Session" s ON s."id" = ar."sessionId" AND s."instanceId" = ar."instanceId"
        WHERE ar."codeHash" = ${codeHash} AND ar."instanceId" = ${instanceId}`,
        "code_grant_read",
      ),
    );
    if (!row) return { request: null, user: null, session: null, appClientExists: false, gates: new Map(), asked: projects };
    return {
      request: authRequestOf(row),
      user: grantUserOf(row),
      session: linkSessionOf(row),
      appClientExists: row.appClientExists as boolean,
      gates: gatesOf(row.gates),
      asked: projects,
    };
  }

  /**
   * Finishes a request that is neither finished nor expired at `now`, with its audit event `event`, in one statement;
   * false when it was (someone else won): nothing written.
   */
  async finish(instanceId: string, id: string, now: Date, how: Finish, event: EventRow): Promise<boolean> {
    const set =
      "error" in how
        ? Prisma.sql`"finishedAt" = ${now}::timestamptz`
        : Prisma.sql`"finishedAt" = ${now}::timestamptz, "sessionId" = ${how.sessionId}, "userId" = ${how.userId}, "authTime" = ${how.authTime}::timestamptz,
            "amr" = ${how.amr}::text[], "codeHash" = ${how.codeHash}::bytea, "codeExpiresAt" = ${how.codeExpiresAt}::timestamptz`;
    // With a sign-in, the session's participant (the client, its sid) in the same statement: one upsert.
    const participant =
      "error" in how
        ? Prisma.empty
        : Prisma.sql`, participant AS (
          INSERT INTO "SessionParticipant" ("sessionId", "appId", "instanceId", "protocol", "sid", "firstAt", "lastAt")
          SELECT ${how.sessionId}::text, f."appId", ${instanceId}::text, 'oidc', ${how.sessionId}::text, ${now}::timestamptz, ${now}::timestamptz FROM finished f
          ON CONFLICT ("sessionId", "appId") DO UPDATE SET "lastAt" = EXCLUDED."lastAt")`;
    const outbox = await outboxCte(this.db, this.router, event, "finished");
    const [row] = await query<{ n: number }>(
      this.db,
      statement(
        Prisma.sql`WITH finished AS (
          UPDATE "AuthRequest" SET ${set}
          WHERE "id" = ${id} AND "instanceId" = ${instanceId} AND "finishedAt" IS NULL AND "expiresAt" > ${now}::timestamptz RETURNING "appId"
        ), event AS (${insertEventFrom(event, Prisma.raw("finished"))})${participant}${outbox.sql}
        SELECT count(*)::int AS "n" FROM finished`,
        `${"error" in how ? "auth_request_finish_error" : "auth_request_finish"}${outbox.count ? `_outbox_${outbox.count}` : ""}`,
      ),
    );
    return row?.n === 1;
  }

  /** Deletes requests that expired before `before` (their codes are long dead by then). */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.authRequest.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }

  /** Deletes pushed requests past their expiry (nothing refers to them: they are gone as soon as they expire). */
  async purgeExpiredPushes(instanceId: string, now: Date): Promise<void> {
    await this.db.pushedAuthRequest.deleteMany({ where: { instanceId, expiresAt: { lt: now } } });
  }

  /** How many pushed requests of `clientId` are still usable at `now`. */
  livePushes(instanceId: string, clientId: string, now: Date): Promise<number> {
    return this.db.pushedAuthRequest.count({ where: { instanceId, clientId, expiresAt: { gt: now } } });
  }

  /** Stores a pushed authorization request (RFC 9126) under the SHA-256 of its request_uri. */
  async push(r: {
    id: string;
    instanceId: string;
    clientId: string;
    refHash: Uint8Array<ArrayBuffer>;
    params: Record<string, string>;
    expiresAt: Date;
    createdAt: Date;
  }) {
    await this.db.pushedAuthRequest.create({ data: r });
  }

  /**
   * Takes a pushed request of `clientId` out (one DELETE, so of two concurrent uses exactly one gets it, on any
   * replica): its parameters, or null when there is none of that client or it expired before `now`.
   */
  async takePushed(instanceId: string, refHash: Uint8Array<ArrayBuffer>, clientId: string, now: Date): Promise<Record<string, string> | null> {
    const rows = await this.db.$queryRaw<{ params: Record<string, string> | string; expiresAt: Date | string }[]>`
      DELETE FROM "PushedAuthRequest" WHERE "refHash" = ${refHash} AND "instanceId" = ${instanceId} AND "clientId" = ${clientId}
      RETURNING "params", "expiresAt"`;
    const row = rows[0];
    if (!row || asDate(row.expiresAt).getTime() <= now.getTime()) return null;
    return typeof row.params === "string" ? (JSON.parse(row.params) as Record<string, string>) : row.params;
  }
}
