// REST/JSON transcoding (google.api.http, see third_party/google/api/http.proto)
// in front of the Connect router.
//
// A REST call is not served by calling the implementation: it is rewritten
// into a Connect unary JSON request and handed to the router's own
// UniversalHandler, so interceptors (authentication, validation, error
// mapping), the strict JSON parser and the error serialization are exactly
// the ones every Connect, gRPC and gRPC-Web client goes through.
//
// Decisions where the spec leaves room, all in favour of failing loudly
// rather than guessing what the client meant:
// - A path variable and a `body: "*"` (or body-field) value for the same
//   field must agree; an equal value is accepted (clients often echo the id),
//   a different one is 400 INVALID_ARGUMENT.
// - Query parameters are strict like unknown JSON fields: an unknown name,
//   a field already bound by the path or the body, a repeated key for a
//   singular field, any parameter on a `body: "*"` rule, a message or map
//   leaf: all 400.
// - A non-empty body on a rule without `body` is 400 rather than ignored.
// - Paths match exactly: no trailing-slash or case leniency. A path or
//   method that matches no rule is left to the caller (the handler returns
//   false).
//
// It runs on Node's request and response, over HTTP/1.1 and HTTP/2 alike
// (h2c clients and proxies that speak HTTP/2 upstream reach REST too).

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import {
  create,
  createRegistry,
  type DescEnum,
  type DescField,
  type DescFile,
  type DescMessage,
  fromJson,
  getOption,
  hasOption,
  type JsonObject,
  type JsonValue,
  type Registry,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import { AnySchema, DurationSchema, FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
// Marked internal by connect, but they are the Connect protocol's own
// code <-> status tables, and the dependency is pinned to an exact version.
import { codeFromString, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** Serves the request and returns true when a REST rule matches it; returns false, touching nothing, when none does. */
export type RestHandler = (req: Request, res: Response) => boolean;

// Request headers an implementation or interceptor may rely on. Everything
// else is HTTP plumbing that means nothing on the internal Connect call.
const FORWARDED_REQUEST_HEADERS = new Set(["authorization", "x-request-id", "user-agent", "accept-language"]);
const FORWARDED_REQUEST_HEADER_PREFIX = "x-forwarded-";
// Response headers that carry meaning for REST clients (the auth challenge
// of a 401, the correlation id). Connect puts error metadata into headers.
const FORWARDED_RESPONSE_HEADERS = ["www-authenticate", "x-request-id"];

// ---------------------------------------------------------------------------
// Path templates
// ---------------------------------------------------------------------------

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
function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  const weight = (s: PathSegment | undefined): number => (s === undefined ? 0 : s.kind === "literal" ? 3 : s.kind === "wildcard" ? 2 : 1);
  const length = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < length; i++) {
    const diff = weight(a.segments[i]) - weight(b.segments[i]);
    if (diff !== 0) return diff;
  }
  return Number(a.verb !== undefined) - Number(b.verb !== undefined);
}

// ---------------------------------------------------------------------------
// Client errors
// ---------------------------------------------------------------------------

/** A failure the transcoder answers itself, before or instead of the handler. */
class RestError extends Error {
  constructor(
    readonly status: number,
    readonly code: Code,
    message: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string) => new RestError(400, Code.InvalidArgument, message);

const quote = (value: string) => JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);

// ---------------------------------------------------------------------------
// Field paths and value conversion (path variables and query parameters)
// ---------------------------------------------------------------------------

/** What a single value of a field is, with list-ness stripped off. */
type Leaf =
  | { readonly kind: "scalar"; readonly scalar: ScalarType }
  | { readonly kind: "enum"; readonly desc: DescEnum }
  | { readonly kind: "message"; readonly desc: DescMessage };

// Wrappers read like the scalar they wrap.
const WRAPPERS: ReadonlyMap<string, ScalarType> = new Map([
  ["google.protobuf.DoubleValue", ScalarType.DOUBLE],
  ["google.protobuf.FloatValue", ScalarType.FLOAT],
  ["google.protobuf.Int64Value", ScalarType.INT64],
  ["google.protobuf.UInt64Value", ScalarType.UINT64],
  ["google.protobuf.Int32Value", ScalarType.INT32],
  ["google.protobuf.UInt32Value", ScalarType.UINT32],
  ["google.protobuf.BoolValue", ScalarType.BOOL],
  ["google.protobuf.StringValue", ScalarType.STRING],
  ["google.protobuf.BytesValue", ScalarType.BYTES],
]);
// Messages whose JSON form is a string, validated with their own parser.
const STRING_MESSAGES: ReadonlyMap<string, DescMessage> = new Map<string, DescMessage>([
  [TimestampSchema.typeName, TimestampSchema],
  [DurationSchema.typeName, DurationSchema],
  [FieldMaskSchema.typeName, FieldMaskSchema],
]);
// Messages whose JSON is not an object, so "a.b" cannot address into them.
const NON_OBJECT_JSON = new Set([
  ...WRAPPERS.keys(),
  ...STRING_MESSAGES.keys(),
  "google.protobuf.Any",
  "google.protobuf.Struct",
  "google.protobuf.Value",
  "google.protobuf.ListValue",
]);

function leafOf(field: DescField): Leaf | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return { kind: "scalar", scalar: field.scalar };
    case "enum":
      return { kind: "enum", desc: field.enum };
    case "message":
      return { kind: "message", desc: field.message };
    case "list":
      if (field.listKind === "scalar") return { kind: "scalar", scalar: field.scalar };
      if (field.listKind === "enum") return { kind: "enum", desc: field.enum };
      return { kind: "message", desc: field.message };
    case "map":
      return undefined;
  }
}

