// OIDC Back-Channel Logout 1.0 through the outbox (outbox.ts): when sessions end, one delivery per OIDC application
// the session signed into (its SessionParticipant row) that registered a backchannel_logout_uri, written by one
// INSERT ... SELECT in the transaction that ends the sessions (before they are deleted: the participants go with them).
// The logout token itself is made and signed when the delivery is attempted (src/actions/logout-tokens.ts), so each
// attempt carries a fresh iat/exp and the key that signs at that moment.
import { Prisma } from "../../gen/prisma/client.js";
import type { Db } from "./index.js";

/** The outbox kind of a logout token delivery; its targetId is the application's id. */
export const BACKCHANNEL_LOGOUT_KIND = "oidc.backchannel_logout";
/** Its eventType (what ListDeliveries shows). */
export const BACKCHANNEL_LOGOUT_EVENT = "oidc.backchannel_logout";

/** What a logout token delivery holds: where to POST, and the claims that name the ended sign-in. */
export interface LogoutTokenPayload {
  uri: string;
  clientId: string;
  /** The ID tokens' algorithm of the application (RS256 when it set none). */
  alg: string;
  sub: string | null;
  sid: string;
}

/** Which sessions end: these ids, or every session of a user but `keep`. */
export type EndingSessions = { ids: readonly string[] } | { userId: string; keep?: string };

/** An OIDC application a session signed into that registered a front-channel logout URI. */
export interface FrontchannelTarget {
  uri: string;
  sessionRequired: boolean;
  sid: string;
}

export class LogoutDeliveryRepo {
  constructor(private readonly db: Db) {}

  /** The front-channel logout URIs of the OIDC participants (active applications) of these sessions. */
  async frontchannelTargets(instanceId: string, sessionIds: readonly string[]): Promise<FrontchannelTarget[]> {
    if (sessionIds.length === 0) return [];
    const rows = await this.db.$queryRaw<{ uri: string; required: string | null; sid: string }[]>`
      SELECT a."config"->>'frontchannelLogoutUri' AS "uri", a."config"->>'frontchannelLogoutSessionRequired' AS "required",
        COALESCE(p."sid", p."sessionId") AS "sid"
      FROM "SessionParticipant" p
      JOIN "Application" a ON a."id" = p."appId" AND a."state" = 'ACTIVE'
      WHERE p."instanceId" = ${instanceId} AND p."sessionId" = ANY(${sessionIds as string[]}::text[]) AND p."protocol" = 'oidc'
        AND COALESCE(a."config"->>'frontchannelLogoutUri', '') <> ''
      ORDER BY p."firstAt"`;
    return rows.map((r) => ({ uri: r.uri, sessionRequired: r.required === "true", sid: r.sid }));
  }

  /**
   * Queues a logout token for each OIDC participant (with a back-channel logout URI) of the sessions about to end;
   * how many. Active applications only: a deactivated one gets no tokens and no logout tokens either.
   */
  async queueBackchannel(instanceId: string, ending: EndingSessions, maxAttempts: number, at: Date): Promise<number> {
    const which =
      "ids" in ending
        ? Prisma.sql`s."id" = ANY(${ending.ids as string[]}::text[])`
        : Prisma.sql`s."userId" = ${ending.userId} ${ending.keep ? Prisma.sql`AND s."id" <> ${ending.keep}` : Prisma.empty}`;
    if ("ids" in ending && ending.ids.length === 0) return 0;
    return this.db.$executeRaw`
      INSERT INTO "Delivery" ("id", "instanceId", "kind", "targetId", "orgId", "eventType", "orderKey", "payload", "state", "attempts",
        "maxAttempts", "nextAttemptAt", "createdAt", "updatedAt")
      SELECT gen_random_uuid()::text, s."instanceId", ${BACKCHANNEL_LOGOUT_KIND},
        a."id", a."orgId", ${BACKCHANNEL_LOGOUT_EVENT}, 'session:' || s."id",
        jsonb_build_object('uri', a."config"->>'backchannelLogoutUri', 'clientId', a."clientId",
          'alg', COALESCE(a."config"->>'idTokenSignedResponseAlg', 'RS256'), 'sub', s."userId", 'sid', COALESCE(p."sid", s."id")),
        'pending', 0, ${maxAttempts}::int, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
      FROM "Session" s
      JOIN "SessionParticipant" p ON p."sessionId" = s."id" AND p."protocol" = 'oidc'
      JOIN "Application" a ON a."id" = p."appId" AND a."state" = 'ACTIVE'
      WHERE s."instanceId" = ${instanceId} AND ${which} AND COALESCE(a."config"->>'backchannelLogoutUri', '') <> ''`;
  }
}
