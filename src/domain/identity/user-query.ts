// v2 ListUsers: the typed user query (the v2 filters; SCIM filters compile to it too) and the listing.
import { Prisma } from "../../../gen/prisma/client.js";
import { query, statement } from "../../store/sql.js";
import { listScope } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { escapeLike, type Page, page, type TextMatch } from "../list.js";
import { USER_VIEW_FROM, type UserState, type UserType, type UserView, type UserViewRow, viewFromRow } from "./users.js";

export type UserQuery =
  | { kind: "text"; field: "username" | "givenName" | "familyName" | "nickName" | "displayName" | "email" | "phone"; match: TextMatch }
  | { kind: "loginName"; match: TextMatch }
  | { kind: "state"; state: UserState }
  | { kind: "type"; type: UserType }
  | { kind: "org"; orgId: string }
  | { kind: "ids"; ids: string[] }
  | { kind: "metadataKey"; match: TextMatch }
  | { kind: "metadataValue"; value: Uint8Array }
  | { kind: "and" | "or"; queries: UserQuery[] }
  | { kind: "not"; query: UserQuery };

export type UserSort = "username" | "givenName" | "familyName" | "nickName" | "displayName" | "email" | "state" | "type" | "createdAt";

export interface ListUsersInput {
  page?: { offset?: bigint | number; limit?: number; asc?: boolean };
  sort?: UserSort;
  queries: UserQuery[];
}

const MAX_QUERY_NODES = 100;
const MAX_QUERY_DEPTH = 10;

/**
 * A text match over a column, with the semantics the v2 API documents:
 * case-sensitive equality is `=`, everything else LIKE / ILIKE, and `%`, `_`
 * and `\\` in the value match literally.
 */
function textSql(column: Prisma.Sql, m: TextMatch): Prisma.Sql {
  if (m.method === "equals" && !m.ignoreCase) return Prisma.sql`${column} = ${m.value}`;
  const v = escapeLike(m.value);
  const pattern = m.method === "startsWith" ? `${v}%` : m.method === "endsWith" ? `%${v}` : m.method === "contains" ? `%${v}%` : v;
  return m.ignoreCase ? Prisma.sql`${column} ILIKE ${pattern}` : Prisma.sql`${column} LIKE ${pattern}`;
}

const TEXT_COLUMNS: Record<Exclude<Extract<UserQuery, { kind: "text" }>["field"], "username">, Prisma.Sql> = {
  givenName: Prisma.raw('u."givenName"'),
  familyName: Prisma.raw('u."familyName"'),
  nickName: Prisma.raw('u."nickName"'),
  displayName: Prisma.raw('u."displayName"'),
  email: Prisma.raw('u."email"'),
  phone: Prisma.raw('u."phone"'),
};

/**
 * Compiles the typed filters into one SQL condition over the user row `u`:
 * filtering happens in the database. SQL's three-valued logic applies as
 * written, so `not` over a comparison with a column that is null (a machine
 * has no email) leaves that user out.
 */
export function compileUserQueries(queries: UserQuery[]): Prisma.Sql {
  let nodes = 0;
  const compile = (q: UserQuery, depth: number): Prisma.Sql => {
    if (++nodes > MAX_QUERY_NODES) throw invalidArgument("Errors.Query.TooComplex", `at most ${MAX_QUERY_NODES} filters per request`);
    if (depth > MAX_QUERY_DEPTH) throw invalidArgument("Errors.Query.TooDeep", `filters nest at most ${MAX_QUERY_DEPTH} levels`);
    switch (q.kind) {
      case "text": {
        if (q.field !== "username") return textSql(TEXT_COLUMNS[q.field], q.match);
        if (!q.match.ignoreCase) return textSql(Prisma.raw('u."username"'), q.match);
        // The stored lower-cased name (indexed, also for prefixes) against the lower-cased value: case-sensitive operators.
        const lower = q.match.value.toLowerCase();
        return q.match.method === "equals"
          ? Prisma.sql`u."usernameLower" = ${lower}`
          : textSql(Prisma.raw('u."usernameLower"'), { ...q.match, value: lower, ignoreCase: false });
      }
      case "loginName": {
        if (q.match.method !== "equals")
          throw invalidArgument("Errors.Query.LoginName.Method", "login name filters support equals and equals-ignore-case only");
        const v = q.match.value.toLowerCase();
        const at = v.lastIndexOf("@");
        const byLoginName =
          at > 0
            ? Prisma.sql` OR (u."usernameLower" = ${v.slice(0, at)}
                AND EXISTS (SELECT 1 FROM "Organization" lo WHERE lo."id" = u."orgId" AND lo."primaryDomain" = ${v.slice(at + 1)}))`
            : Prisma.empty;
        const exact = q.match.ignoreCase ? Prisma.empty : Prisma.sql` AND u."username" = ${q.match.value.slice(0, at > 0 ? at : undefined)}`;
        return Prisma.sql`((u."usernameLower" = ${v}${byLoginName})${exact})`;
      }
      case "state":
        return Prisma.sql`u."state" = ${q.state}::"UserState"`;
      case "type":
        return Prisma.sql`u."type" = ${q.type}::"UserType"`;
      case "org":
        return Prisma.sql`u."orgId" = ${q.orgId}`;
      case "ids":
        if (q.ids.length > 1000) throw invalidArgument("Errors.Query.TooManyIds", "at most 1000 user ids per filter");
        return Prisma.sql`u."id" = ANY(${q.ids}::text[])`;
      case "metadataKey":
        return Prisma.sql`EXISTS (SELECT 1 FROM "UserMetadata" md WHERE md."userId" = u."id" AND ${textSql(Prisma.raw('md."key"'), q.match)})`;
      case "metadataValue":
        return Prisma.sql`EXISTS (SELECT 1 FROM "UserMetadata" md WHERE md."userId" = u."id" AND md."value" = ${Buffer.from(q.value)}::bytea)`;
      case "and":
        return q.queries.length
          ? Prisma.sql`(${Prisma.join(
              q.queries.map((c) => compile(c, depth + 1)),
              " AND ",
            )})`
          : Prisma.sql`TRUE`;
      case "or":
        return q.queries.length
          ? Prisma.sql`(${Prisma.join(
              q.queries.map((c) => compile(c, depth + 1)),
              " OR ",
            )})`
          : Prisma.sql`FALSE`;
      case "not":
        return Prisma.sql`NOT (${compile(q.query, depth + 1)})`;
    }
  };
  return queries.length
    ? Prisma.join(
        queries.map((q) => compile(q, 1)),
        " AND ",
      )
    : Prisma.sql`TRUE`;
}

