// The spans svc makes itself, on top of the instrumentations (src/tracing/sdk.ts): the SERVER span of every HTTP/2
// request (the http instrumentation patches http, not http2, so gRPC and Connect over h2c would go untraced), names
// from bounded sets for every request, the rpc.* attributes and status of Connect, gRPC and gRPC-Web calls, and the
// trace ids the logs carry. Loaded only when tracing is on.
import type http from "node:http";
import type http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor, type StreamResponse, type UnaryResponse } from "@connectrpc/connect";
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { classify, restCollections } from "../http/metrics.js";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;
type NodeHandler = (req: NodeRequest, res: NodeResponse) => void;

/** Probes and scrapes: frequent, and nothing to follow. The http instrumentation is told to skip them too. */
export const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

const tracer = trace.getTracer("svc");

/** The request's server span, for the interceptor: `direct` when the path names the RPC (not a REST call transcoded). */
interface ServerRequest {
  span: Span;
  direct: boolean;
}
const SERVER_REQUEST = createContextKey("svc.server-request");

const pathOf = (req: NodeRequest) => (req.url ?? "/").split("?", 1)[0] ?? "/";

/**
 * Query strings carry secrets here (authorization codes, SAML messages and signatures, e-mail verification codes):
 * only the parameter names reach a span.
 */
export function redactQuery(url: string | undefined): string | undefined {
  const at = url?.indexOf("?") ?? -1;
  if (url === undefined || at < 0) return undefined;
  const names = [...new URLSearchParams(url.slice(at + 1)).keys()];
  return names.map((n) => `${encodeURIComponent(n)}=REDACTED`).join("&");
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"]);
/** The request method, or "_OTHER" (as the http instrumentation does): a client's made-up methods are not names. */
const methodOf = (req: NodeRequest) => (METHODS.has(req.method ?? "") ? (req.method as string) : "_OTHER");

/** A span name from bounded sets: the RPC for Connect, gRPC and gRPC-Web; the method and a route template otherwise. */
function spanName(req: NodeRequest, protocol: string, route: string): string {
  const direct = protocol === "connect" || protocol === "grpc" || protocol === "grpc-web";
  if (direct) return route === "unknown" ? `${methodOf(req)} (unknown RPC)` : route.slice(1);
  if (protocol === "scim") return `${methodOf(req)} /scim/v2/{orgId}/${route}`;
  return `${methodOf(req)} ${route}`;
}

/** The SERVER span of an HTTP/2 request, child of the caller's W3C traceparent, and the context it runs in. */
function startHttp2Span(req: http2.Http2ServerRequest, name: string, protocol: string): { span: Span; ctx: Context } {
  const query = redactQuery(req.url);
  const attributes: Attributes = {
    "http.request.method": methodOf(req),
    "url.scheme": "http",
    "url.path": pathOf(req),
    "network.protocol.version": "2",
    "network.peer.address": req.socket?.remoteAddress,
    "network.peer.port": req.socket?.remotePort,
    "server.address": req.authority?.split(":")[0],
    "user_agent.original": req.headers["user-agent"],
    "svc.protocol": protocol,
  };
  if (query !== undefined) attributes["url.query"] = query;
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}

/** The outermost request handler (see Tracing.serverHandler). */
export function serverHandler(services: readonly DescService[]): (next: NodeHandler) => NodeHandler {
  const rpcs = new Set(services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  const rest = restCollections(services);
  return (next) => (req, res) => {
    if (UNTRACED_PATHS.has(pathOf(req))) return next(req, res);
    const { protocol, route } = classify(req, rpcs, rest);
    const direct = protocol === "connect" || protocol === "grpc" || protocol === "grpc-web";
    const name = spanName(req, protocol, route);
    if (req.httpVersionMajor !== 2) {
      // The http instrumentation started this request's span and made it active.
      const span = trace.getActiveSpan();
      if (!span) return next(req, res);
      span.updateName(name);
      span.setAttribute("svc.protocol", protocol);
      const query = redactQuery(req.url);
      if (query !== undefined) span.setAttribute("url.query", query);
      return context.with(context.active().setValue(SERVER_REQUEST, { span, direct } satisfies ServerRequest), () => next(req, res));
    }
    const started = startHttp2Span(req as http2.Http2ServerRequest, name, protocol);
    const span = started.span;
    const ctx = started.ctx.setValue(SERVER_REQUEST, { span, direct } satisfies ServerRequest);
    // Listeners added from here on (the request log line) run in the span's context.
    context.bind(ctx, req);
    context.bind(ctx, res);
    res.once("close", () => {
      // A stream the client reset before any answer has no status to report.
      if (res.headersSent) span.setAttribute("http.response.status_code", res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(ctx, () => next(req, res));
  };
}

/** Connect's code names, as rpc.connect_rpc.error_code wants them (not_found, invalid_argument...). */
const connectCode = (code: Code) => (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();

function markFailed(span: Span, grpc: boolean, err: unknown): void {
  const e = ConnectError.from(err);
  if (grpc) span.setAttribute("rpc.grpc.status_code", e.code);
  else span.setAttribute("rpc.connect_rpc.error_code", connectCode(e.code));
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.rawMessage });
}

/** A server stream's messages, with a failure while streaming recorded on the span. */
async function* watched<T>(messages: AsyncIterable<T>, span: Span, grpc: boolean): AsyncIterable<T> {
  try {
    yield* messages;
    if (grpc) span.setAttribute("rpc.grpc.status_code", 0);
  } catch (err) {
    markFailed(span, grpc, err);
    throw err;
  }
}

/**
 * Connect, gRPC and gRPC-Web calls addressed by their path already have their SERVER span (the http instrumentation's
 * on HTTP/1.1, ours on HTTP/2): it takes the RPC's name and rpc.* attributes. A REST call transcoded into a Connect
 * call gets a child span for the RPC under its HTTP span.
 */
export function rpcInterceptor(): Interceptor {
  return (next) => async (req) => {
    const server = context.active().getValue(SERVER_REQUEST) as ServerRequest | undefined;
    const name = `${req.service.typeName}/${req.method.name}`;
    const grpc = (req.header.get("content-type") ?? "").startsWith("application/grpc");
    const attributes = { "rpc.system": grpc ? "grpc" : "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name };
    const own = !server?.direct;
    const span = own ? tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes }) : (server?.span as Span);
    if (!own) span.updateName(name).setAttributes(attributes);
    try {
      const res: UnaryResponse | StreamResponse = own ? await context.with(trace.setSpan(context.active(), span), () => next(req)) : await next(req);
      if (res.stream) return { ...res, message: watched(res.message, span, grpc) };
      if (grpc) span.setAttribute("rpc.grpc.status_code", 0);
      return res;
    } catch (err) {
      markFailed(span, grpc, err);
      throw err;
    } finally {
      if (own) span.end();
    }
  };
}

/** The trace id of the active span (the request's), when valid. */
export function activeTraceId(): string | undefined {
  const c = trace.getActiveSpan()?.spanContext();
  return c && isSpanContextValid(c) ? c.traceId : undefined;
}

export function activeLogFields(): Record<string, string> {
  const c = trace.getActiveSpan()?.spanContext();
  return c && isSpanContextValid(c) ? { trace_id: c.traceId, span_id: c.spanId } : {};
}
