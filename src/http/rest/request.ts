// The REST request read into the request message's JSON: the body (with limits), path variables and query
// parameters, strict about conflicts (see the decisions in ../transcoder.ts).

import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ILL_FORMED_MESSAGE } from "../../domain/well-formed.js";
import { readBody } from "../body.js";
import { badRequest, quote, RestError } from "./errors.js";
import { convertText, isObject, isTextual, leafOf, resolveFieldPath } from "./fields.js";
import type { BodyMapping, Route } from "./routes.js";

/** The request as Node gives it, over HTTP/1.1 or HTTP/2. */
export type Request = IncomingMessage | Http2ServerRequest;

// ---------------------------------------------------------------------------
// Building the request message JSON
// ---------------------------------------------------------------------------

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

export function buildRequestJson(route: Route, vars: Record<string, string>, body: JsonValue | undefined, query: URLSearchParams): JsonObject {
  const root = requestRoot(route.body, body);
  for (const binding of route.bindings) {
    const where = `path variable "${binding.fieldPath}"`;
    const value = convertText(binding.leaf, vars[binding.fieldPath] ?? "", where);
    // Path fields inside the body field live in the body value itself.
    setField(root, binding.fields, value, where);
  }
  applyQuery(route, root, query);
  impliedUpdateMask(route.handler.method.input, root);
  return root;
}

/**
 * AIP-134 over REST: a request that has an update_mask and leaves it out changes the fields its JSON names — also to a
 * zero value, false or an empty list, which the Connect and gRPC encodings cannot tell from absent — so the mask is
 * made here from the keys of the one resource object in the body (e.g. "settings"). Keys the resource does not have
 * are left to the strict JSON parser.
 */
function impliedUpdateMask(input: DescMessage, root: JsonObject): void {
  const mask = input.fields.find((f) => f.name === "update_mask" && f.message?.typeName === "google.protobuf.FieldMask");
  if (!mask || presentKey(root, mask) !== undefined) return;
  const resources = input.fields.filter((f) => f !== mask && f.fieldKind === "message" && presentKey(root, f) !== undefined);
  const resource = resources.length === 1 ? resources[0] : undefined;
  const value = resource && root[presentKey(root, resource) as string];
  if (!resource?.message || !isObject(value)) return;
  const paths: string[] = [];
  for (const key of Object.keys(value)) {
    const field = resource.message.fields.find((f) => f.jsonName === key || f.name === key);
    if (!field) return;
    paths.push(field.jsonName);
  }
  // An empty object names nothing: no mask, and nothing populated changes.
  if (paths.length) root[mask.jsonName] = paths.join(",");
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

export function readRestBody(req: Request, maxBytes: number): Promise<Buffer> {
  return readBody(req, {
    maxBytes,
    tooLarge: () => new RestError(413, Code.ResourceExhausted, `request body exceeds ${maxBytes} bytes`),
    unreadable: (err) => badRequest(`could not read the request body: ${err.message}`),
  });
}

/** Parses the body per the rule; undefined means "no body given". */
export function parseBody(route: Route, bytes: Buffer, contentType: string | undefined): JsonValue | undefined {
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
    if (typeof value === "string" && !value.isWellFormed()) throw badRequest(`invalid JSON body: a string ${ILL_FORMED_MESSAGE}`);
    if (typeof value !== "object" || value === null) continue;
    if (depth > MAX_JSON_DEPTH) throw badRequest(`invalid JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(value)) {
      for (const child of value) stack.push([child, depth + 1]);
      continue;
    }
    for (const [key, child] of Object.entries(value)) {
      if (!key.isWellFormed()) throw badRequest(`invalid JSON body: a member name ${ILL_FORMED_MESSAGE}`);
      stack.push([child, depth + 1]);
    }
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

export function splitUrl(url: string): { path: string; query: URLSearchParams } {
  const q = url.indexOf("?");
  return q === -1 ? { path: url, query: new URLSearchParams() } : { path: url.slice(0, q), query: new URLSearchParams(url.slice(q + 1)) };
}