function isTextual(leaf: Leaf): boolean {
  return leaf.kind !== "message" || WRAPPERS.has(leaf.desc.typeName) || STRING_MESSAGES.has(leaf.desc.typeName);
}

function findField(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

/**
 * Resolves "a.b.c" (proto or JSON names) to fields. Intermediate fields must
 * be singular messages with object JSON; the leaf is checked by the caller.
 * Returns a reason string instead of fields when the path is unusable.
 */
function resolveFieldPath(message: DescMessage, path: string): DescField[] | string {
  const fields: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const part of path.split(".")) {
    if (current === undefined) return `"${fields.map((f) => f.name).join(".")}" has no sub-fields`;
    const field = findField(current, part);
    if (field === undefined) return `${current.typeName} has no field "${part}"`;
    fields.push(field);
    current = field.fieldKind === "message" && !NON_OBJECT_JSON.has(field.message.typeName) ? field.message : undefined;
  }
  return fields;
}

const INT_RE = /^-?\d+$/;
const FLOAT_RE = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;
const FLOAT32_MAX = 3.4028234663852886e38;

interface IntRange {
  readonly min: bigint;
  readonly max: bigint;
  // The proto3 JSON form of 64-bit integers is a string.
  readonly asString: boolean;
}
const INT32: IntRange = { min: -(2n ** 31n), max: 2n ** 31n - 1n, asString: false };
const UINT32: IntRange = { min: 0n, max: 2n ** 32n - 1n, asString: false };
const INT64: IntRange = { min: -(2n ** 63n), max: 2n ** 63n - 1n, asString: true };
const UINT64: IntRange = { min: 0n, max: 2n ** 64n - 1n, asString: true };
const INT_RANGES: ReadonlyMap<ScalarType, IntRange> = new Map([
  [ScalarType.INT32, INT32],
  [ScalarType.SINT32, INT32],
  [ScalarType.SFIXED32, INT32],
  [ScalarType.UINT32, UINT32],
  [ScalarType.FIXED32, UINT32],
  [ScalarType.INT64, INT64],
  [ScalarType.SINT64, INT64],
  [ScalarType.SFIXED64, INT64],
  [ScalarType.UINT64, UINT64],
  [ScalarType.FIXED64, UINT64],
]);

/**
 * Converts one textual value to the proto3 JSON the Connect parser expects.
 * Returns undefined when the text is not a valid value of the type.
 */
function textToJson(leaf: Leaf, text: string): JsonValue | undefined {
  if (leaf.kind === "enum") return enumToJson(leaf.desc, text);
  if (leaf.kind === "scalar") return scalarToJson(leaf.scalar, text);
  const wrapped = WRAPPERS.get(leaf.desc.typeName);
  if (wrapped !== undefined) return scalarToJson(wrapped, text);
  const schema = STRING_MESSAGES.get(leaf.desc.typeName);
  if (schema === undefined) return undefined;
  try {
    fromJson(schema, text);
    return text;
  } catch {
    return undefined;
  }
}

