// The SCIM read side of users: the full resource (profile, multi-valued rows
// and the provisioner's externalId) of one user or of a filtered, sorted page.
import { Prisma } from "../../../gen/prisma/client.js";
import { query, statement } from "../../store/sql.js";
import { authorize, type Permission } from "../access/permissions.js";
import type { Ctx, Tx } from "../context.js";
import { notFound } from "../errors.js";
import type { ScimUserInput } from "./scim-users.js";
import { userNotFound } from "./users.js";

const orgHidden = () => notFound("Errors.Org.NotFound", "organization not found");

export interface ScimUserRecord extends Required<Omit<ScimUserInput, "password">> {
  id: string;
  orgId: string;
  createdAt: Date;
  updatedAt: Date;
}

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
 * The full resources of `ids` (human users of `orgId`) in ONE query: the
 * multi-valued attributes are aggregated per user in SQL, so a GET is one
 * round trip and a list page two (ids, then this), never one per user.
 */
export async function loadRecords(ctx: Ctx, orgId: string, ids: string[], db: Ctx["db"] | Tx = ctx.db): Promise<ScimUserRecord[]> {
  if (ids.length === 0) return [];
  const rows = await query<RecordRow>(db, statement(RECORDS(ids, ctx.principal.userId, ctx.instanceId, orgId), "scim_user_records"));
  const byId = new Map(rows.map((r) => [r.id, toRecord(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** One statement for every caller (a prepared statement): the ids travel as one array parameter. */
const RECORDS = (ids: string[], provisionerId: string, instanceId: string, orgId: string) => Prisma.sql`
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
    WHERE u."id" = ANY(${ids}::text[]) AND u."instanceId" = ${instanceId} AND u."orgId" = ${orgId} AND u."type" = 'HUMAN'`;

/**
 * Checks `permission` in the path's organization first (a caller without
 * membership there learns nothing, not even whether the organization exists).
 */
export function authorizeOrg(ctx: Ctx, permission: Permission, orgId: string): void {
  // An id PostgreSQL text cannot hold (a NUL, from a percent-encoded path) names no organization.
  if (orgId.includes("\u0000")) throw orgHidden();
  authorize(ctx, permission, orgId, orgHidden);
}

/**
 * For requests whose operations each check their own permission (Bulk): a
 * caller without membership in the organization (and no instance role)
 * learns nothing about it, the whole request is 404 as on every endpoint.
 */
export function requireOrgMembership(ctx: Ctx, orgId: string): void {
  if (!ctx.principal.orgRoles.has(orgId) && !ctx.principal.instanceRoles.length) throw orgHidden();
}

/** SCIM sees the human users of one organization; machines and other organizations' users do not exist for it. */
export function scimWhere(ctx: Ctx, orgId: string, id: string): Prisma.UserWhereInput {
  return { id, instanceId: ctx.instanceId, orgId, type: "HUMAN" };
}

export async function getScimUser(ctx: Ctx, orgId: string, id: string): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.read", orgId);
  return readBack(ctx, orgId, id);
}

export interface ScimListInput {
  /** A condition over the user row `u` (src/http/scim/filter.ts compileFilter); none lists everyone. */
  where?: Prisma.Sql;
  /** ORDER BY over `u`, ending in the id so that pages are stable, and the columns it reads. */
  sort: { orderBy: Prisma.Sql; columns: Prisma.Sql };
  skip: number;
  take: number;
}

/**
 * One statement answers whether the organization exists, the total and the
 * page's ids. A filter runs once (a materialized CTE of ids and sort keys)
 * and both the count and the sorted page read its result; without a filter
 * the page walks an index in order and stops. A second, prepared statement
 * loads the page's resources. Never a query per user.
 */
export async function listScimUsers(ctx: Ctx, orgId: string, input: ScimListInput): Promise<{ total: number; users: ScimUserRecord[] }> {
  authorizeOrg(ctx, "user.read", orgId);
  const page =
    input.take === 0
      ? Prisma.sql`ARRAY[]::text[]`
      : Prisma.sql`ARRAY(SELECT u."id" FROM m u ORDER BY ${input.sort.orderBy} LIMIT ${input.take} OFFSET ${input.skip})`;
  const [row] = await query<{ org: boolean; total: number; ids: string[] }>(
    ctx.db,
    statement(Prisma.sql`
      WITH m AS ${input.where ? Prisma.raw("MATERIALIZED") : Prisma.raw("NOT MATERIALIZED")} (
        SELECT ${input.sort.columns} FROM "User" u
        WHERE u."instanceId" = ${ctx.instanceId} AND u."orgId" = ${orgId} AND u."type" = 'HUMAN' AND ${input.where ?? Prisma.sql`TRUE`})
      SELECT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = ${orgId} AND o."instanceId" = ${ctx.instanceId}) AS "org",
        (SELECT count(*)::int FROM m) AS "total", ${page} AS "ids"`),
  );
  if (!row?.org) throw orgHidden();
  return { total: row.total, users: await loadRecords(ctx, orgId, row.ids) };
}

/** A resource id from a request path: one PostgreSQL text cannot hold (a NUL) names no user. */
export function storableId(id: string): string {
  if (id.includes("\u0000")) throw userNotFound();
  return id;
}

export async function readBack(ctx: Ctx, orgId: string, id: string): Promise<ScimUserRecord> {
  const [record] = await loadRecords(ctx, orgId, [storableId(id)]);
  if (!record) throw userNotFound();
  return record;
}
