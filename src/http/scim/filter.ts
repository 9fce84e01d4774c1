// RFC 7644 §3.4.2.2 filters: a recursive-descent parser to an AST (query.ts
// compiles it to the domain's user query). The same parser reads the value
// filters of PATCH paths.
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

export const invalidFilter = (detail: string) => new ScimError(400, "invalidFilter", "Errors.Scim.Filter.Invalid", detail);

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
      if (j >= input.length) throw invalidFilter("unterminated string literal");
      let v: string;
      try {
        v = JSON.parse(input.slice(i, j + 1)) as string;
      } catch {
        throw invalidFilter("invalid string literal");
      }
      // No stored text holds a NUL (PostgreSQL text cannot): such a literal is not a value to compare with.
      if (v.includes("\u0000")) throw invalidFilter("a string literal cannot contain U+0000");
      tokens.push({ t: "str", v });
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_:.$+-]+/.exec(input.slice(i));
      if (!m) throw invalidFilter(`unexpected character '${c}' at ${i + 1}`);
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
  if (!ATTR_PATH.test(path)) throw invalidFilter(`'${raw}' is not an attribute path`);
  return path;
}

export function parseFilter(input: string): Filter {
  if (input.length > MAX_FILTER_LENGTH) throw invalidFilter(`a filter has at most ${MAX_FILTER_LENGTH} characters`);
  const tokens = tokenize(input);
  let pos = 0;
  const peekWord = () => {
    const tok = tokens[pos];
    return tok?.t === "word" ? tok.v.toLowerCase() : undefined;
  };
  const expect = (t: Token["t"]) => {
    if (tokens[pos]?.t !== t) throw invalidFilter(`expected '${t}'`);
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
    if (depth > MAX_DEPTH) throw invalidFilter(`filters nest at most ${MAX_DEPTH} levels`);
    const tok = tokens[pos];
    if (!tok) throw invalidFilter("unexpected end of filter");
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
    if (tok.t !== "word") throw invalidFilter("expected an attribute path");
    pos++;
    const attr = attrPath(tok.v);
    if (tokens[pos]?.t === "[") {
      pos++;
      if (attr.includes(".")) throw invalidFilter("a value filter applies to a multi-valued attribute");
      const inner = or(depth + 1);
      expect("]");
      return { kind: "valuePath", attr, filter: inner };
    }
    const op = peekWord();
    if (op === "pr") {
      pos++;
      return { kind: "present", attr };
    }
    if (!op || !COMPARE_OPS.has(op)) throw invalidFilter(`expected an operator after '${attr}'`);
    pos++;
    const v = tokens[pos];
    if (!v) throw invalidFilter("expected a value");
    pos++;
    return { kind: "compare", attr, op: op as CompareOp, value: literal(v) };
  };

  const filter = or(0);
  if (pos !== tokens.length) throw invalidFilter("unexpected input after the filter");
  return filter;
}

function literal(tok: Token): Literal {
  if (tok.t === "str") return tok.v;
  if (tok.t !== "word") throw invalidFilter("expected a value");
  const w = tok.v.toLowerCase();
  if (w === "true") return true;
  if (w === "false") return false;
  if (w === "null") return null;
  if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(tok.v)) return Number(tok.v);
  throw invalidFilter(`'${tok.v}' is not a value`);
}