function scalarToJson(scalar: ScalarType, text: string): JsonValue | undefined {
  const range = INT_RANGES.get(scalar);
  if (range !== undefined) return intToJson(range, text);
  switch (scalar) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      return text === "true" ? true : text === "false" ? false : undefined;
    case ScalarType.BYTES:
      return BASE64_RE.test(text) && text.replace(/=+$/, "").length % 4 !== 1 ? text : undefined;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return floatToJson(scalar === ScalarType.FLOAT ? FLOAT32_MAX : Number.MAX_VALUE, text);
  }
  return undefined;
}

function intToJson(range: IntRange, text: string): JsonValue | undefined {
  if (!INT_RE.test(text)) return undefined;
  const value = BigInt(text);
  if (value < range.min || value > range.max) return undefined;
  return range.asString ? value.toString() : Number(value);
}

function floatToJson(max: number, text: string): JsonValue | undefined {
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") return text;
  if (!FLOAT_RE.test(text)) return undefined;
  const value = Number(text);
  return Math.abs(value) <= max ? value : undefined;
}

function enumToJson(desc: DescEnum, text: string): JsonValue | undefined {
  if (desc.values.some((v) => v.name === text)) return text;
  const number = intToJson(INT32, text);
  return typeof number === "number" ? number : undefined;
}

function leafTypeName(leaf: Leaf): string {
  if (leaf.kind === "scalar") return ScalarType[leaf.scalar].toLowerCase();
  return leaf.desc.typeName;
}

function convertText(leaf: Leaf, text: string, where: string): JsonValue {
  const json = textToJson(leaf, text);
  if (json === undefined) throw badRequest(`invalid value ${quote(text)} for ${where}: expected ${leafTypeName(leaf)}`);
  return json;
}

// ---------------------------------------------------------------------------
// Rule compilation
// ---------------------------------------------------------------------------

type BodyMapping = { readonly kind: "none" } | { readonly kind: "all" } | { readonly kind: "field"; readonly field: DescField };

interface PathBinding {
  readonly fieldPath: string;
  readonly fields: readonly DescField[];
  readonly leaf: Leaf;
}

interface Route {
  /** Upper-case HTTP method, or "*" for a custom rule that accepts any. */
  readonly httpMethod: string;
  readonly template: PathTemplate;
  readonly handler: UniversalHandler;
  readonly bindings: readonly PathBinding[];
  readonly body: BodyMapping;
  readonly responseField: DescField | undefined;
}

interface RouteTable {
  readonly handlerCount: number;
  readonly routes: readonly Route[];
  /** Resolves google.rpc (and our own) error detail types for decoding. */
  readonly registry: Registry;
}

function compileRoutes(handlers: readonly UniversalHandler[]): RouteTable {
  const routes: Route[] = [];
  const files = new Set<DescFile>([file_google_rpc_error_details]);
  for (const handler of handlers) {
    collectFiles(handler.service.file, files);
    if (!hasOption(handler.method, http)) continue;
    const rule = getOption(handler.method, http);
    for (const binding of [rule, ...rule.additionalBindings]) routes.push(compileRule(handler, binding));
  }
  return { handlerCount: handlers.length, routes, registry: createRegistry(...files) };
}

function collectFiles(file: DescFile, into: Set<DescFile>): void {
  if (into.has(file)) return;
  into.add(file);
  for (const dep of file.dependencies) collectFiles(dep, into);
}

/** Turns one HttpRule into a route; a rule the protos get wrong fails start-up. */
function compileRule(handler: UniversalHandler, rule: HttpRule): Route {
  const method = handler.method;
  const fail = (why: string): never => {
    throw new Error(`google.api.http rule of ${method.parent.typeName}.${method.name}: ${why}`);
  };
  if (method.methodKind !== "unary") fail("only unary methods can be transcoded");
  const { httpMethod, path } = patternOf(rule) ?? fail("no HTTP method and path");
  const template = parseOrFail(path, fail);
  const bindings = template.variables.map((v) => bindVariable(method.input, v.fieldPath, fail));
  return {
    httpMethod,
    template,
    handler,
    bindings,
    body: bodyMapping(method.input, rule.body, fail),
    responseField:
      rule.responseBody === ""
        ? undefined
        : (findField(method.output, rule.responseBody) ?? fail(`response_body "${rule.responseBody}" is not a field of ${method.output.typeName}`)),
  };
}

