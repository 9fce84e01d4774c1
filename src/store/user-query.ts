// The one SQL compiler for user queries (src/domain/identity/user-query.ts), serving v2 ListUsers and the SCIM
// list alike, and the two list statements over it: filtering and sorting happen in the database, never in memory.
import { Prisma } from "../../gen/prisma/client.js";
import type { EmailQuery, UserQuery, UserSort } from "../domain/identity/user-query.js";
import type { UserView } from "../domain/identity/users.js";
import { countLimit, type ListTotal, type Page, type TextMatch, totalOf } from "../domain/list.js";
import type { Db } from "./index.js";
import { escapeLike } from "./paging.js";
import { query, statement } from "./sql.js";
import { USER_VIEW_COLUMNS, USER_VIEW_FROM, type UserViewRow, viewFromRow } from "./users.js";

/** Column references: fixed identifiers, never from input. */
const col = (alias: string, column: string) => Prisma.raw(`${alias}."${column}"`);

/** The LIKE pattern of a text method; `%`, `_` and `\\` in the value match literally. */
function pattern(m: TextMatch): string {
  const v = escapeLike(m.value);
  return m.method === "startsWith" ? `${v}%` : m.method === "endsWith" ? `%${v}` : m.method === "contains" ? `%${v}%` : v;
}

/**
 * A text match over a column. Case-sensitive: `=` for equality, LIKE for the
 * others. Ignoring case: equality and prefixes compare lower(column), which
 * the expression indexes of the case_insensitive_indexes migration serve;
 * contains and ends-with are ILIKE (no btree helps them). A null column
 * matches nothing, and SQL's three-valued logic keeps it out under `not` too.
 */
export function textSql(column: Prisma.Sql, m: TextMatch): Prisma.Sql {
  if (!m.ignoreCase) return m.method === "equals" ? Prisma.sql`${column} = ${m.value}` : Prisma.sql`${column} LIKE ${pattern(m)}`;
  if (m.method === "equals") return Prisma.sql`lower(${column}) = lower(${m.value})`;
  if (m.method === "startsWith") return Prisma.sql`lower(${column}) LIKE lower(${pattern(m)})`;
  return Prisma.sql`${column} ILIKE ${pattern(m)}`;
}

/**
 * The username ignoring case: the stored lower-cased name against the
 * lower-cased value with case-sensitive operators, so the usernameLower
 * indexes serve it; a prefix goes through lower(usernameLower), the
 * expression its text_pattern_ops index is on.
 */
function usernameSql(m: TextMatch): Prisma.Sql {
  if (!m.ignoreCase) return textSql(col("u", "username"), m);
  const lower = { ...m, value: m.value.toLowerCase(), ignoreCase: false };
  if (m.method === "startsWith") return Prisma.sql`lower(u."usernameLower") LIKE ${pattern(lower)}`;
  return textSql(col("u", "usernameLower"), lower);
}

/** A login name is `username@primaryDomain` or, in an organization's own context, the username alone. */
function loginNameSql(m: TextMatch): Prisma.Sql {
  const v = m.value.toLowerCase();
  const at = v.lastIndexOf("@");
  const byLoginName =
    at > 0
      ? Prisma.sql` OR (u."usernameLower" = ${v.slice(0, at)}
                AND EXISTS (SELECT 1 FROM "Organization" lo WHERE lo."id" = u."orgId" AND lo."primaryDomain" = ${v.slice(at + 1)}))`
      : Prisma.empty;
  const exact = m.ignoreCase ? Prisma.empty : Prisma.sql` AND u."username" = ${m.value.slice(0, at > 0 ? at : undefined)}`;
  return Prisma.sql`((u."usernameLower" = ${v}${byLoginName})${exact})`;
}

const DATE_OPS = { eq: "=", gt: ">", ge: ">=", lt: "<", le: "<=" } as const;

function junction(op: "and" | "or", parts: Prisma.Sql[]): Prisma.Sql {
  if (!parts.length) return op === "and" ? Prisma.sql`TRUE` : Prisma.sql`FALSE`;
  return Prisma.sql`(${Prisma.join(parts, op === "and" ? " AND " : " OR ")})`;
}

