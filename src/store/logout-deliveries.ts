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

/**
 * The outbox kind of a SAML LogoutRequest over the SOAP binding (src/actions/saml-logout-delivery.ts); its targetId is
 * the application's id. For the SAML participants of an ending session whose SP registered a SOAP SingleLogoutService.
 */
export const SAML_SOAP_LOGOUT_KIND = "saml.soap_logout";
export const SAML_SOAP_LOGOUT_EVENT = "saml.soap_logout";
const SOAP_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:SOAP";

/** What a SOAP logout delivery holds: the SP's SOAP endpoint and the subject as that SP was given it. */
export interface SamlSoapLogoutPayload {
  uri: string;
  appId: string;
  entityId: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
}

/** Which sessions end: these ids, every session of a user but `keep`, or every session of an organization's users. */
export type EndingSessions = { ids: readonly string[] } | { userId: string; keep?: string } | { orgId: string };

function whichSessions(ending: EndingSessions): Prisma.Sql {
  if ("ids" in ending) return Prisma.sql`s."id" = ANY(${ending.ids as string[]}::text[])`;
  if ("orgId" in ending) return Prisma.sql`s."orgId" = ${ending.orgId}`;
  return Prisma.sql`s."userId" = ${ending.userId} ${ending.keep ? Prisma.sql`AND s."id" <> ${ending.keep}` : Prisma.empty}`;
}

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
    const which = whichSessions(ending);
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

  /**
   * Queues a SAML LogoutRequest over SOAP for each SAML participant of the sessions about to end whose SP (an active
   * application) registered a SOAP SingleLogoutService, naming the subject as that SP was given it (its NameID, Format
   * and SessionIndex); how many. `except`: the SP that asked for the logout itself (it is answered, not told).
   */
  async queueSamlSoap(instanceId: string, ending: EndingSessions, maxAttempts: number, at: Date, except?: string): Promise<number> {
    if ("ids" in ending && ending.ids.length === 0) return 0;
    return this.db.$executeRaw`
      INSERT INTO "Delivery" ("id", "instanceId", "kind", "targetId", "orgId", "eventType", "orderKey", "payload", "state", "attempts",
        "maxAttempts", "nextAttemptAt", "createdAt", "updatedAt")
      SELECT gen_random_uuid()::text, s."instanceId", ${SAML_SOAP_LOGOUT_KIND},
        a."id", a."orgId", ${SAML_SOAP_LOGOUT_EVENT}, 'session:' || s."id",
        jsonb_build_object('uri', slo."url", 'appId', a."id", 'entityId', a."config"->>'entityId', 'nameId', p."nameId",
          'nameIdFormat', p."nameIdFormat", 'sessionIndex', p."sessionIndex"),
        'pending', 0, ${maxAttempts}::int, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
      FROM "Session" s
      JOIN "SessionParticipant" p ON p."sessionId" = s."id" AND p."protocol" = 'saml' AND p."nameId" IS NOT NULL
      JOIN "Application" a ON a."id" = p."appId" AND a."state" = 'ACTIVE'
      CROSS JOIN LATERAL (
        SELECT e->>'url' AS "url" FROM jsonb_array_elements(
          CASE WHEN jsonb_typeof(a."config"->'slo') = 'array' THEN a."config"->'slo' ELSE '[]'::jsonb END) e
        WHERE e->>'binding' = ${SOAP_BINDING} LIMIT 1) slo
      WHERE s."instanceId" = ${instanceId} AND ${whichSessions(ending)} ${except ? Prisma.sql`AND a."id" <> ${except}` : Prisma.empty}`;
  }
}
