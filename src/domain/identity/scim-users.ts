// The SCIM side of users: the full resource (profile, multi-valued rows and
// the provisioner's externalId) read, listed, replaced and deleted. Creation
// goes through users.ts createUser like the v2 CreateUser; a PATCH is applied
// by the adapter to the current resource and stored with replaceScimUser.
import { Prisma } from "../../../gen/prisma/client.js";
import { hashPassword } from "../../crypto/passwords.js";
import { invalidateAuth } from "../../store/auth-cache.js";
import { query, statement } from "../../store/sql.js";
import { authorize, authorizeOverRoles, type Permission } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx, Tx } from "../context.js";
import { failedPrecondition, notFound } from "../errors.js";
import { iamOwnersLock, keepActiveOrgOwners, lockTx } from "../orgs/members.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";
import {
  createUser,
  deleteUser,
  keepAnActiveInstanceOwner,
  mapUniqueViolation,
  type ProfileRows,
  type ScimProfile,
  scimProfileColumns,
  type UserState,
  userNotFound,
  validateUsername,
  validExternalId,
  writeProfileRows,
} from "./users.js";

export interface ScimUserInput extends ScimProfile {
  username: string;
  externalId?: string | null;
  active: boolean;
  /** Write-only; absent keeps the current password. */
  password?: string;
}

export interface ScimUserRecord extends Required<Omit<ScimUserInput, "password">> {
  id: string;
  orgId: string;
  createdAt: Date;
  updatedAt: Date;
}

