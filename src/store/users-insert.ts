// The user insert: a hot path (SCIM create, CreateUser), one statement per user.
import { Prisma, type User } from "../../gen/prisma/client.js";
import type { EventRow } from "./events.js";
import { DELIVERY_COLUMNS, deliveryValues, type NewDelivery } from "./outbox.js";
import { type Statement, statement } from "./sql.js";
import type { ProfileRows } from "./users.js";

/** The User columns a create writes, every one of them every time: one statement text, prepared once per connection. */
const INSERT_COLUMNS = [
  "id",
  "instanceId",
  "orgId",
  "type",
  "state",
  "username",
  "usernameLower",
  "givenName",
  "familyName",
  "nickName",
  "displayName",
  "preferredLanguage",
  "gender",
  "middleName",
  "honorificPrefix",
  "honorificSuffix",
  "nameFormatted",
  "profileUrl",
  "userType",
  "title",
  "locale",
  "timezone",
  "email",
  "emailVerified",
  "phone",
  "phoneVerified",
  "passwordHash",
  "passwordChangeRequired",
  "passwordChangedAt",
  "machineName",
  "description",
  "accessTokenType",
  "createdAt",
  "updatedAt",
] as const satisfies readonly (keyof User)[];
type InsertColumn = (typeof INSERT_COLUMNS)[number];
type Required = "id" | "instanceId" | "orgId" | "type" | "username" | "usernameLower" | "createdAt" | "updatedAt";

/** A new user's row: the columns INSERT_COLUMNS writes; the optional ones default as in the table. */
export type NewUserRow = Pick<User, Required> & Partial<Pick<User, Exclude<InsertColumn, Required>>>;

/** Everything a create writes in its one statement. */
export interface NewUser {
  data: NewUserRow;
  rows: ProfileRows;
  metadata: { key: string; value: Uint8Array<ArrayBuffer> }[];
  externalId?: { provisionerId: string; externalId: string };
  /** The user's creation event (the domain's eventRow): written by the same statement. */
  event: EventRow;
}

const INSERT_DEFAULTS: Partial<Record<InsertColumn, unknown>> = {
  state: "ACTIVE",
  gender: 0,
  emailVerified: false,
  phoneVerified: false,
  passwordChangeRequired: false,
  accessTokenType: "BEARER",
};
/** Enum columns: a typed text parameter (Prisma's raw queries send text) needs the cast. */
const INSERT_CASTS: Partial<Record<InsertColumn, Prisma.Sql>> = {
  type: Prisma.raw('::"UserType"'),
  state: Prisma.raw('::"UserState"'),
  accessTokenType: Prisma.raw('::"AccessTokenType"'),
  gender: Prisma.raw("::int"),
  emailVerified: Prisma.raw("::boolean"),
  phoneVerified: Prisma.raw("::boolean"),
  passwordChangeRequired: Prisma.raw("::boolean"),
  passwordChangedAt: Prisma.raw("::timestamptz"),
  createdAt: Prisma.raw("::timestamptz"),
  updatedAt: Prisma.raw("::timestamptz"),
};
const INSERT_COLUMN_LIST = Prisma.raw(INSERT_COLUMNS.map((c) => `"${c}"`).join(", "));

/**
 * A prepared user with its child rows (emails, phones, addresses, metadata,
 * the provisioner's externalId) and its audit event as ONE statement:
 * data-modifying CTEs, atomic on their own, one round trip. The organization
 * is checked in the same statement (none inserted: it does not exist); the
 * statement answers how many users it inserted.
 *
 * The event is written here rather than through EventRepo.append because a
 * second statement would need a transaction around both: four round trips
 * (BEGIN, insert, event, COMMIT) instead of one for every SCIM create. Its
 * row is still the one `eventRow()` builds, so an event has one shape.
 *
 * Usernames are unique per organization (the unique index). When the
 * instance's domain setting makes them unique in the whole instance, the
 * statement inserts nothing and says so (`wide`), unless `wideChecked`: the
 * caller then checks the name under its advisory lock and runs it again. The
 * setting is read by the same statement, so the common case stays one round
 * trip.
 */
