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
// (h2c clients and proxies that speak HTTP/2 upstream reach REST too), like
// the Connect router: both stay off Express, measured faster on these hot
// paths (and Express cannot take HTTP/2 requests).
//
// The pieces: rest/path-template.ts (templates), rest/routes.ts (the rule
// table), rest/fields.ts (text to field JSON), rest/request.ts (body,
// variables and query into the request JSON), rest/errors.ts (error
// bodies); this file calls the handler and writes the answer.

import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import { create, type DescField, type JsonObject, type JsonValue, type Registry, toJson } from "@bufbuild/protobuf";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { detailToJson, parseConnectError, RestError } from "./rest/errors.js";
import { isObject } from "./rest/fields.js";
import { buildRequestJson, parseBody, type Request, readRestBody, splitUrl } from "./rest/request.js";
import { compileRoutes, findRoute, type Route, type RouteTable } from "./rest/routes.js";

export { matchPath, parsePathTemplate } from "./rest/path-template.js";

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

type Response = ServerResponse | Http2ServerResponse;

/** Serves the request and returns true when a REST rule matches it; returns false, touching nothing, when none does. */
export type RestHandler = (req: Request, res: Response) => boolean;

// Request headers an implementation or interceptor may rely on. Everything
// else is HTTP plumbing that means nothing on the internal Connect call.
const FORWARDED_REQUEST_HEADERS = new Set(["authorization", "x-request-id", "user-agent", "accept-language", "x-svc-peer", "idempotency-key"]);
const FORWARDED_REQUEST_HEADER_PREFIX = "x-forwarded-";
// Response headers that carry meaning for REST clients (the auth challenge
// of a 401, the correlation id, when to retry a 503 or 429). Connect puts error metadata into headers.
const FORWARDED_RESPONSE_HEADERS = ["www-authenticate", "x-request-id", "retry-after", "idempotent-replayed", "svc-outcome"];
/**
 * Errors whose HTTP status is not their code's: the same Idempotency-Key with another request is 422 Unprocessable
 * Content (draft-ietf-httpapi-idempotency-key-header), which no gRPC code maps to.
 */
const REASON_STATUS: Record<string, number> = { "Errors.Idempotency.KeyReused": 422 };

function statusOf(code: Code, details: JsonValue[]): number {
  for (const d of details) {
    const reason = isObject(d) ? d.reason : undefined;
    if (typeof reason === "string" && REASON_STATUS[reason] !== undefined) return REASON_STATUS[reason];
  }
  return codeToHttpStatus(code);
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
  sendError(res, statusOf(error.code, details), error.code, error.message, details, uRes.header);
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
    const body = parseBody(route, await readRestBody(req, maxBodyBytes), req.headers["content-type"]);
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
