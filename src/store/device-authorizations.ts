// Device authorizations (RFC 8628): written by /oauth/v2/device_authorization, found by the user code's hash when the
// user types it at /ui/login/device (which links the auth request the hosted login signs the user in with), and by
// the device code's hash when the device polls. Each poll is one conditional UPDATE that also says whether it came
// before the interval was over (and then raises the interval), so replicas agree on slow_down.
import { Prisma } from "../../gen/prisma/client.js";
import { AUTH_REQUEST_COLUMNS, type AuthRequestRow, authRequestOf } from "./auth-requests.js";
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
import { query, queryJson, statement } from "./sql.js";

export interface NewDeviceAuthorization {
  id: string;
  instanceId: string;
  appId: string;
  clientId: string;
  deviceCodeHash: Uint8Array<ArrayBuffer>;
  userCodeHash: Uint8Array<ArrayBuffer>;
  scopes: string[];
  /** Seconds between polls. */
  interval: number;
  expiresAt: Date;
  createdAt: Date;
}

/** A device authorization found by its user code, with what the hosted login needs to start the sign-in. */
export interface DeviceAuthorizationRow {
  id: string;
  appId: string;
  clientId: string;
  scopes: string[];
  expiresAt: Date;
  authRequestId: string | null;
}

/** What a poll read: the authorization (after this poll), whether it came too early, and its auth request's grant. */
export interface DevicePoll {
  id: string;
  expiresAt: Date;
  interval: number;
  tooFast: boolean;
  request: AuthRequestRow | null;
  user: GrantUserRow | null;
  session: LinkSessionRow | null;
  appClientExists: boolean;
  gates: Map<string, boolean>;
  asked: string[];
}

type Row = Record<string, unknown>;

export class DeviceAuthorizationRepo {
  constructor(readonly db: Db) {}

  /** Writes a new authorization; false when its user code's hash is taken (the caller draws another code). */
  async create(d: NewDeviceAuthorization): Promise<boolean> {
    const rows = await query<{ id: string }>(
      this.db,
      statement(
        Prisma.sql`INSERT INTO "DeviceAuthorization" ("id", "instanceId", "appId", "clientId", "deviceCodeHash", "userCodeHash", "scopes", "pollInterval",
          "expiresAt", "createdAt")
        VALUES (${d.id}, ${d.instanceId}, ${d.appId}, ${d.clientId}, ${d.deviceCodeHash}::bytea, ${d.userCodeHash}::bytea, ${d.scopes}::text[],
          ${d.interval}::int, ${d.expiresAt}::timestamptz, ${d.createdAt}::timestamptz)
        ON CONFLICT ("userCodeHash") DO NOTHING RETURNING "id"`,
        "device_authorization_insert",
      ),
    );
    return rows.length === 1;
  }

  /** How many of the client's authorizations are unexpired, counted up to `cap` (bounded work: a read of the instance's live rows). */
  async liveCount(instanceId: string, clientId: string, now: Date, cap: number): Promise<number> {
    const [row] = await query<{ n: number }>(
      this.db,
      statement(
        Prisma.sql`SELECT count(*)::int AS "n" FROM (SELECT 1 FROM "DeviceAuthorization"
          WHERE "instanceId" = ${instanceId} AND "expiresAt" > ${now}::timestamptz AND "clientId" = ${clientId} LIMIT ${cap}::int) AS live`,
        "device_authorization_live_count",
      ),
    );
    return Number(row?.n ?? 0);
  }