/** A condition over one e-mail row `e`. */
function emailSql(q: EmailQuery): Prisma.Sql {
  switch (q.kind) {
    case "value":
      return textSql(col("e", "value"), q.match);
    case "type":
      return textSql(col("e", "type"), q.match);
    case "typePresent":
      return Prisma.sql`e."type" IS NOT NULL`;
    case "primary":
      return Prisma.sql`e."primary" = ${q.primary}`;
    case "and":
    case "or":
      return junction(q.kind, q.queries.map(emailSql));
    case "not":
      return Prisma.sql`NOT (${emailSql(q.query)})`;
  }
}

/** Whether every e-mail row matching `q` has a lower(value) that an index lookup finds. */
function emailIndexed(q: EmailQuery): boolean {
  switch (q.kind) {
    case "and":
      return q.queries.some(emailIndexed);
    case "or":
      return q.queries.length > 0 && q.queries.every(emailIndexed);
    case "value":
      return q.match.ignoreCase && (q.match.method === "equals" || q.match.method === "startsWith");
    default:
      return false;
  }
}

/**
 * Whether a user has an e-mail row matching `q`. When the condition pins
 * lower(value) (equality or a prefix, which the UserEmail_lower_value index
 * serves), PostgreSQL may start from the matching rows (a semi-join).
 * Otherwise `OFFSET 0` keeps the test a per-user subquery on the userId
 * index, run only for the organization's candidates: a semi-join would hash
 * every e-mail row of the database, whatever organization it belongs to.
 */
function anyEmailSql(q: EmailQuery): Prisma.Sql {
  const rest = emailIndexed(q) ? Prisma.empty : Prisma.raw(" OFFSET 0");
  return Prisma.sql`EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND ${emailSql(q)}${rest})`;
}

/**
 * One user query as one SQL condition over the user row `u`. SQL's
 * three-valued logic applies as written, so `not` over a comparison with a
 * column that is null (a machine has no e-mail) leaves that user out. The
 * v2 limits are the domain's (checkUserQueries); this only compiles.
 */
export function userQuerySql(q: UserQuery): Prisma.Sql {
  switch (q.kind) {
    case "text":
      return q.field === "username" ? usernameSql(q.match) : textSql(col("u", q.field), q.match);
    case "loginName":
      return loginNameSql(q.match);
    case "state":
      return Prisma.sql`u."state" = ${q.state}::"UserState"`;
    case "type":
      return Prisma.sql`u."type" = ${q.type}::"UserType"`;
    case "org":
      return Prisma.sql`u."orgId" = ${q.orgId}`;
    case "ids":
      return Prisma.sql`u."id" = ANY(${q.ids}::text[])`;
    case "metadataKey":
      return Prisma.sql`EXISTS (SELECT 1 FROM "UserMetadata" md WHERE md."userId" = u."id" AND ${textSql(col("md", "key"), q.match)})`;
    case "metadataValue":
      return Prisma.sql`EXISTS (SELECT 1 FROM "UserMetadata" md WHERE md."userId" = u."id" AND md."value" = ${Buffer.from(q.value)}::bytea)`;
    case "present":
      return Prisma.sql`${col("u", q.field)} IS NOT NULL`;
    case "date":
      return Prisma.sql`${col("u", q.field)} ${Prisma.raw(DATE_OPS[q.op])} ${q.value}::timestamptz`;
    case "email":
      return anyEmailSql(q.where);
    case "externalId": {
      const value = q.value === undefined ? Prisma.empty : Prisma.sql` AND x."externalId" = ${q.value}`;
      return Prisma.sql`EXISTS (SELECT 1 FROM "ScimExternalId" x WHERE x."userId" = u."id" AND x."provisionerId" = ${q.provisionerId}${value})`;
    }
    case "and":
    case "or":
      return junction(q.kind, q.queries.map(userQuerySql));
    case "not":
      return Prisma.sql`NOT (${userQuerySql(q.query)})`;
  }
}

/** Several queries that must all hold (a v2 request's top-level list). */
export function userQueriesSql(queries: UserQuery[]): Prisma.Sql {
  return queries.length ? Prisma.join(queries.map(userQuerySql), " AND ") : Prisma.sql`TRUE`;
}