function parseOrFail(path: string, fail: (why: string) => never): PathTemplate {
  try {
    return parsePathTemplate(path);
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e));
  }
}

function patternOf(rule: HttpRule): { httpMethod: string; path: string } | undefined {
  const { pattern } = rule;
  switch (pattern.case) {
    case undefined:
      return undefined;
    case "custom":
      return { httpMethod: pattern.value.kind.toUpperCase(), path: pattern.value.path };
    default:
      return { httpMethod: pattern.case.toUpperCase(), path: pattern.value };
  }
}

function bindVariable(input: DescMessage, fieldPath: string, fail: (why: string) => never): PathBinding {
  const fields = resolveFieldPath(input, fieldPath);
  if (typeof fields === "string") return fail(`path variable "${fieldPath}": ${fields}`);
  const field = fields[fields.length - 1];
  const leaf = leafOf(field);
  if (field.fieldKind === "list" || leaf === undefined || !isTextual(leaf)) {
    return fail(`path variable "${fieldPath}" must be a singular primitive field`);
  }
  return { fieldPath, fields, leaf };
}

function bodyMapping(input: DescMessage, body: string, fail: (why: string) => never): BodyMapping {
  if (body === "") return { kind: "none" };
  if (body === "*") return { kind: "all" };
  const field = findField(input, body) ?? fail(`body "${body}" is not a field of ${input.typeName}`);
  return { kind: "field", field };
}

function findRoute(table: RouteTable, httpMethod: string, path: string): { route: Route; vars: Record<string, string> } | undefined {
  let best: { route: Route; vars: Record<string, string> } | undefined;
  for (const route of table.routes) {
    if (route.httpMethod !== httpMethod && route.httpMethod !== "*") continue;
    const vars = matchPath(route.template, path);
    if (vars === undefined) continue;
    if (best === undefined || isBetter(route, best.route)) best = { route, vars };
  }
  return best;
}

/** Strictly better only, so that among equals the first registered rule wins. */
function isBetter(candidate: Route, current: Route): boolean {
  const bySpecificity = compareSpecificity(candidate.template, current.template);
  if (bySpecificity !== 0) return bySpecificity > 0;
  return candidate.httpMethod !== "*" && current.httpMethod === "*";
}

// ---------------------------------------------------------------------------
// Building the request message JSON
// ---------------------------------------------------------------------------

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The key under which a field is present (clients may use either name). */
function presentKey(obj: JsonObject, field: DescField): string | undefined {
  for (const key of [field.jsonName, field.name]) {
    if (Object.hasOwn(obj, key) && obj[key] !== null) return key;
  }
  return undefined;
}

/**
 * Sets a (nested) field in the request JSON under its JSON name. A value
 * already present there must be the same value; anything else is a conflict
 * between the places the client set it (path, body, query).
 */
function setField(root: JsonObject, fields: readonly DescField[], value: JsonValue, where: string): void {
  let obj = root;
  for (const field of fields.slice(0, -1)) {
    const key = presentKey(obj, field);
    if (key === undefined) {
      delete obj[field.name];
      const child: JsonObject = {};
      obj[field.jsonName] = child;
      obj = child;
      continue;
    }
    const child = obj[key];
    if (!isObject(child)) throw badRequest(`field "${field.name}" must be a JSON object to hold ${where}`);
    obj = child;
  }
  const leaf = fields[fields.length - 1];
  const key = presentKey(obj, leaf);
  if (key === undefined) {
    delete obj[leaf.name];
    obj[leaf.jsonName] = value;
    return;
  }
  if (!sameJson(obj[key], value)) {
    throw badRequest(`${where} conflicts with the value of "${leaf.name}" given elsewhere in the request`);
  }
}

// Compares loosely on purpose: "5" in a path and 5 in a body are one int64.
function sameJson(a: JsonValue, b: JsonValue): boolean {
  return JSON.stringify(a) === JSON.stringify(b) || (typeof a !== "object" && typeof b !== "object" && String(a) === String(b));
}