export function insertUserStatement(p: NewUser, wideChecked = false, deliveries: readonly NewDelivery[] = []): Statement {
  const { data, metadata, rows, event: ev } = p;
  const record = data as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (record[key] !== undefined && !(INSERT_COLUMNS as readonly string[]).includes(key)) throw new Error(`insertUser: column ${key} is not written`);
  }
  const value = (c: InsertColumn) => Prisma.sql`${record[c] ?? INSERT_DEFAULTS[c] ?? null}${INSERT_CASTS[c] ?? Prisma.empty}`;
  const col = <T, K extends keyof T>(list: T[], k: K) => list.map((r) => (r[k] ?? null) as unknown);
  const { emails, phoneNumbers: phones, addresses } = rows;
  const sql = Prisma.sql`
    WITH s AS (SELECT EXISTS (SELECT 1 FROM "Setting" WHERE "instanceId" = ${data.instanceId} AND "ownerId" = ${data.instanceId}
        AND "kind" = 'domain' AND "value"->'usernamesUniqueInInstance' = 'true'::jsonb) AS "wide"),
    o AS (SELECT "id" FROM "Organization" WHERE "id" = ${data.orgId} AND "instanceId" = ${data.instanceId}
        AND (${wideChecked}::boolean OR NOT (SELECT "wide" FROM s))),
    u AS (INSERT INTO "User" (${INSERT_COLUMN_LIST}) SELECT ${Prisma.join(INSERT_COLUMNS.map(value))} FROM o RETURNING "id"),
    e AS (INSERT INTO "UserEmail" ("id", "userId", "position", "value", "type", "display", "primary")
      SELECT x.i, u."id", x.p, x.v, x.t, x.d, x.pr FROM u,
        unnest(${col(emails, "id")}::text[], ${col(emails, "position")}::int[], ${col(emails, "value")}::text[], ${col(emails, "type")}::text[],
          ${col(emails, "display")}::text[], ${emails.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, v, t, d, pr)),
    ph AS (INSERT INTO "UserPhone" ("id", "userId", "position", "value", "type", "display", "primary")
      SELECT x.i, u."id", x.p, x.v, x.t, x.d, x.pr FROM u,
        unnest(${col(phones, "id")}::text[], ${col(phones, "position")}::int[], ${col(phones, "value")}::text[], ${col(phones, "type")}::text[],
          ${col(phones, "display")}::text[], ${phones.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, v, t, d, pr)),
    a AS (INSERT INTO "UserAddress" ("id", "userId", "position", "type", "streetAddress", "locality", "region", "postalCode", "country", "formatted", "primary")
      SELECT x.i, u."id", x.p, x.t, x.s, x.l, x.r, x.z, x.c, x.f, x.pr FROM u,
        unnest(${col(addresses, "id")}::text[], ${col(addresses, "position")}::int[], ${col(addresses, "type")}::text[],
          ${col(addresses, "streetAddress")}::text[], ${col(addresses, "locality")}::text[], ${col(addresses, "region")}::text[],
          ${col(addresses, "postalCode")}::text[], ${col(addresses, "country")}::text[], ${col(addresses, "formatted")}::text[],
          ${addresses.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, t, s, l, r, z, c, f, pr)),
    m AS (INSERT INTO "UserMetadata" ("userId", "key", "value", "createdAt", "updatedAt")
      SELECT u."id", x.k, decode(x.v, 'base64'), ${data.createdAt}::timestamptz, ${data.createdAt}::timestamptz FROM u,
        unnest(${metadata.map((m) => m.key)}::text[], ${metadata.map((m) => Buffer.from(m.value).toString("base64"))}::text[]) AS x(k, v)),
    xid AS (INSERT INTO "ScimExternalId" ("userId", "orgId", "provisionerId", "externalId", "createdAt")
      SELECT u."id", ${data.orgId}, ${p.externalId?.provisionerId ?? null}::text, ${p.externalId?.externalId ?? null}::text, ${data.createdAt}::timestamptz
      FROM u WHERE ${p.externalId?.externalId ?? null}::text IS NOT NULL),
    ev AS (INSERT INTO "Event" ("id", "instanceId", "orgId", "aggregateType", "aggregateId", "type", "editorUserId", "payload", "createdAt")
      SELECT ${ev.id}, ${ev.instanceId}, ${ev.orgId}::text, ${ev.aggregateType}, u."id", ${ev.type},
        ${ev.editorUserId}::text, ${JSON.stringify(ev.payload)}::jsonb, ${ev.createdAt}::timestamptz FROM u)${
          // The outbox's deliveries of the creation event (event executions that match it), only if the user was inserted.
          deliveries.length
            ? Prisma.sql`,
    dl AS (INSERT INTO "Delivery" (${DELIVERY_COLUMNS}) SELECT d.* FROM (VALUES ${deliveryValues(deliveries)}) AS d WHERE EXISTS (SELECT 1 FROM u))`
            : Prisma.empty
        }
    SELECT count(*)::int AS "n", (SELECT "wide" FROM s) AS "wide" FROM u`;
  // Named by the number of deliveries: the text depends on nothing else, and there are few (targets per event).
  return statement(sql, deliveries.length ? `user_insert_outbox_${deliveries.length}` : "user_insert");
}
