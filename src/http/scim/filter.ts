// RFC 7644 §3.4.2.2 filters: a recursive-descent parser to an AST, and a
// compiler from the AST to one SQL condition (filtering happens in SQL,
// never in memory). The same parser reads the value filters of PATCH paths.
import { Prisma } from "../../../gen/prisma/client.js";
import { escapeLike } from "../../domain/list.js";
import { ScimError } from "./errors.js";

export type CompareOp = "eq" | "ne" | "co" | "sw" | "ew" | "gt" | "ge" | "lt" | "le";
export type Literal = string | number | boolean | null;

export type Filter =
  | { kind: "and" | "or"; left: Filter; right: Filter }
  | { kind: "not"; filter: Filter }
  | { kind: "compare"; attr: string; op: CompareOp; value: Literal }
  | { kind: "present"; attr: string }
  | { kind: "valuePath"; attr: string; filter: Filter };

export const MAX_FILTER_LENGTH = 1000;
const MAX_DEPTH = 20;
const CORE_URN = "urn:ietf:params:scim:schemas:core:2.0:user:";
const COMPARE_OPS = new Set<string>(["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"]);

const invalid = (detail: string) => new ScimError(400, "invalidFilter", "Errors.Scim.Filter.Invalid", detail);

type Token = { t: "(" | ")" | "[" | "]" } | { t: "str"; v: string } | { t: "word"; v: string };

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] as string;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
    } else if (c === "(" || c === ")" || c === "[" || c === "]") {
      tokens.push({ t: c });
      i++;
    } else if (c === '"') {
      // A JSON string (RFC 7644 compValue): escapes as in JSON.
      let j = i + 1;
      while (j < input.length && input[j] !== '"') j += input[j] === "\\" ? 2 : 1;
      if (j >= input.length) throw invalid("unterminated string literal");
      let v: string;
      try {
        v = JSON.parse(input.slice(i, j + 1)) as string;
      } catch {
        throw invalid("invalid string literal");
      }
      // No stored text holds a NUL (PostgreSQL text cannot): such a literal is not a value to compare with.
      if (v.includes("\u0000")) throw invalid("a string literal cannot contain U+0000");
      tokens.push({ t: "str", v });
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_:.$+-]+/.exec(input.slice(i));
      if (!m) throw invalid(`unexpected character '${c}' at ${i + 1}`);
      tokens.push({ t: "word", v: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

const ATTR_PATH = /^[A-Za-z][A-Za-z0-9_$-]*(\.[A-Za-z][A-Za-z0-9_$-]*)?$/;

/**
 * Attribute path without the core schema URN prefix; throws on anything that is not one. Attribute paths are
 * case-sensitive (the product spec's Filtering section, which here departs from RFC 7643 §2.1): `USERNAME` is
 * an unknown attribute. The URN prefix itself matches in any case.
 */
export function attrPath(raw: string): string {
  const path = raw.toLowerCase().startsWith(CORE_URN) ? raw.slice(CORE_URN.length) : raw;
  if (!ATTR_PATH.test(path)) throw invalid(`'${raw}' is not an attribute path`);
  return path;
}

export function parseFilter(input: string): Filter {
  if (input.length > MAX_FILTER_LENGTH) throw invalid(`a filter has at most ${MAX_FILTER_LENGTH} characters`);
  const tokens = tokenize(input);
  let pos = 0;
  const peekWord = () => {
    const tok = tokens[pos];
    return tok?.t === "word" ? tok.v.toLowerCase() : undefined;
  };
  const expect = (t: Token["t"]) => {
    if (tokens[pos]?.t !== t) throw invalid(`expected '${t}'`);
    pos++;
  };

  const or = (depth: number): Filter => {
    let left = and(depth);
    while (peekWord() === "or") {
      pos++;
      left = { kind: "or", left, right: and(depth) };
    }
    return left;
  };
  const and = (depth: number): Filter => {
    let left = unary(depth);
    while (peekWord() === "and") {
      pos++;
      left = { kind: "and", left, right: unary(depth) };
    }
    return left;
  };
  const unary = (depth: number): Filter => {
    if (depth > MAX_DEPTH) throw invalid(`filters nest at most ${MAX_DEPTH} levels`);
    const tok = tokens[pos];
    if (!tok) throw invalid("unexpected end of filter");
    if (tok.t === "(") {
      pos++;
      const inner = or(depth + 1);
      expect(")");
      return inner;
    }
    if (tok.t === "word" && tok.v.toLowerCase() === "not" && tokens[pos + 1]?.t === "(") {
      pos += 2;
      const inner = or(depth + 1);
      expect(")");
      return { kind: "not", filter: inner };
    }
    if (tok.t !== "word") throw invalid("expected an attribute path");
    pos++;
    const attr = attrPath(tok.v);
    if (tokens[pos]?.t === "[") {
      pos++;
      if (attr.includes(".")) throw invalid("a value filter applies to a multi-valued attribute");
      const inner = or(depth + 1);
      expect("]");
      return { kind: "valuePath", attr, filter: inner };
    }
    const op = peekWord();
    if (op === "pr") {
      pos++;
      return { kind: "present", attr };
    }
    if (!op || !COMPARE_OPS.has(op)) throw invalid(`expected an operator after '${attr}'`);
    pos++;
    const v = tokens[pos];
    if (!v) throw invalid("expected a value");
    pos++;
    return { kind: "compare", attr, op: op as CompareOp, value: literal(v) };
  };

  const filter = or(0);
  if (pos !== tokens.length) throw invalid("unexpected input after the filter");
  return filter;
}

function literal(tok: Token): Literal {
  if (tok.t === "str") return tok.v;
  if (tok.t !== "word") throw invalid("expected a value");
  const w = tok.v.toLowerCase();
  if (w === "true") return true;
  if (w === "false") return false;
  if (w === "null") return null;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(tok.v)) return Number(tok.v);
  throw invalid(`'${tok.v}' is not a value`);
}

// ---------------------------------------------------------------- compile

const STRING_OPS: readonly CompareOp[] = ["eq", "ne", "co", "sw", "ew"];
const DATE_OPS: readonly CompareOp[] = ["eq", "gt", "ge", "lt", "le"];
const EQ_OPS: readonly CompareOp[] = ["eq", "ne"];

/** Column references: fixed identifiers, never from input. */
const U = (column: string) => Prisma.raw(`u."${column}"`);
const E = (column: string) => Prisma.raw(`e."${column}"`);

/** The LIKE pattern of a string operator (eq is an exact pattern: no wildcard, escapes kept). */
function pattern(op: CompareOp, value: string): string {
  const v = escapeLike(value);
  return op === "co" ? `%${v}%` : op === "sw" ? `${v}%` : op === "ew" ? `%${v}` : v;
}

/**
 * A string comparison. caseExact false: equality and prefixes compare
 * lower(column), which the expression indexes of the
 * case_insensitive_indexes migration serve; contains and ends-with are ILIKE
 * (no btree helps them). caseExact true: `=` / `<>` for equality, LIKE for
 * the others. LIKE's wildcards in the value are always escaped. A null
 * attribute matches no operator, `ne` included (SQL's three-valued logic).
 */
function stringSql(column: Prisma.Sql, op: CompareOp, value: string, insensitive: boolean): Prisma.Sql {
  if (insensitive) {
    if (op === "eq") return Prisma.sql`lower(${column}) = lower(${value})`;
    if (op === "ne") return Prisma.sql`NOT (lower(${column}) = lower(${value}))`;
    if (op === "sw") return Prisma.sql`lower(${column}) LIKE lower(${pattern(op, value)})`;
    return Prisma.sql`${column} ILIKE ${pattern(op, value)}`;
  }
  if (op === "eq") return Prisma.sql`${column} = ${value}`;
  if (op === "ne") return Prisma.sql`${column} <> ${value}`;
  return Prisma.sql`${column} LIKE ${pattern(op, value)}`;
}

function str(attr: string, value: Literal): string {
  if (typeof value !== "string") throw invalid(`'${attr}' compares with a string`);
  return value;
}

function date(attr: string, value: Literal): Date {
  const d = typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? new Date(value) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw invalid(`'${attr}' compares with an ISO 8601 timestamp`);
  return d;
}

function bool(attr: string, value: Literal): boolean {
  if (typeof value !== "boolean") throw invalid(`'${attr}' compares with true or false`);
  return value;
}

function allowed(attr: string, op: CompareOp, ops: readonly CompareOp[]): void {
  if (!ops.includes(op)) throw invalid(`operator '${op}' is not supported on '${attr}'`);
}

const TRUE = Prisma.sql`TRUE`;
/**
 * Whether a user has an email row matching `where`. When the condition pins
 * lower(value) (eq or sw, which the UserEmail_lower_value index serves),
 * PostgreSQL may start from the matching rows (a semi-join). Otherwise
 * `OFFSET 0` keeps the test a per-user subquery on the userId index, run only
 * for the organization's candidates: a semi-join would hash every email row
 * of the database, whatever organization it belongs to.
 */
const anyEmail = (where: Prisma.Sql, indexed: boolean) =>
  Prisma.sql`EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND ${where}${indexed ? Prisma.empty : Prisma.raw(" OFFSET 0")})`;

/** Whether every email row matching `f` has a lower(value) that an index lookup finds (see anyEmail). */
function emailIndexed(f: Filter): boolean {
  switch (f.kind) {
    case "and":
      return emailIndexed(f.left) || emailIndexed(f.right);
    case "or":
      return emailIndexed(f.left) && emailIndexed(f.right);
    case "compare":
      return f.attr === "value" && (f.op === "eq" || f.op === "sw");
    default:
      return false;
  }
}

/** Sub-attributes of emails that a value filter may test, over the row `e`. */
function emailSql(attr: string, f: Filter): Prisma.Sql {
  switch (f.kind) {
    case "and":
      return Prisma.sql`(${emailSql(attr, f.left)} AND ${emailSql(attr, f.right)})`;
    case "or":
      return Prisma.sql`(${emailSql(attr, f.left)} OR ${emailSql(attr, f.right)})`;
    case "not":
      return Prisma.sql`NOT (${emailSql(attr, f.filter)})`;
    case "valuePath":
      throw invalid("value filters do not nest");
    case "present":
      if (f.attr === "value" || f.attr === "primary") return TRUE;
      if (f.attr === "type") return Prisma.sql`e."type" IS NOT NULL`;
      throw invalid(`unknown attribute '${attr}.${f.attr}'`);
    case "compare":
      if (f.attr === "value") {
        allowed(`${attr}.value`, f.op, STRING_OPS);
        return stringSql(E("value"), f.op, str(`${attr}.value`, f.value), true);
      }
      if (f.attr === "type") {
        allowed(`${attr}.type`, f.op, EQ_OPS);
        return stringSql(E("type"), f.op, str(`${attr}.type`, f.value), true);
      }
      if (f.attr === "primary") {
        allowed(`${attr}.primary`, f.op, EQ_OPS);
        return Prisma.sql`e."primary" = ${bool(`${attr}.primary`, f.value) === (f.op === "eq")}`;
      }
      throw invalid(`unknown attribute '${attr}.${f.attr}'`);
  }
}

export interface FilterScope {
  /** externalId is scoped per provisioning client. */
  provisionerId: string;
}

/**
 * Compiles a parsed filter into one SQL condition over the organization's
 * human users (alias `u`): filtering happens in the database, never in memory.
 */
export function compileFilter(f: Filter, scope: FilterScope): Prisma.Sql {
  switch (f.kind) {
    case "and":
      return Prisma.sql`(${compileFilter(f.left, scope)} AND ${compileFilter(f.right, scope)})`;
    case "or":
      return Prisma.sql`(${compileFilter(f.left, scope)} OR ${compileFilter(f.right, scope)})`;
    case "not":
      return Prisma.sql`NOT (${compileFilter(f.filter, scope)})`;
    case "valuePath":
      if (f.attr !== "emails") throw invalid(`'${f.attr}' is not filterable`);
      return anyEmail(emailSql("emails", f.filter), emailIndexed(f.filter));
    case "present":
      return present(f.attr, scope);
    case "compare":
      return compare(f.attr, f.op, f.value, scope);
  }
}

const externalIdSql = (scope: FilterScope, extra: Prisma.Sql) =>
  Prisma.sql`EXISTS (SELECT 1 FROM "ScimExternalId" x WHERE x."userId" = u."id" AND x."provisionerId" = ${scope.provisionerId}${extra})`;

function present(attr: string, scope: FilterScope): Prisma.Sql {
  switch (attr) {
    case "id":
    case "userName":
    case "meta.created":
    case "meta.lastModified":
    case "active":
      return TRUE;
    case "externalId":
      return externalIdSql(scope, Prisma.empty);
    case "name.familyName":
      return Prisma.sql`u."familyName" IS NOT NULL`;
    case "name.givenName":
      return Prisma.sql`u."givenName" IS NOT NULL`;
    case "emails":
    case "emails.value":
      return anyEmail(TRUE, false);
  }
  throw invalid(`'${attr}' is not filterable`);
}

const DATE_SQL: Record<"eq" | "gt" | "ge" | "lt" | "le", string> = { eq: "=", gt: ">", ge: ">=", lt: "<", le: "<=" };

function compare(attr: string, op: CompareOp, value: Literal, scope: FilterScope): Prisma.Sql {
  switch (attr) {
    case "id":
      allowed(attr, op, STRING_OPS);
      return stringSql(U("id"), op, str(attr, value), false);
    case "externalId": {
      allowed(attr, op, EQ_OPS);
      const match = externalIdSql(scope, Prisma.sql` AND x."externalId" = ${str(attr, value)}`);
      return op === "eq" ? match : Prisma.sql`NOT ${match}`;
    }
    case "userName":
      // userName is unique case-insensitively (caseExact false): compared lower-cased, served by the usernameLower index.
      allowed(attr, op, STRING_OPS);
      // A prefix goes through lower(usernameLower), the expression its text_pattern_ops index is on.
      return op === "sw"
        ? Prisma.sql`lower(u."usernameLower") LIKE ${pattern(op, str(attr, value).toLowerCase())}`
        : stringSql(U("usernameLower"), op, str(attr, value).toLowerCase(), false);
    case "name.familyName":
      allowed(attr, op, STRING_OPS);
      return stringSql(U("familyName"), op, str(attr, value), true);
    case "name.givenName":
      allowed(attr, op, STRING_OPS);
      return stringSql(U("givenName"), op, str(attr, value), true);
    case "emails":
    case "emails.value":
      // Multi-valued: a user matches when any of its addresses does (RFC 7644 §3.4.2.2).
      allowed(attr, op, STRING_OPS);
      return anyEmail(stringSql(E("value"), op, str(attr, value), true), op === "eq" || op === "sw");
    case "active": {
      allowed(attr, op, EQ_OPS);
      return bool(attr, value) === (op === "eq") ? Prisma.sql`u."state" <> 'INACTIVE'` : Prisma.sql`u."state" = 'INACTIVE'`;
    }
    case "meta.created":
    case "meta.lastModified": {
      allowed(attr, op, DATE_OPS);
      const column = U(attr === "meta.created" ? "createdAt" : "updatedAt");
      return Prisma.sql`${column} ${Prisma.raw(DATE_SQL[op as keyof typeof DATE_SQL])} ${date(attr, value)}::timestamptz`;
    }
  }
  throw invalid(`'${attr}' is not filterable`);
}

// ---------------------------------------------------------------- sort

const SORT: Record<string, { column: "createdAt" | "updatedAt" | "id" | "usernameLower" | "familyName" | "givenName" | "email"; nullable: boolean }> = {
  "meta.created": { column: "createdAt", nullable: false },
  "meta.lastModified": { column: "updatedAt", nullable: false },
  id: { column: "id", nullable: false },
  userName: { column: "usernameLower", nullable: false },
  "name.familyName": { column: "familyName", nullable: true },
  "name.givenName": { column: "givenName", nullable: true },
  emails: { column: "email", nullable: true },
  "emails.value": { column: "email", nullable: true },
};

/** An ORDER BY list over the user row `u` and the columns it needs (to carry them through a subquery). */
export interface CompiledSort {
  orderBy: Prisma.Sql;
  columns: Prisma.Sql;
}

/** sortBy over the sortable attributes (unknown → invalidValue); the id breaks ties so paging is stable. */
export function compileSort(sortBy: string | undefined, sortOrder: string | undefined): CompiledSort {
  let dir = "ASC";
  if (sortOrder !== undefined) {
    if (sortOrder === "ascending") dir = "ASC";
    else if (sortOrder === "descending") dir = "DESC";
    else throw new ScimError(400, "invalidValue", "Errors.Scim.SortOrder.Invalid", "sortOrder is 'ascending' or 'descending'");
  }
  if (sortBy === undefined || sortBy === "") return { orderBy: Prisma.raw(`u."id" ${dir}`), columns: Prisma.raw('u."id"') };
  let path: string;
  try {
    path = attrPath(sortBy);
  } catch {
    throw new ScimError(400, "invalidValue", "Errors.Scim.SortBy.Invalid", `'${sortBy}' is not a sortable attribute`);
  }
  const s = SORT[path];
  if (!s) throw new ScimError(400, "invalidValue", "Errors.Scim.SortBy.Invalid", `'${sortBy}' is not a sortable attribute`);
  if (s.column === "id") return { orderBy: Prisma.raw(`u."id" ${dir}`), columns: Prisma.raw('u."id"') };
  // The emails sort key is the primary address (RFC 7644 §3.4.2.3), kept in the user row.
  return {
    orderBy: Prisma.raw(`u."${s.column}" ${dir}${s.nullable ? " NULLS LAST" : ""}, u."id" ${dir}`),
    columns: Prisma.raw(`u."id", u."${s.column}"`),
  };
}
