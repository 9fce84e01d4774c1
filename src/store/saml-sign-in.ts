// SAML's sign-in hot path (CreateResponse with a session), as the OIDC callback does it (auth-requests.ts): one
// prepared statement on the driver reads the request with its application, the session named with its token's hash,
// the session's user with what finishing a sign-in checks (sign-in-sql.ts) and as the assertion shows it, and whether
// that user passes the gates of the application's project; one more finishes the request with its audit event.
// Through Prisma's runtime these were six statements and a transaction (the request and its app, the session, the
// sign-in facts, the gates, the user; BEGIN, the finish, the event, COMMIT): the runtime and the round trips cost
// more CPU than the database's work.
import { Prisma } from "../../gen/prisma/client.js";
import { parseAppConfig } from "../domain/access/app-settings.js";
import type { UserView } from "../domain/identity/users.js";
import { type EventRow, insertEventFrom, outboxCte } from "./events.js";
import type { Db } from "./index.js";
import type { OutboxRouter } from "./outbox.js";
import type { SamlRequestRow } from "./saml.js";
import type { NewParticipant } from "./sessions.js";
import {
  asDate,
  bytesOf,
  gateAllowed,
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
import { USER_VIEW_COLUMNS, type UserViewRow, viewFromRow } from "./users.js";

/** Everything CreateResponse reads before it builds the assertion, in one statement (see SamlSignInRepo.forResponse). */
export interface SamlResponseRead {
  /** The request (of the instance) with its application; null when there is none. */
  request: SamlRequestRow | null;
  /** The session named (of the instance), with its token's hash. */
  session: (LinkSessionRow & { tokenHash: Uint8Array }) | null;
  /** The session's user (of the instance) with what finishing a sign-in checks about it. */
  facts: SignInFacts | null;
  /** Whether the session's user passes the gates of the application's project; null without request or session. */
  gate: boolean | null;
  /** The session's user as the assertion shows it (UserRepo.view's answer), in the same statement; null without one. */
  user: UserView | null;
}

type Row = Record<string, unknown>;

function requestOf(r: Row): SamlRequestRow {
  return {
    id: r.id as string,
    instanceId: r.instanceId as string,
    appId: r.appId as string,
    requestId: r.requestId as string,
    issuer: r.issuer as string,
    acsUrl: r.acsUrl as string,
    binding: r.binding as string,
    relayState: r.relayState as string | null,
    forceAuthn: r.forceAuthn as boolean,
    isPassive: r.isPassive as boolean,
    nameIdFormat: (r.nameIdFormat as string | null) ?? null,
    createdAt: asDate(r.createdAt as string),
    expiresAt: asDate(r.expiresAt as string),
    finishedAt: r.finishedAt === null ? null : asDate(r.finishedAt as string),
    app: {
      id: r.appId as string,
      projectId: r.app_projectId as string,
      orgId: r.app_orgId as string,
      active: r.app_state === "ACTIVE",
      config: parseAppConfig(r.app_config),
    },
  };
}

export class SamlSignInRepo {
  /** `router`: where the answer's audit event goes besides the trail (the outbox's deliveries, see outbox.ts). */
  constructor(
    readonly db: Db,
    private readonly router?: OutboxRouter,
  ) {}

  /** The request, the session, its user's sign-in facts and the project's gate for that user: one prepared statement. */
  async forResponse(instanceId: string, id: string, sessionId: string): Promise<SamlResponseRead> {
    const gate = gateAllowed(Prisma.raw("p"), Prisma.sql`s."userId"`, Prisma.sql`s."orgId"`);
    const [row] = await queryJson<Row>(
      this.db,
      statement(
        Prisma.sql`SELECT sr."id", sr."instanceId", sr."appId", sr."requestId", sr."issuer", sr."acsUrl", sr."binding", sr."relayState",
          sr."forceAuthn", sr."isPassive", sr."nameIdFormat", sr."createdAt", sr."expiresAt", sr."finishedAt",
          app."projectId" AS "app_projectId", app."orgId" AS "app_orgId", app."state"::text AS "app_state", app."config" AS "app_config",
          ${LINK_SESSION_COLUMNS}, s."tokenHash" AS "s_tokenHash", ${SESSION_USER_COLUMNS},
          ${settingsJson(SIGN_IN_SETTING_KINDS, Prisma.sql`${instanceId}`)}, ${READY_FACTOR_COLUMNS},
          (SELECT ${gate} FROM "Project" p WHERE p."id" = app."projectId" AND p."instanceId" = sr."instanceId") AS "gate",
          (SELECT row_to_json(v) FROM (SELECT ${USER_VIEW_COLUMNS}) v WHERE u."id" IS NOT NULL) AS "userView"
        FROM (SELECT 1) one
        LEFT JOIN "SamlRequest" sr ON sr."id" = ${id} AND sr."instanceId" = ${instanceId}
        LEFT JOIN "Application" app ON app."id" = sr."appId"
        LEFT JOIN "Session" s ON s."id" = ${sessionId} AND s."instanceId" = ${instanceId}
        LEFT JOIN "User" u ON u."id" = s."userId" AND u."instanceId" = ${instanceId}
        LEFT JOIN "Organization" o ON o."id" = u."orgId"`,
        "saml_response_read",
      ),
    );
    const session = row ? linkSessionOf(row) : null;
    return {
      request: row?.id ? requestOf(row) : null,
      session: session && { ...session, tokenHash: bytesOf(row?.s_tokenHash as string) },
      facts: row ? signInFactsOf(row) : null,
      gate: (row?.gate as boolean | null | undefined) ?? null,
      user: row?.userView ? viewFromRow(row.userView as UserViewRow) : null,
    };
  }

  /**
   * Marks the request answered unless it was (or expired), with its audit event `event` (and the outbox's deliveries
   * of it) and the session's participant (the SP, the NameID it was given) upserted, in one prepared statement on the
   * driver; whether this call did (false: nothing written). Before, a transaction through Prisma's runtime: BEGIN,
   * this statement, the event's INSERT through Prisma's query engine, COMMIT (about a quarter of svc's CPU per SAML
   * login on a session). As the OIDC callback's finish does (auth-requests.ts).
   */
  async finish(instanceId: string, id: string, now: Date, event: EventRow, participant?: NewParticipant): Promise<boolean> {
    const upsert = participant
      ? Prisma.sql`, participant AS (
          INSERT INTO "SessionParticipant" ("sessionId", "appId", "instanceId", "protocol", "nameId", "nameIdFormat", "sessionIndex", "sid", "firstAt", "lastAt")
          SELECT ${participant.sessionId}::text, ${participant.appId}::text, ${participant.instanceId}::text, ${participant.protocol}::text,
            ${participant.nameId ?? null}::text, ${participant.nameIdFormat ?? null}::text, ${participant.sessionIndex ?? null}::text,
            ${participant.sid ?? null}::text, ${now}::timestamptz, ${now}::timestamptz FROM finished
          ON CONFLICT ("sessionId", "appId") DO UPDATE SET "protocol" = EXCLUDED."protocol", "nameId" = EXCLUDED."nameId",
            "nameIdFormat" = EXCLUDED."nameIdFormat", "sessionIndex" = EXCLUDED."sessionIndex", "sid" = EXCLUDED."sid", "lastAt" = EXCLUDED."lastAt")`
      : Prisma.empty;
    const outbox = await outboxCte(this.db, this.router, event, "finished");
    const [row] = await query<{ n: number }>(
      this.db,
      statement(
        Prisma.sql`WITH finished AS (
          UPDATE "SamlRequest" SET "finishedAt" = ${now}::timestamptz
          WHERE "id" = ${id} AND "instanceId" = ${instanceId} AND "finishedAt" IS NULL AND "expiresAt" > ${now}::timestamptz RETURNING 1
        ), event AS (${insertEventFrom(event, Prisma.raw("finished"))})${upsert}${outbox.sql}
        SELECT count(*)::int AS "n" FROM finished`,
        `${participant ? "saml_request_finish_participant" : "saml_request_finish"}${outbox.count ? `_outbox_${outbox.count}` : ""}`,
      ),
    );
    return row?.n === 1;
  }
}
