// google.api.http path templates (see third_party/google/api/http.proto): parsing, matching a request path,
// and which of two templates is the more specific.

export type PathSegment =
  | { readonly kind: "literal"; readonly value: string }
  /** `*`: exactly one non-empty segment. */
  | { readonly kind: "wildcard" }
  /** `**`: zero or more segments; only ever the last segment. */
  | { readonly kind: "deepWildcard" };

export interface PathVariable {
  /** Dotted field path as written in the template, e.g. "user.id". */
  readonly fieldPath: string;
  /** Index of the first template segment the variable covers. */
  readonly start: number;
  /** Index after the last template segment the variable covers. */
  readonly end: number;
  /**
   * `{var=a/*}` or `{var=**}` style: the value may span segments, so an
   * encoded slash (%2F) must stay encoded to remain distinguishable from "/".
   */
  readonly multiSegment: boolean;
}

export interface PathTemplate {
  readonly template: string;
  readonly segments: readonly PathSegment[];
  readonly variables: readonly PathVariable[];
  readonly verb: string | undefined;
}

const FIELD_PATH_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const LITERAL_RE = /^[^{}*=/:]+$/;

/** Parses `Template = "/" Segments [ Verb ]`; throws on a malformed template. */
export function parsePathTemplate(template: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`invalid path template "${template}": ${why}`);
  };
  if (!template.startsWith("/")) fail("must start with '/'");
  const tokens = splitTopLevel(template.slice(1), fail);
  const last = tokens.length - 1;
  const { segment: lastToken, verb } = splitVerb(tokens[last] ?? "", fail);
  tokens[last] = lastToken;

  const segments: PathSegment[] = [];
  const variables: PathVariable[] = [];
  tokens.forEach((token, i) => {
    if (token.startsWith("{")) {
      const variable = parseVariable(token, segments.length, fail);
      segments.push(...variable.segments);
      variables.push(variable.variable);
    } else {
      // An empty last segment is a rule that wants a trailing slash.
      segments.push(token === "" && i === last && i > 0 ? { kind: "literal", value: "" } : parseSegment(token, fail));
    }
  });
  const deep = segments.findIndex((s) => s.kind === "deepWildcard");
  if (deep !== -1 && deep !== segments.length - 1) fail("'**' must be the last segment");
  const names = variables.map((v) => v.fieldPath);
  if (new Set(names).size !== names.length) fail("a field is bound twice");
  return { template, segments, variables, verb };
}

/** Splits on "/" outside braces, so "{name=a/*}" stays one token. */
function splitTopLevel(text: string, fail: (why: string) => never): string[] {
  const tokens: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "{") depth++;
    if (ch === "}") depth--;
    if (depth < 0 || depth > 1) fail("unbalanced or nested braces");
    if (ch === "/" && depth === 0) {
      tokens.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  if (depth !== 0) fail("unbalanced braces");
  tokens.push(current);
  return tokens;
}

function splitVerb(token: string, fail: (why: string) => never): { segment: string; verb: string | undefined } {
  const afterBrace = token.lastIndexOf("}") + 1;
  const colon = token.indexOf(":", afterBrace);
  if (colon === -1) return { segment: token, verb: undefined };
  const verb = token.slice(colon + 1);
  if (!LITERAL_RE.test(verb)) fail(`invalid verb "${verb}"`);
  return { segment: token.slice(0, colon), verb };
}

function parseSegment(token: string, fail: (why: string) => never): PathSegment {
  if (token === "*") return { kind: "wildcard" };
  if (token === "**") return { kind: "deepWildcard" };
  if (!LITERAL_RE.test(token)) fail(`invalid segment "${token}"`);
  return { kind: "literal", value: token };
}

function parseVariable(token: string, start: number, fail: (why: string) => never): { segments: PathSegment[]; variable: PathVariable } {
  if (!token.endsWith("}")) fail(`text after variable "${token}"`);
  const inner = token.slice(1, -1);
  const eq = inner.indexOf("=");
  const fieldPath = eq === -1 ? inner : inner.slice(0, eq);
  if (!FIELD_PATH_RE.test(fieldPath)) fail(`invalid field path "${fieldPath}"`);
  const sub = eq === -1 ? "*" : inner.slice(eq + 1);
  const segments = sub.split("/").map((s) => parseSegment(s, fail));
  const multiSegment = segments.length > 1 || segments.some((s) => s.kind === "deepWildcard");
  return { segments, variable: { fieldPath, start, end: start + segments.length, multiSegment } };
}

/**
 * Matches a raw (still percent-encoded) URL path, without query, against a
 * template. Returns the decoded variable values by field path, or undefined
 * when the path does not match (including malformed percent-encoding).
 */
export function matchPath(t: PathTemplate, path: string): Record<string, string> | undefined {
  if (!path.startsWith("/")) return undefined;
  const raw = path.slice(1).split("/");
  try {
    if (t.verb !== undefined && !stripVerb(raw, t.verb)) return undefined;
    if (!segmentsMatch(t.segments, raw)) return undefined;
    const values: Record<string, string> = {};
    for (const v of t.variables) values[v.fieldPath] = variableValue(t, v, raw);
    return values;
  } catch (e) {
    if (e instanceof URIError) return undefined;
    throw e;
  }
}

/** Removes ":verb" from the last raw segment in place; false if absent. */
function stripVerb(raw: string[], verb: string): boolean {
  const last = raw.length - 1;
  const colon = raw[last].lastIndexOf(":");
  if (colon === -1 || decodeURIComponent(raw[last].slice(colon + 1)) !== verb) return false;
  raw[last] = raw[last].slice(0, colon);
  return true;
}

function segmentsMatch(segments: readonly PathSegment[], raw: readonly string[]): boolean {
  for (const [i, segment] of segments.entries()) {
    if (segment.kind === "deepWildcard") return true;
    const actual = raw[i];
    if (actual === undefined) return false;
    if (segment.kind === "wildcard" && actual === "") return false;
    if (segment.kind === "literal" && decodeURIComponent(actual) !== segment.value) return false;
  }
  return raw.length === segments.length;
}

function variableValue(t: PathTemplate, v: PathVariable, raw: readonly string[]): string {
  const toEnd = v.end === t.segments.length && t.segments[v.end - 1]?.kind === "deepWildcard";
  const parts = raw.slice(v.start, toEnd ? raw.length : v.end);
  return parts.map(v.multiSegment ? decodeKeepingSlashes : decodeURIComponent).join("/");
}

function decodeKeepingSlashes(raw: string): string {
  return raw
    .split(/(%2[Ff])/)
    .map((part, i) => (i % 2 === 1 ? part : decodeURIComponent(part)))
    .join("");
}

/**
 * Orders two templates that both match a path: position by position a
 * literal beats `*`, which beats `**`; then a template with a verb wins.
 */
export function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  const weight = (s: PathSegment | undefined): number => (s === undefined ? 0 : s.kind === "literal" ? 3 : s.kind === "wildcard" ? 2 : 1);
  const length = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < length; i++) {
    const diff = weight(a.segments[i]) - weight(b.segments[i]);
    if (diff !== 0) return diff;
  }
  return Number(a.verb !== undefined) - Number(b.verb !== undefined);
}