/** Sort columns of `u`; the nullable ones put users without a value last in both directions. */
const SORT_COLUMNS: Record<UserSort, { column: string; nullable: boolean }> = {
  id: { column: "id", nullable: false },
  username: { column: "usernameLower", nullable: false },
  givenName: { column: "givenName", nullable: true },
  familyName: { column: "familyName", nullable: true },
  nickName: { column: "nickName", nullable: true },
  displayName: { column: "displayName", nullable: true },
  email: { column: "email", nullable: true },
  state: { column: "state", nullable: false },
  type: { column: "type", nullable: false },
  createdAt: { column: "createdAt", nullable: false },
  updatedAt: { column: "updatedAt", nullable: false },
};

/** The SCIM list's order over `u` (the id breaks ties, so paging is stable) and the columns it reads. */
export function scimOrderSql(sort: { by?: UserSort; asc: boolean }): { orderBy: Prisma.Sql; columns: Prisma.Sql } {
  const dir = sort.asc ? "ASC" : "DESC";
  const s = sort.by === undefined ? SORT_COLUMNS.id : SORT_COLUMNS[sort.by];
  if (s.column === "id") return { orderBy: Prisma.raw(`u."id" ${dir}`), columns: Prisma.raw('u."id"') };
  return {
    orderBy: Prisma.raw(`u."${s.column}" ${dir}${s.nullable ? " NULLS LAST" : ""}, u."id" ${dir}`),
    columns: Prisma.raw(`u."id", u."${s.column}"`),
  };
}

export interface UserListInput {
  instanceId: string;
  /** The organizations the caller may read; undefined: all of the instance. */
  orgIds: string[] | undefined;
  queries: UserQuery[];
  sort: UserSort;
  page: Page;
}

/** The order of a v2 user list over `alias`: the sort key, then the id (paging stays stable). */
function listOrder(alias: string, sort: UserSort, asc: boolean, sortKey = `"${SORT_COLUMNS[sort].column}"`): Prisma.Sql {
  const dir = asc ? "ASC" : "DESC";
  return Prisma.raw(`${alias}.${sortKey} ${dir}${SORT_COLUMNS[sort].nullable ? " NULLS LAST" : ""}, ${alias}."id" ${dir}`);
}

/**
 * A page without filters: the page walks the sort's index in order and stops, and so does the bounded count. Its
 * text depends only on the sort, the direction, whether the caller is limited to some organizations and whether the
 * count is bounded, so it is a named statement: PostgreSQL parses it once per connection (for the CTE-shaped
 * statement, unnamed, parsing and planning cost about three times what running it did). Its generic plan is the same
 * index walk with nested loops as its custom plans (checked with plan_cache_mode = force_generic_plan), so whichever
 * PostgreSQL picks, the plan holds; the CTE shape's generic plan hash-joined the page to every user.
 */
function unfilteredListStatement(input: UserListInput) {
  const p = input.page;
  const scope = input.orgIds ? Prisma.sql`AND u."orgId" = ANY(${input.orgIds}::text[])` : Prisma.empty;
  const limit = countLimit(p);
  const counted = Prisma.sql`(SELECT 1 FROM "User" u WHERE u."instanceId" = ${input.instanceId} ${scope}${limit === undefined ? Prisma.empty : Prisma.sql` LIMIT ${limit}`}) c`;
  const name = `user_list_${input.sort}_${p.asc ? "asc" : "desc"}_${input.orgIds ? "orgs" : "instance"}_${limit === undefined ? "exact" : "bounded"}`;
  return statement(
    Prisma.sql`
      SELECT t."total", v.* FROM (SELECT count(*)::int AS "total" FROM ${counted}) t
      LEFT JOIN LATERAL (
        SELECT ${col("u", SORT_COLUMNS[input.sort].column)} AS "sortKey", ${USER_VIEW_COLUMNS}
        FROM "User" u JOIN "Organization" o ON o."id" = u."orgId" WHERE u."instanceId" = ${input.instanceId} ${scope}
        ORDER BY ${listOrder("u", input.sort, p.asc)} LIMIT ${p.limit} OFFSET ${p.offset}
      ) v ON TRUE
      ORDER BY ${listOrder("v", input.sort, p.asc, '"sortKey"')}`,
    name,
  );
}

