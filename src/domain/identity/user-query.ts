// The typed user query: what v2 ListUsers filters and SCIM filters both compile to (the SQL is the store's,
// src/store/user-query.ts), its limits for v2 input, and the v2 listing.
import { listScope } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { type ListTotal, type Page, type PageInput, page, type TextMatch } from "../list.js";
import type { UserState, UserType, UserView } from "./users.js";

export type UserTextField = "id" | "username" | "givenName" | "familyName" | "nickName" | "displayName" | "email" | "phone";

export type UserQuery =
  | { kind: "text"; field: UserTextField; match: TextMatch }
  | { kind: "loginName"; match: TextMatch }
  | { kind: "state"; state: UserState }
  | { kind: "type"; type: UserType }
  | { kind: "org"; orgId: string }
  | { kind: "ids"; ids: string[] }
  | { kind: "metadataKey"; match: TextMatch }
  | { kind: "metadataValue"; value: Uint8Array }
  /** A nullable profile field holds a value. */
  | { kind: "present"; field: "givenName" | "familyName" }
  | { kind: "date"; field: "createdAt" | "updatedAt"; op: DateOp; value: Date }
  /** One of the user's addresses (the multi-valued e-mails) matches `where`. */
  | { kind: "email"; where: EmailQuery }
  /** The provisioner gave the user an externalId (equal to `value` when given): externalIds are per provisioner. */
  | { kind: "externalId"; provisionerId: string; value?: string }
  /** `and` over nothing holds for everyone, `or` over nothing for no one. */
  | { kind: "and" | "or"; queries: UserQuery[] }
  | { kind: "not"; query: UserQuery };

/** A condition over one e-mail address of a user. */
export type EmailQuery =
  | { kind: "value"; match: TextMatch }
  | { kind: "type"; match: TextMatch }
  | { kind: "typePresent" }
  | { kind: "primary"; primary: boolean }
  | { kind: "and" | "or"; queries: EmailQuery[] }
  | { kind: "not"; query: EmailQuery };

export type DateOp = "eq" | "gt" | "ge" | "lt" | "le";

export type UserSort = "id" | "username" | "givenName" | "familyName" | "nickName" | "displayName" | "email" | "state" | "type" | "createdAt" | "updatedAt";

export interface ListUsersInput {
  page?: PageInput;
  sort?: UserSort;
  queries: UserQuery[];
}

const MAX_QUERY_NODES = 100;
const MAX_QUERY_DEPTH = 10;

/**
 * The v2 API's limits on its filters (size, depth, ids per filter) and the
 * methods a login name supports, checked in the order the filters nest.
 */
export function checkUserQueries(queries: UserQuery[]): void {
  let nodes = 0;
  const check = (q: UserQuery, depth: number): void => {
    if (++nodes > MAX_QUERY_NODES) throw invalidArgument("Errors.Query.TooComplex", `at most ${MAX_QUERY_NODES} filters per request`);
    if (depth > MAX_QUERY_DEPTH) throw invalidArgument("Errors.Query.TooDeep", `filters nest at most ${MAX_QUERY_DEPTH} levels`);
    if (q.kind === "loginName" && q.match.method !== "equals")
      throw invalidArgument("Errors.Query.LoginName.Method", "login name filters support equals and equals-ignore-case only");
    if (q.kind === "ids" && q.ids.length > 1000) throw invalidArgument("Errors.Query.TooManyIds", "at most 1000 user ids per filter");
    if (q.kind === "and" || q.kind === "or") for (const c of q.queries) check(c, depth + 1);
    else if (q.kind === "not") check(q.query, depth + 1);
  };
  for (const q of queries) check(q, 1);
}

/** v2 ListUsers: the total and one page of the users the caller may read, in one statement (see the store). */
export async function listUsers(ctx: Ctx, input: ListUsersInput): Promise<ListTotal & { users: UserView[]; page: Page }> {
  const p = page(input.page);
  const orgs = listScope(ctx, "user.read");
  checkUserQueries(input.queries);
  const { users, ...total } = await ctx.store.userQueries.listViews({
    instanceId: ctx.instanceId,
    orgIds: orgs,
    queries: input.queries,
    sort: input.sort ?? "createdAt",
    page: p,
  });
  return { ...total, users, page: p };
}
