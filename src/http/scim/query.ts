// A parsed SCIM filter (filter.ts) compiled to the domain's user query, and
// sortBy/sortOrder to its sort: which attributes SCIM filters and sorts on,
// with which operators (RFC 7644 §3.4.2.2 and the product spec's table), is
// the adapter's rule; the SQL is the store's.
import type { EmailQuery, UserQuery, UserSort } from "../../domain/identity/user-query.js";
import type { TextMatch, TextMethod } from "../../domain/list.js";
import { storable } from "../../domain/time.js";
import { ScimError } from "./errors.js";
import { attrPath, type CompareOp, type Filter, invalidFilter, type Literal } from "./filter.js";

const STRING_OPS: readonly CompareOp[] = ["eq", "ne", "co", "sw", "ew"];
const DATE_OPS: readonly CompareOp[] = ["eq", "gt", "ge", "lt", "le"];
const EQ_OPS: readonly CompareOp[] = ["eq", "ne"];

const METHODS: Partial<Record<CompareOp, TextMethod>> = { eq: "equals", ne: "equals", co: "contains", sw: "startsWith", ew: "endsWith" };

/** Everyone (a present test on an attribute every user has). */
const ALL = { kind: "and", queries: [] } as const satisfies UserQuery & EmailQuery;

function str(attr: string, value: Literal): string {
  if (typeof value !== "string") throw invalidFilter(`'${attr}' compares with a string`);
  return value;
}

function date(attr: string, value: Literal): Date {
  const d = typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? new Date(value) : undefined;
  if (!d || !storable(d)) throw invalidFilter(`'${attr}' compares with an ISO 8601 timestamp between years 0001 and 9999`);
  return d;
}

function bool(attr: string, value: Literal): boolean {
  if (typeof value !== "boolean") throw invalidFilter(`'${attr}' compares with true or false`);
  return value;
}

function allowed(attr: string, op: CompareOp, ops: readonly CompareOp[]): void {
  if (!ops.includes(op)) throw invalidFilter(`operator '${op}' is not supported on '${attr}'`);
}

/**
 * A string operator as a text match (`ne` is a negated equality). caseExact
 * false (ignoreCase): userName, names, e-mail values and types. A null
 * attribute matches no operator, `ne` included (SQL's three-valued logic).
 */
function text<Q>(attr: string, op: CompareOp, value: Literal, ignoreCase: boolean, make: (m: TextMatch) => Q, not: (q: Q) => Q): Q {
  allowed(attr, op, STRING_OPS);
  const q = make({ method: METHODS[op] as TextMethod, ignoreCase, value: str(attr, value) });
  return op === "ne" ? not(q) : q;
}

const notUser = (query: UserQuery): UserQuery => ({ kind: "not", query });
const notEmail = (query: EmailQuery): EmailQuery => ({ kind: "not", query });

/** A condition over one address of a value filter `emails[...]`. */
function emailQuery(attr: string, f: Filter): EmailQuery {
  switch (f.kind) {
    case "and":
    case "or":
      return { kind: f.kind, queries: [emailQuery(attr, f.left), emailQuery(attr, f.right)] };
    case "not":
      return notEmail(emailQuery(attr, f.filter));
    case "valuePath":
      throw invalidFilter("value filters do not nest");
    case "present":
      if (f.attr === "value" || f.attr === "primary") return ALL;
      if (f.attr === "type") return { kind: "typePresent" };
      throw invalidFilter(`unknown attribute '${attr}.${f.attr}'`);
    case "compare":
      if (f.attr === "value") return text(`${attr}.value`, f.op, f.value, true, (match) => ({ kind: "value", match }), notEmail);
      if (f.attr === "type") {
        allowed(`${attr}.type`, f.op, EQ_OPS);
        return text(`${attr}.type`, f.op, f.value, true, (match) => ({ kind: "type", match }), notEmail);
      }
      if (f.attr === "primary") {
        allowed(`${attr}.primary`, f.op, EQ_OPS);
        return { kind: "primary", primary: bool(`${attr}.primary`, f.value) === (f.op === "eq") };
      }
      throw invalidFilter(`unknown attribute '${attr}.${f.attr}'`);
  }
}

export interface FilterScope {
  /** externalId is scoped per provisioning client. */
  provisionerId: string;
}