function buildRequestJson(route: Route, vars: Record<string, string>, body: JsonValue | undefined, query: URLSearchParams): JsonObject {
  const root = requestRoot(route.body, body);
  for (const binding of route.bindings) {
    const where = `path variable "${binding.fieldPath}"`;
    const value = convertText(binding.leaf, vars[binding.fieldPath] ?? "", where);
    // Path fields inside the body field live in the body value itself.
    setField(root, binding.fields, value, where);
  }
  applyQuery(route, root, query);
  return root;
}

function requestRoot(mapping: BodyMapping, body: JsonValue | undefined): JsonObject {
  switch (mapping.kind) {
    case "none":
      return {};
    case "all":
      if (body === undefined) return {};
      if (!isObject(body)) throw badRequest("request body must be a JSON object");
      return body;
    case "field":
      return body === undefined ? {} : { [mapping.field.jsonName]: body };
  }
}

function applyQuery(route: Route, root: JsonObject, query: URLSearchParams): void {
  for (const name of new Set(query.keys())) {
    const where = `query parameter ${quote(name)}`;
    if (route.body.kind === "all") throw badRequest(`unexpected ${where}: this endpoint takes all fields in the body`);
    const fields = resolveFieldPath(route.handler.method.input, name);
    if (typeof fields === "string") throw badRequest(`unknown ${where}: ${fields}`);
    checkNotBound(route, fields, where);
    setField(root, fields, queryValue(name, fields[fields.length - 1], query.getAll(name)), where);
  }
}

function checkNotBound(route: Route, fields: readonly DescField[], where: string): void {
  const pathBound = route.bindings.some((b) => b.fields.length === fields.length && b.fields.every((f, i) => f === fields[i]));
  if (pathBound) throw badRequest(`unexpected ${where}: the field is set by the URL path`);
  if (route.body.kind === "field" && fields[0] === route.body.field) {
    throw badRequest(`unexpected ${where}: the field is set by the request body`);
  }
}

function queryValue(name: string, field: DescField, texts: string[]): JsonValue {
  const where = `query parameter ${quote(name)}`;
  const leaf = leafOf(field);
  if (leaf === undefined) throw badRequest(`unexpected ${where}: map fields cannot be set in the query`);
  if (!isTextual(leaf)) throw badRequest(`unexpected ${where}: it is a message; set its fields as ${name}.<field>`);
  if (field.fieldKind === "list") return texts.map((t) => convertText(leaf, t, where));
  if (texts.length > 1) throw badRequest(`${where} is given ${texts.length} times but is not repeated`);
  return convertText(leaf, texts[0] ?? "", where);
}

// ---------------------------------------------------------------------------
// Reading the REST request
// ---------------------------------------------------------------------------

