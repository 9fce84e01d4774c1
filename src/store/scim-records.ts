// The SCIM resource of users (profile, multi-valued rows and the provisioner's externalId) read in one prepared
// statement, for a GET, a list page and the read-back of a write.
import { Prisma } from "../../gen/prisma/client.js";
import type { ScimUserRecord } from "../domain/identity/scim-read.js";
import type { Db } from "./index.js";
import { query, statement } from "./sql.js";

interface RecordRow {
  id: string;
  orgId: string;
  state: string;
  username: string;
  givenName: string | null;
  familyName: string | null;
  middleName: string | null;
  honorificPrefix: string | null;
  honorificSuffix: string | null;
  nameFormatted: string | null;
  displayName: string | null;
  nickName: string | null;
  profileUrl: string | null;
  userType: string | null;
  title: string | null;
  preferredLanguage: string | null;
  locale: string | null;
  timezone: string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
  emails: ScimUserRecord["emails"] | string;
  phoneNumbers: ScimUserRecord["phoneNumbers"] | string;
  addresses: ScimUserRecord["addresses"] | string;
  externalId: string | null;
}

const json = <T>(v: T | string): T => (typeof v === "string" ? (JSON.parse(v) as T) : v);

/** Field by field: an object rest over a driver row takes V8's slow path, and a list page converts 100 of them. */
function toRecord(row: RecordRow): ScimUserRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    username: row.username,
    externalId: row.externalId,
    givenName: row.givenName,
    familyName: row.familyName,
    middleName: row.middleName,
    honorificPrefix: row.honorificPrefix,
    honorificSuffix: row.honorificSuffix,
    nameFormatted: row.nameFormatted,
    displayName: row.displayName,
    nickName: row.nickName,
    profileUrl: row.profileUrl,
    userType: row.userType,
    title: row.title,
    preferredLanguage: row.preferredLanguage,
    locale: row.locale,
    timezone: row.timezone,
    active: row.state !== "INACTIVE",
    createdAt: row.createdAt instanceof Date ? row.createdAt : new Date(row.createdAt),
    updatedAt: row.updatedAt instanceof Date ? row.updatedAt : new Date(row.updatedAt),
    emails: json(row.emails),
    phoneNumbers: json(row.phoneNumbers),
    addresses: json(row.addresses),
  };
}

/**
 * Prepared statements: one for a single user (`id = $1`, whose plan is the primary key's whatever the statistics
 * say: a generic plan of `= ANY($1)` made from the statistics of before a provisioning burst went bad after it) and
 * one for a page of ids travelling as one array parameter.
 */
const RECORDS = (which: Prisma.Sql, provisionerId: string, instanceId: string, orgId: string) => Prisma.sql`
    SELECT u."id", u."orgId", u."state"::text AS "state", u."username", u."givenName", u."familyName", u."middleName",
      u."honorificPrefix", u."honorificSuffix", u."nameFormatted", u."displayName", u."nickName", u."profileUrl",
      u."userType", u."title", u."preferredLanguage", u."locale", u."timezone", u."createdAt", u."updatedAt",
      COALESCE((SELECT json_agg(json_build_object('value', e."value", 'type', e."type", 'display', e."display", 'primary', e."primary") ORDER BY e."position")
        FROM "UserEmail" e WHERE e."userId" = u."id"), '[]'::json) AS "emails",
      COALESCE((SELECT json_agg(json_build_object('value', p."value", 'type', p."type", 'display', p."display", 'primary', p."primary") ORDER BY p."position")
        FROM "UserPhone" p WHERE p."userId" = u."id"), '[]'::json) AS "phoneNumbers",
      COALESCE((SELECT json_agg(json_build_object('type', a."type", 'streetAddress', a."streetAddress", 'locality', a."locality", 'region', a."region",
          'postalCode', a."postalCode", 'country', a."country", 'formatted', a."formatted", 'primary', a."primary") ORDER BY a."position")
        FROM "UserAddress" a WHERE a."userId" = u."id"), '[]'::json) AS "addresses",
      (SELECT x."externalId" FROM "ScimExternalId" x WHERE x."userId" = u."id" AND x."provisionerId" = ${provisionerId}) AS "externalId"
    FROM "User" u
    WHERE ${which} AND u."instanceId" = ${instanceId} AND u."orgId" = ${orgId} AND u."type" = 'HUMAN'`;

export interface RecordsQuery {
  instanceId: string;
  orgId: string;
  /** Whose externalId the resources carry: externalIds are per provisioning client. */
  provisionerId: string;
  ids: string[];
}

export class ScimRecordRepo {
  constructor(readonly db: Db) {}

  /**
   * The full resources of `ids` (human users of the organization) in ONE
   * query, in the order of `ids`: the multi-valued attributes are aggregated
   * per user in SQL, so a GET is one round trip and a list page two (ids,
   * then this), never one per user.
   */
  async load(q: RecordsQuery): Promise<ScimUserRecord[]> {
    if (q.ids.length === 0) return [];
    const [one] = q.ids;
    const which = q.ids.length === 1 ? Prisma.sql`u."id" = ${one}` : Prisma.sql`u."id" = ANY(${q.ids}::text[])`;
    const name = q.ids.length === 1 ? "scim_user_record" : "scim_user_records";
    const rows = await query<RecordRow>(this.db, statement(RECORDS(which, q.provisionerId, q.instanceId, q.orgId), name));
    const byId = new Map(rows.map((r) => [r.id, toRecord(r)]));
    return q.ids.flatMap((id) => byId.get(id) ?? []);
  }
}