const orgHidden = () => notFound("Errors.Org.NotFound", "organization not found");

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
async function loadRecords(ctx: Ctx, orgId: string, ids: string[], db: Ctx["db"] | Tx = ctx.db): Promise<ScimUserRecord[]> {
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
function scimWhere(ctx: Ctx, orgId: string, id: string): Prisma.UserWhereInput {
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

/** A SCIM create ends in the same domain function as the v2 CreateUser. */
export async function createScimUser(ctx: Ctx, orgId: string, input: ScimUserInput): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.write", orgId);
  const { username, ...scim } = input;
  const { prepared } = await createUser(ctx, { orgId, username, scim: { ...scim, provisionerId: ctx.principal.userId } });
  // What was written is what a read would return: no second round trip.
  const d = prepared.data;
  const str = (v: unknown) => (v ?? null) as string | null;
  const contact = ({ value, type, display, primary }: ProfileRows["emails"][number]) => ({
    value,
    type: type ?? null,
    display: display ?? null,
    primary: primary ?? false,
  });
  return {
    id: d.id as string,
    orgId,
    username: d.username,
    externalId: prepared.externalId?.externalId ?? null,
    givenName: str(d.givenName),
    familyName: str(d.familyName),
    middleName: str(d.middleName),
    honorificPrefix: str(d.honorificPrefix),
    honorificSuffix: str(d.honorificSuffix),
    nameFormatted: str(d.nameFormatted),
    displayName: str(d.displayName),
    nickName: str(d.nickName),
    profileUrl: str(d.profileUrl),
    userType: str(d.userType),
    title: str(d.title),
    preferredLanguage: str(d.preferredLanguage),
    locale: str(d.locale),
    timezone: str(d.timezone),
    active: d.state !== "INACTIVE",
    emails: prepared.rows.emails.map(contact),
    phoneNumbers: prepared.rows.phoneNumbers.map(contact),
    addresses: prepared.rows.addresses.map(({ id: _id, position: _p, ...a }) => ({
      type: a.type ?? null,
      streetAddress: a.streetAddress ?? null,
      locality: a.locality ?? null,
      region: a.region ?? null,
      postalCode: a.postalCode ?? null,
      country: a.country ?? null,
      formatted: a.formatted ?? null,
      primary: a.primary ?? false,
    })),
    createdAt: d.createdAt as Date,
    updatedAt: d.updatedAt as Date,
  };
}

/** A resource id from a request path: one PostgreSQL text cannot hold (a NUL) names no user. */
function storableId(id: string): string {
  if (id.includes("\u0000")) throw userNotFound();
  return id;
}

async function readBack(ctx: Ctx, orgId: string, id: string): Promise<ScimUserRecord> {
  const [record] = await loadRecords(ctx, orgId, [storableId(id)]);
  if (!record) throw userNotFound();
  return record;
}

/** A whole new resource (PUT), or one computed from the current resource under the row lock (PATCH). */
export type ScimUserChange = ScimUserInput | ((current: ScimUserRecord) => ScimUserInput);

interface LockedUser {
  id: string;
  state: UserState;
  passwordHash: string | null;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
}

/**
 * Replaces the whole resource (PUT, and the result of a PATCH): attributes
 * absent from the input are cleared, child rows rewritten, `active` moves the
 * user between INACTIVE and usable. One transaction with its audit events,
 * holding the user's row lock from the read of the current state to the
 * writes: concurrent PATCHes apply one after the other (none is lost), and a
 * DELETE in between makes the change a 404, never a half-written user.
 */
export async function replaceScimUser(ctx: Ctx, orgId: string, id: string, change: ScimUserChange): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.write", orgId);
  storableId(id);
  // Validated and a new password hashed before the transaction: the row lock is held only for the writes.
  const preview = typeof change === "function" ? change(await readBack(ctx, orgId, id)) : change;
  scimProfileColumns(preview);
  validateUsername(preview.username);
  validExternalId(preview.externalId);
  const hashes = new Map<string, string>();
  const hashOf = async (password: string): Promise<string> => {
    let hash = hashes.get(password);
    if (hash === undefined) {
      checkPassword(password, await passwordComplexity(ctx, orgId));
      hash = await hashPassword(password);
      hashes.set(password, hash);
    }
    return hash;
  };
  if (preview.password !== undefined) {
    // Setting another user's password takes the account over: only for callers who could grant its roles.
    await authorizeOverRoles(ctx, id);
    await hashOf(preview.password);
  }
  const provisionerId = ctx.principal.userId;
  const now = ctx.clock();
  try {
    await ctx.db.$transaction(async (tx) => {
      // A deactivation takes the instance owners' lock; before the row lock, in deleteUser's order (no deadlock).
      if (!preview.active) await lockTx(tx, iamOwnersLock(ctx.instanceId));
      const [current] = await tx.$queryRaw<LockedUser[]>`
        SELECT "id", "state", "passwordHash", "email", "emailVerified", "phone", "phoneVerified" FROM "User"
        WHERE "id" = ${id} AND "instanceId" = ${ctx.instanceId} AND "orgId" = ${orgId} AND "type" = 'HUMAN' FOR UPDATE`;
      if (!current) throw userNotFound();
      let input = preview;
      if (typeof change === "function") {
        const [record] = await loadRecords(ctx, orgId, [id], tx);
        if (!record) throw userNotFound();
        input = change(record);
      }
      const { columns, rows } = scimProfileColumns(input);
      const username = validateUsername(input.username);
      const externalId = validExternalId(input.externalId);
      const passwordHash = input.password !== undefined ? await hashOf(input.password) : undefined;
      const deactivating = !input.active && current.state !== "INACTIVE";
      const reactivating = input.active && current.state === "INACTIVE";
      if (deactivating && id === ctx.principal.userId) throw failedPrecondition("Errors.User.DeactivateSelf", "a user cannot deactivate itself");
      const hasPassword = passwordHash !== undefined || current.passwordHash !== null;
      let state: UserState | undefined;
      if (deactivating) state = "INACTIVE";
      else if (reactivating) state = hasPassword ? "ACTIVE" : "INITIAL";
      else if (passwordHash && current.state === "INITIAL") state = "ACTIVE";

      const data: Prisma.UserUncheckedUpdateInput = {
        ...columns,
        username,
        usernameLower: username.toLowerCase(),
        // A changed address is verified again only through the provisioner, which holds user.write.
        emailVerified: columns.email === current.email ? current.emailVerified || columns.email != null : columns.email != null,
        phoneVerified: columns.phone === current.phone ? current.phoneVerified : false,
        updatedAt: now,
        ...(state ? { state } : {}),
        ...(reactivating ? { lockedAt: null, failedPasswordAttempts: 0, failedOtpAttempts: 0 } : {}),
        ...(passwordHash ? { passwordHash, passwordChangedAt: now, passwordChangeRequired: false } : {}),
      };
      if (deactivating) {
        await keepAnActiveInstanceOwner(ctx, tx, id, "Errors.User.LastInstanceOwner", "the last active IAM_OWNER of the instance cannot be deactivated");
        await keepActiveOrgOwners(tx, id, "Errors.User.LastOrgOwner", "the last active ORG_OWNER of an organization cannot be deactivated");
      }
      // A cached principal of this user (state, credentials) must not outlive the change.
      await invalidateAuth(tx, { userId: id });
      await tx.user.update({ where: { id }, data });
      await Promise.all([
        tx.userEmail.deleteMany({ where: { userId: id } }),
        tx.userPhone.deleteMany({ where: { userId: id } }),
        tx.userAddress.deleteMany({ where: { userId: id } }),
      ]);
      await writeProfileRows(tx, id, rows);
      if (externalId === null) await tx.scimExternalId.deleteMany({ where: { userId: id, provisionerId } });
      else
        await tx.scimExternalId.upsert({
          where: { userId_provisionerId: { userId: id, provisionerId } },
          create: { userId: id, orgId, provisionerId, externalId, createdAt: now },
          update: { externalId },
        });
      await recordEvent(ctx, tx, {
        aggregateType: "user",
        aggregateId: id,
        orgId,
        type: "user.changed",
        payload: { via: "scim", username, email: columns.email ?? undefined, externalId: externalId ?? undefined },
      });
      if (deactivating || reactivating) {
        await recordEvent(ctx, tx, {
          aggregateType: "user",
          aggregateId: id,
          orgId,
          type: deactivating ? "user.deactivated" : "user.reactivated",
          payload: { state },
        });
      }
      if (passwordHash) {
        await recordEvent(ctx, tx, {
          aggregateType: "user",
          aggregateId: id,
          orgId,
          type: "user.password.changed",
          payload: { changeRequired: false, verifiedBy: "administrator" },
        });
      }
    });
  } catch (err) {
    throw mapUniqueViolation(err);
  }
  return readBack(ctx, orgId, id);
}

export async function deleteScimUser(ctx: Ctx, orgId: string, id: string): Promise<void> {
  authorizeOrg(ctx, "user.delete", orgId);
  const user = await ctx.db.user.findFirst({ where: scimWhere(ctx, orgId, storableId(id)), select: { id: true } });
  if (!user) throw userNotFound();
  // A concurrent delete between the read and the delete is NotFound there too.
  await deleteUser(ctx, user.id);
}