async function readBody(req: Request, maxBytes: number): Promise<Buffer> {
  const tooLarge = () => new RestError(413, Code.ResourceExhausted, `request body exceeds ${maxBytes} bytes`);
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) throw tooLarge();
  // A body parser earlier in the chain would leave nothing to read: that is
  // a wiring bug, not an empty request.
  if (req.readableEnded) throw new Error("REST transcoder: request body already consumed by another middleware");
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else {
        cleanup();
        reject(tooLarge());
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(badRequest(`could not read the request body: ${err.message}`));
    };
    // A client that goes away mid-body must not leave the promise pending.
    const onClose = () => onError(new Error("connection closed"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/** Parses the body per the rule; undefined means "no body given". */
function parseBody(route: Route, bytes: Buffer, contentType: string | undefined): JsonValue | undefined {
  if (bytes.length === 0) return undefined;
  if (route.body.kind === "none") throw badRequest("this endpoint takes no request body");
  checkContentType(contentType);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest("invalid JSON body: not valid UTF-8");
  }
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch (e) {
    throw badRequest(`invalid JSON body: ${e instanceof Error ? e.message : String(e)}`);
  }
  checkJsonShape(json);
  return json;
}

// Protobuf's own recursion limit; deeper JSON cannot be a message and would overflow the stack when re-serialized.
const MAX_JSON_DEPTH = 100;

/**
 * The body is re-serialized for the Connect handler, and JSON.stringify turns a number JSON.parse read as Infinity
 * (1e400) into null, which means "unset": refuse it here rather than drop the value. Iterative, so depth is
 * checked without recursing.
 */
function checkJsonShape(root: JsonValue): void {
  const stack: [JsonValue, number][] = [[root, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [value, depth] = item;
    if (typeof value === "number" && !Number.isFinite(value)) throw badRequest("invalid JSON body: a number is out of range");
    if (typeof value !== "object" || value === null) continue;
    if (depth > MAX_JSON_DEPTH) throw badRequest(`invalid JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`);
    for (const child of Array.isArray(value) ? value : Object.values(value)) stack.push([child, depth + 1]);
  }
}

function checkContentType(contentType: string | undefined): void {
  const [mediaType = "", ...params] = (contentType ?? "").split(";").map((p) => p.trim().toLowerCase());
  const charset = params
    .find((p) => p.startsWith("charset="))
    ?.slice(8)
    .replace(/"/g, "");
  if (mediaType !== "application/json" || (charset !== undefined && charset !== "utf-8" && charset !== "utf8")) {
    throw badRequest(`unsupported content type ${quote(contentType ?? "")}: send application/json`);
  }
}

function splitUrl(url: string): { path: string; query: URLSearchParams } {
  const q = url.indexOf("?");
  return q === -1 ? { path: url, query: new URLSearchParams() } : { path: url.slice(0, q), query: new URLSearchParams(url.slice(q + 1)) };
}

// ---------------------------------------------------------------------------
// Calling the Connect handler
// ---------------------------------------------------------------------------

function toUniversalRequest(req: Request, res: Response, route: Route, message: JsonObject): UniversalServerRequest {
  const header = new Headers({ "content-type": "application/json", "connect-protocol-version": "1" });
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (!FORWARDED_REQUEST_HEADERS.has(name) && !name.startsWith(FORWARDED_REQUEST_HEADER_PREFIX)) continue;
    for (const v of Array.isArray(value) ? value : [value]) header.append(name, v);
  }
  const abort = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) abort.abort();
  });
  // Serialized rather than handed over pre-parsed: Connect then parses it
  // with the router's own JSON options and read limit, like any client call.
  const bytes = new TextEncoder().encode(JSON.stringify(message));
  return {
    httpVersion: req.httpVersion,
    method: "POST",
    url: internalUrl(req, route.handler.requestPath),
    header,
    body: oneChunk(bytes),
    signal: abort.signal,
  };
}

async function* oneChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** Connect parses the URL, so it must be absolute; only the path matters. */
function internalUrl(req: Request, requestPath: string): string {
  const url = new URL("http://localhost");
  const host = req.headers.host ?? req.headers[":authority"];
  if (typeof host === "string") url.host = host; // the setter ignores garbage
  url.pathname = requestPath;
  return url.toString();
}

async function collect(body: AsyncIterable<Uint8Array> | undefined): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  if (body !== undefined) for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

// ---------------------------------------------------------------------------
// Writing the REST response
// ---------------------------------------------------------------------------

function send(res: Response, status: number, body: string | Buffer, from?: Headers): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  // Answers to authenticated calls must not be stored by shared caches, and error bodies echo client input.
  res.setHeader("cache-control", "no-store");
  res.setHeader("x-content-type-options", "nosniff");
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const value = from?.get(name);
    if (value != null) res.setHeader(name, value);
  }
  res.end(body);
}

/** grpc-gateway's error body: numeric gRPC code, message, Any-JSON details. */
function sendError(res: Response, status: number, code: Code, message: string, details: JsonValue[], from?: Headers): void {
  send(res, status, JSON.stringify({ code, message, details }), from);
}

async function sendUniversalResponse(res: Response, route: Route, registry: Registry, uRes: UniversalServerResponse): Promise<void> {
  const bytes = await collect(uRes.body);
  if (uRes.status === 200) {
    send(res, 200, route.responseField ? JSON.stringify(responseField(route.responseField, bytes)) : bytes, uRes.header);
    return;
  }
  const error = parseConnectError(bytes, uRes.status);
  const details = error.details.map((d) => detailToJson(d, registry));
  sendError(res, codeToHttpStatus(error.code), error.code, error.message, details, uRes.header);
}