/** Sort columns; the nullable ones put users without a value last in both directions. */
const SORT_COLUMNS: Record<UserSort, { column: Prisma.Sql; nullable: boolean }> = {
  username: { column: Prisma.raw('u."usernameLower"'), nullable: false },
  givenName: { column: Prisma.raw('u."givenName"'), nullable: true },
  familyName: { column: Prisma.raw('u."familyName"'), nullable: true },
  nickName: { column: Prisma.raw('u."nickName"'), nullable: true },
  displayName: { column: Prisma.raw('u."displayName"'), nullable: true },
  email: { column: Prisma.raw('u."email"'), nullable: true },
  state: { column: Prisma.raw('u."state"'), nullable: false },
  type: { column: Prisma.raw('u."type"'), nullable: false },
  createdAt: { column: Prisma.raw('u."createdAt"'), nullable: false },
};

/**
 * The total and the page in one statement on the driver. The filter runs
 * once (a materialized set of ids and sort keys) for both the count and the
 * page; without a filter the page walks an index in order and stops. The
 * page's rows are joined to their organizations (login names) in the same
 * statement: a single round trip, never a query per user.
 */
export async function listUsers(ctx: Ctx, input: ListUsersInput): Promise<{ total: number; users: UserView[]; page: Page }> {
  const p = page(input.page);
  const orgs = listScope(ctx, "user.read");
  const filter = compileUserQueries(input.queries);
  const scope = orgs ? Prisma.sql`AND u."orgId" = ANY(${orgs}::text[])` : Prisma.empty;
  const dir = Prisma.raw(p.asc ? "ASC" : "DESC");
  const sort = SORT_COLUMNS[input.sort ?? "createdAt"];
  // The id breaks ties so that paging is stable.
  const order = (alias: string) =>
    Prisma.sql`${Prisma.raw(`${alias}."sortKey"`)} ${dir}${Prisma.raw(sort.nullable ? " NULLS LAST" : "")}, ${Prisma.raw(`${alias}."id"`)} ${dir}`;
  const rows = await query<(UserViewRow & { total: number; id: string | null }) | { total: number; id: null }>(
    ctx.db,
    statement(Prisma.sql`
      WITH m AS ${Prisma.raw(input.queries.length ? "MATERIALIZED" : "NOT MATERIALIZED")} (
        SELECT u."id", ${sort.column} AS "sortKey" FROM "User" u WHERE u."instanceId" = ${ctx.instanceId} ${scope} AND ${filter}),
      pageIds AS (SELECT m."id", m."sortKey" FROM m ORDER BY ${order("m")} LIMIT ${p.limit} OFFSET ${p.offset})
      SELECT t."total", v.* FROM (SELECT count(*)::int AS "total" FROM m) t
      LEFT JOIN LATERAL (
        SELECT uv.*, pageIds."sortKey" FROM pageIds JOIN (${USER_VIEW_FROM}) uv ON uv."id" = pageIds."id"
      ) v ON TRUE
      ORDER BY ${order("v")}`),
  );
  const total = rows[0]?.total ?? 0;
  const users: UserView[] = [];
  for (const r of rows) if (r.id !== null) users.push(viewFromRow(r as UserViewRow));
  return { total, users, page: p };
}

// ---------------------------------------------------------------- update