/** A parsed filter as the domain's query over the organization's human users. */
export function compileFilter(f: Filter, scope: FilterScope): UserQuery {
  switch (f.kind) {
    case "and":
    case "or":
      return { kind: f.kind, queries: [compileFilter(f.left, scope), compileFilter(f.right, scope)] };
    case "not":
      return notUser(compileFilter(f.filter, scope));
    case "valuePath":
      if (f.attr !== "emails") throw invalidFilter(`'${f.attr}' is not filterable`);
      return { kind: "email", where: emailQuery("emails", f.filter) };
    case "present":
      return present(f.attr, scope);
    case "compare":
      return compare(f.attr, f.op, f.value, scope);
  }
}

function present(attr: string, scope: FilterScope): UserQuery {
  switch (attr) {
    case "id":
    case "userName":
    case "meta.created":
    case "meta.lastModified":
    case "active":
      return ALL;
    case "externalId":
      return { kind: "externalId", provisionerId: scope.provisionerId };
    case "name.familyName":
      return { kind: "present", field: "familyName" };
    case "name.givenName":
      return { kind: "present", field: "givenName" };
    case "emails":
    case "emails.value":
      return { kind: "email", where: ALL };
  }
  throw invalidFilter(`'${attr}' is not filterable`);
}

function compare(attr: string, op: CompareOp, value: Literal, scope: FilterScope): UserQuery {
  const field = (name: "id" | "username" | "familyName" | "givenName", ignoreCase: boolean) =>
    text(attr, op, value, ignoreCase, (match): UserQuery => ({ kind: "text", field: name, match }), notUser);
  switch (attr) {
    case "id":
      return field("id", false);
    case "externalId": {
      allowed(attr, op, EQ_OPS);
      const match: UserQuery = { kind: "externalId", provisionerId: scope.provisionerId, value: str(attr, value) };
      return op === "eq" ? match : notUser(match);
    }
    case "userName":
      // userName is unique case-insensitively (caseExact false).
      return field("username", true);
    case "name.familyName":
      return field("familyName", true);
    case "name.givenName":
      return field("givenName", true);
    case "emails":
    case "emails.value":
      // Multi-valued: a user matches when any of its addresses does (RFC 7644 §3.4.2.2).
      return { kind: "email", where: text(attr, op, value, true, (match): EmailQuery => ({ kind: "value", match }), notEmail) };
    case "active": {
      allowed(attr, op, EQ_OPS);
      const inactive: UserQuery = { kind: "state", state: "INACTIVE" };
      return bool(attr, value) === (op === "eq") ? notUser(inactive) : inactive;
    }
    case "meta.created":
    case "meta.lastModified":
      allowed(attr, op, DATE_OPS);
      return { kind: "date", field: attr === "meta.created" ? "createdAt" : "updatedAt", op: op as "eq" | "gt" | "ge" | "lt" | "le", value: date(attr, value) };
  }
  throw invalidFilter(`'${attr}' is not filterable`);
}

// ---------------------------------------------------------------- sort

const SORT: Record<string, UserSort> = {
  "meta.created": "createdAt",
  "meta.lastModified": "updatedAt",
  id: "id",
  userName: "username",
  "name.familyName": "familyName",
  "name.givenName": "givenName",
  // The primary address (RFC 7644 §3.4.2.3), kept in the user row.
  emails: "email",
  "emails.value": "email",
};

const invalidSortBy = (sortBy: string) => new ScimError(400, "invalidValue", "Errors.Scim.SortBy.Invalid", `'${sortBy}' is not a sortable attribute`);

/** sortBy over the sortable attributes (unknown → invalidValue); none sorts by id. */
export function compileSort(sortBy: string | undefined, sortOrder: string | undefined): { by?: UserSort; asc: boolean } {
  let asc = true;
  if (sortOrder !== undefined) {
    if (sortOrder === "descending") asc = false;
    else if (sortOrder !== "ascending") throw new ScimError(400, "invalidValue", "Errors.Scim.SortOrder.Invalid", "sortOrder is 'ascending' or 'descending'");
  }
  if (sortBy === undefined || sortBy === "") return { asc };
  let path: string;
  try {
    path = attrPath(sortBy);
  } catch {
    throw invalidSortBy(sortBy);
  }
  const by = Object.hasOwn(SORT, path) ? SORT[path] : undefined;
  if (!by) throw invalidSortBy(sortBy);
  return { by, asc };
}