/** The `response_body` field's JSON, or its default when Connect omitted it. */
function responseField(field: DescField, bytes: Buffer): JsonValue {
  const json = JSON.parse(bytes.toString("utf8")) as JsonValue;
  // The router's JSON options may use either field name.
  const present = isObject(json) ? (json[field.jsonName] ?? json[field.name]) : undefined;
  if (present !== undefined) return present;
  const defaults = toJson(field.parent, create(field.parent), { alwaysEmitImplicit: true });
  const fallback = isObject(defaults) ? defaults[field.jsonName] : undefined;
  return fallback ?? (field.fieldKind === "message" ? {} : null);
}

interface ConnectDetail {
  readonly type: string;
  readonly value: string;
}

function parseConnectError(bytes: Buffer, status: number): { code: Code; message: string; details: ConnectDetail[] } {
  let json: JsonValue | undefined;
  try {
    json = JSON.parse(bytes.toString("utf8")) as JsonValue;
  } catch {
    json = undefined;
  }
  const code = isObject(json) && typeof json.code === "string" ? codeFromString(json.code) : undefined;
  if (!isObject(json) || code === undefined) {
    // Not a Connect error body (e.g. 415 when the router has the Connect
    // protocol disabled): a server misconfiguration, not a client mistake.
    return { code: Code.Internal, message: `unexpected HTTP ${status} from the Connect handler`, details: [] };
  }
  const details = Array.isArray(json.details) ? json.details.filter(isDetail) : [];
  return { code, message: typeof json.message === "string" ? json.message : "", details };
}

function isDetail(value: JsonValue): value is JsonObject & ConnectDetail {
  return isObject(value) && typeof value.type === "string" && typeof value.value === "string";
}

/** A detail as google.protobuf.Any JSON; undecodable ones keep their bytes. */
function detailToJson(detail: ConnectDetail, registry: Registry): JsonValue {
  const typeUrl = `type.googleapis.com/${detail.type}`;
  try {
    const value = base64Decode(detail.value);
    try {
      return toJson(AnySchema, create(AnySchema, { typeUrl, value }), { registry });
    } catch {
      // Connect sends unpadded base64; grpc-gateway clients expect padding.
      return { "@type": typeUrl, value: base64Encode(value) };
    }
  } catch {
    return { "@type": typeUrl, value: detail.value };
  }
}

// ---------------------------------------------------------------------------
// The middleware
// ---------------------------------------------------------------------------

/**
 * A handler serving the google.api.http mappings of every RPC registered on
 * `router`, through the router's own handlers. `onError` hears of what went
 * wrong outside the handlers (they map their own errors); the client then
 * gets a 500 with the same error body, or a reset when the response had
 * already started.
 */
export function createRestTranscoder(router: ConnectRouter, options?: { maxBodyBytes?: number; onError?: (err: unknown, req: Request) => void }): RestHandler {
  const maxBodyBytes = options?.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let table = compileRoutes(router.handlers);
  return (req, res) => {
    // Services registered after the transcoder was created are picked up.
    if (table.handlerCount !== router.handlers.length) table = compileRoutes(router.handlers);
    const { path, query } = splitUrl(req.url ?? "/");
    const match = findRoute(table, req.method ?? "GET", path);
    if (match === undefined) return false;
    serve(table, match.route, match.vars, query, req, res, maxBodyBytes).catch((err: unknown) => {
      options?.onError?.(err, req);
      if (!res.headersSent) sendError(res, 500, Code.Internal, "internal error", []);
      else res.destroy();
    });
    return true;
  };
}

async function serve(
  table: RouteTable,
  route: Route,
  vars: Record<string, string>,
  query: URLSearchParams,
  req: Request,
  res: Response,
  maxBodyBytes: number,
): Promise<void> {
  let message: JsonObject;
  try {
    const body = parseBody(route, await readBody(req, maxBodyBytes), req.headers["content-type"]);
    message = buildRequestJson(route, vars, body, query);
  } catch (e) {
    if (!(e instanceof RestError)) throw e;
    // Unread body bytes may follow an oversized HTTP/1.1 request: do not reuse the connection. (HTTP/2 forbids the
    // header; the stream's unread data is simply discarded.)
    if (e.status === 413 && req.httpVersionMajor === 1) res.setHeader("connection", "close");
    sendError(res, e.status, e.code, e.message, []);
    return;
  }
  const uRes = await route.handler(toUniversalRequest(req, res, route, message));
  await sendUniversalResponse(res, route, table.registry, uRes);
}