  /** The unexpired authorization whose user code has this hash. */
  async byUserCode(instanceId: string, userCodeHash: Uint8Array<ArrayBuffer>, now: Date): Promise<DeviceAuthorizationRow | null> {
    const [row] = await query<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT "id", "appId", "clientId", "scopes", "expiresAt", "authRequestId" FROM "DeviceAuthorization"
          WHERE "userCodeHash" = ${userCodeHash}::bytea AND "instanceId" = ${instanceId} AND "expiresAt" > ${now}::timestamptz`,
        "device_authorization_by_user_code",
      ),
    );
    if (!row) return null;
    return {
      id: row.id as string,
      appId: row.appId as string,
      clientId: row.clientId as string,
      scopes: row.scopes as string[],
      expiresAt: asDate(row.expiresAt as Date),
      authRequestId: row.authRequestId as string | null,
    };
  }

  /** Links the auth request of the user's sign-in, once: false when another one was linked first (or it expired). */
  async link(instanceId: string, id: string, authRequestId: string, now: Date): Promise<boolean> {
    const rows = await query<{ id: string }>(
      this.db,
      statement(
        Prisma.sql`UPDATE "DeviceAuthorization" SET "authRequestId" = ${authRequestId}
          WHERE "id" = ${id} AND "instanceId" = ${instanceId} AND "authRequestId" IS NULL AND "expiresAt" > ${now}::timestamptz RETURNING "id"`,
        "device_authorization_link",
      ),
    );
    return rows.length === 1;
  }

  /**
   * A poll of `appId`'s authorization with this device code hash: records it and, when it came less than the interval
   * (less `slackMs`) after the previous one, raises the interval by `raiseBy` seconds (RFC 8628 §3.5 slow_down). Then
   * what the grant reads: the linked auth request, its user and session, and the gates of `projects` for that user.
   */
  async poll(
    instanceId: string,
    appId: string,
    deviceCodeHash: Uint8Array<ArrayBuffer>,
    now: Date,
    o: { raiseBy: number; slackMs: number; projects: string[]; clientId: string },
  ): Promise<DevicePoll | null> {
    const early = Prisma.sql`prev."lastPolledAt" IS NOT NULL
      AND prev."lastPolledAt" > ${now}::timestamptz - make_interval(secs => prev."pollInterval") + make_interval(secs => ${o.slackMs / 1000}::float8)`;
    const [polled] = await query<{ id: string; expiresAt: Date; interval: number; tooFast: boolean; authRequestId: string | null }>(
      this.db,
      statement(
        Prisma.sql`UPDATE "DeviceAuthorization" d SET "lastPolledAt" = ${now}::timestamptz,
            "pollInterval" = CASE WHEN ${early} THEN prev."pollInterval" + ${o.raiseBy}::int ELSE prev."pollInterval" END
          FROM (SELECT "id", "lastPolledAt", "pollInterval" FROM "DeviceAuthorization"
                WHERE "deviceCodeHash" = ${deviceCodeHash}::bytea AND "instanceId" = ${instanceId} AND "appId" = ${appId} FOR UPDATE) prev
          WHERE d."id" = prev."id"
          RETURNING d."id", d."expiresAt", d."pollInterval" AS "interval", d."authRequestId", (${early}) AS "tooFast"`,
        "device_authorization_poll",
      ),
    );
    if (!polled) return null;
    const base = { id: polled.id, expiresAt: asDate(polled.expiresAt), interval: polled.interval, tooFast: polled.tooFast };
    const none = { request: null, user: null, session: null, appClientExists: false, gates: new Map<string, boolean>(), asked: o.projects };
    if (!polled.authRequestId) return { ...base, ...none };
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT ${AUTH_REQUEST_COLUMNS}, ${GRANT_USER_COLUMNS}, ${LINK_SESSION_COLUMNS},
          EXISTS (SELECT 1 FROM "Application" a WHERE a."clientId" = ${o.clientId}) AS "appClientExists",
          ${gatesJson(Prisma.sql`${o.projects}::text[]`, Prisma.sql`ar."instanceId"`, Prisma.sql`u."id"`, Prisma.sql`u."orgId"`)} AS "gates"
        FROM "AuthRequest" ar JOIN "Application" app ON app."id" = ar."appId"
        LEFT JOIN "User" u ON u."id" = ar."userId" AND u."instanceId" = ar."instanceId"
        LEFT JOIN "Organization" o ON o."id" = u."orgId"
        LEFT JOIN "Session" s ON s."id" = ar."sessionId" AND s."instanceId" = ar."instanceId"
        WHERE ar."id" = ${polled.authRequestId} AND ar."instanceId" = ${instanceId}`,
        "device_grant_read",
      ),
    );
    if (!row) return { ...base, ...none };
    return {
      ...base,
      request: authRequestOf(row),
      user: grantUserOf(row),
      session: linkSessionOf(row),
      appClientExists: row.appClientExists as boolean,
      gates: gatesOf(row.gates),
      asked: o.projects,
    };
  }

  /** Deletes authorizations that expired before `before`. */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await query(this.db, statement(Prisma.sql`DELETE FROM "DeviceAuthorization" WHERE "instanceId" = ${instanceId} AND "expiresAt" < ${before}::timestamptz`));
  }
}