/**
 * A page with filters: the filter runs once (a materialized set of ids and sort keys) for both the count and the
 * page, then the page's rows are read. Its text varies with the filters, so it stays unnamed.
 */
function filteredListStatement(input: UserListInput) {
  const p = input.page;
  const scope = input.orgIds ? Prisma.sql`AND u."orgId" = ANY(${input.orgIds}::text[])` : Prisma.empty;
  const limit = countLimit(p);
  const counted = limit === undefined ? Prisma.sql`m` : Prisma.sql`(SELECT 1 FROM m LIMIT ${limit}) c`;
  return statement(Prisma.sql`
      WITH m AS MATERIALIZED (
        SELECT u."id", ${col("u", SORT_COLUMNS[input.sort].column)} AS "sortKey" FROM "User" u
        WHERE u."instanceId" = ${input.instanceId} ${scope} AND ${userQueriesSql(input.queries)}),
      pageIds AS (SELECT m."id", m."sortKey" FROM m ORDER BY ${listOrder("m", input.sort, p.asc, '"sortKey"')} LIMIT ${p.limit} OFFSET ${p.offset})
      SELECT t."total", v.* FROM (SELECT count(*)::int AS "total" FROM ${counted}) t
      LEFT JOIN LATERAL (
        SELECT uv.*, pageIds."sortKey" FROM pageIds JOIN (${USER_VIEW_FROM}) uv ON uv."id" = pageIds."id"
      ) v ON TRUE
      ORDER BY ${listOrder("v", input.sort, p.asc, '"sortKey"')}`);
}

export interface ScimListQuery {
  instanceId: string;
  orgId: string;
  /** None lists everyone. */
  query?: UserQuery;
  sort: { by?: UserSort; asc: boolean };
  skip: number;
  take: number;
}

export class UserQueryRepo {
  constructor(readonly db: Db) {}

  /**
   * v2 ListUsers: the total and the page in one statement on the driver, its
   * rows joined to their organizations (login names): a single round trip,
   * never a query per user. The count stops at the page's bound (countUpTo:
   * counting a whole organization of 10,000 took 10 ms, the page 0.1 ms).
   */
  async listViews(input: UserListInput): Promise<ListTotal & { users: UserView[] }> {
    const rows = await query<(UserViewRow & { total: number; id: string | null }) | { total: number; id: null }>(
      this.db,
      input.queries.length ? filteredListStatement(input) : unfilteredListStatement(input),
    );
    const users: UserView[] = [];
    for (const r of rows) if (r.id !== null) users.push(viewFromRow(r as UserViewRow));
    return { ...totalOf(rows[0]?.total ?? 0, input.page), users };
  }

  /**
   * The SCIM list: one statement answers whether the organization exists,
   * the total and the page's ids of its human users. A filter runs once (a
   * materialized CTE of ids and sort keys) and both the count and the sorted
   * page read its result; without a filter the page walks an index in order
   * and stops.
   */
  async scimPage(input: ScimListQuery): Promise<{ org: boolean; total: number; ids: string[] }> {
    const sort = scimOrderSql(input.sort);
    const page =
      input.take === 0
        ? Prisma.sql`ARRAY[]::text[]`
        : Prisma.sql`ARRAY(SELECT u."id" FROM m u ORDER BY ${sort.orderBy} LIMIT ${input.take} OFFSET ${input.skip})`;
    const [row] = await query<{ org: boolean; total: number; ids: string[] }>(
      this.db,
      statement(Prisma.sql`
      WITH m AS ${input.query ? Prisma.raw("MATERIALIZED") : Prisma.raw("NOT MATERIALIZED")} (
        SELECT ${sort.columns} FROM "User" u
        WHERE u."instanceId" = ${input.instanceId} AND u."orgId" = ${input.orgId} AND u."type" = 'HUMAN' AND ${input.query ? userQuerySql(input.query) : Prisma.sql`TRUE`})
      SELECT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = ${input.orgId} AND o."instanceId" = ${input.instanceId}) AS "org",
        (SELECT count(*)::int FROM m) AS "total", ${page} AS "ids"`),
    );
    return row ?? { org: false, total: 0, ids: [] };
  }
}
