// Starts OpenTelemetry tracing, configured by the standard OTEL_* variables only (exporter, protocol, endpoint,
// headers, sampler, resource), before any module of the application is loaded: src/main.ts imports this file, and
// then the application, only when src/tracing/env.ts says the variables ask for traces.
//
// What patches what, under this ESM project on Node 20 (checked by test/integration/tracing.test.ts):
// - http: Node's built-in module objects are shared by require and import, so the http instrumentation's require
//   hook patches what src/server.ts imports.
// - pg: imported from ESM (src/store, @prisma/adapter-pg), its ESM entry loads lib/index.js, whose own require of
//   pg/lib/client.js the pg instrumentation hooks: Client.prototype.query is patched without a loader.
// - express: imported from ESM, express/index.js is evaluated without any require for the instrumentation to see;
//   only the ESM loader hook of import-in-the-middle (@opentelemetry/instrumentation/hook.mjs) reaches it. It is
//   registered for express alone: every other module loads as before.
// - fetch: Node's undici publishes its requests on diagnostics_channel, which the undici instrumentation subscribes to;
//   nothing is patched.
// The embedded database (PGlite) runs inside the process and speaks no pg protocol: it gets no database spans.
import { register } from "node:module";
import { ExpressInstrumentation, ExpressLayerType } from "@opentelemetry/instrumentation-express";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { api, core, NodeSDK, resources } from "@opentelemetry/sdk-node";
import { register as registerSyncHooks, supportsSyncHooks } from "import-in-the-middle/register-hooks.mjs";
import { API_SERVICES } from "../api/services.js";
import { traceExporters } from "./env.js";
import { activeLogFields, activeTraceId, redactQuery, rpcInterceptor, serverHandler, UNTRACED_PATHS } from "./spans.js";
import type { Tracing } from "./types.js";

type Env = Record<string, string | undefined>;

/** The endpoint spans go to, as the OTLP exporters read it, without credentials or query. */
function endpointOf(env: Env, protocol: string): string {
  const given = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const fallback = protocol === "grpc" ? "http://localhost:4317" : "http://localhost:4318";
  try {
    const u = new URL(given || fallback);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

function summarize(env: Env): Record<string, string> {
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || "http/protobuf";
  const exporters = traceExporters(env);
  const summary: Record<string, string> = { exporters: exporters.join(","), serviceName: env.OTEL_SERVICE_NAME?.trim() || "svc" };
  if (exporters.includes("otlp")) Object.assign(summary, { protocol, endpoint: endpointOf(env, protocol) });
  return summary;
}

const DIAG_LEVELS: Record<string, api.DiagLogLevel> = {
  error: api.DiagLogLevel.ERROR,
  warn: api.DiagLogLevel.WARN,
  info: api.DiagLogLevel.INFO,
  debug: api.DiagLogLevel.DEBUG,
  verbose: api.DiagLogLevel.VERBOSE,
  all: api.DiagLogLevel.ALL,
  none: api.DiagLogLevel.NONE,
};

/**
 * A diagnostic's argument as text: errors by their message (an exporter's error may carry a whole HTTP answer), also
 * when the SDK's error handler already turned one into JSON.
 */
function text(a: unknown): string {
  if (a instanceof Error) return a.message;
  if (typeof a === "string") {
    if (!a.startsWith("{")) return a;
    try {
      const parsed = JSON.parse(a) as { message?: unknown };
      return typeof parsed.message === "string" ? parsed.message : a;
    } catch {
      return a;
    }
  }
  try {
    return JSON.stringify(a) ?? String(a);
  } catch {
    return String(a);
  }
}

/**
 * An outgoing call's span keeps the query's parameter names only, as incoming requests' do: a metadata URL or an
 * identity provider's endpoint may carry a token in its query. The instrumentations set `url.full` (and undici
 * `url.query`) when the span starts; this runs right after, before anything is exported.
 */
function redactOutgoing(span: api.Span): void {
  const attributes = (span as unknown as { attributes?: Record<string, unknown> }).attributes ?? {};
  const full = attributes["url.full"];
  if (typeof full !== "string") return;
  const query = redactQuery(full);
  if (query === undefined) return;
  span.setAttribute("url.full", `${full.slice(0, full.indexOf("?"))}?${query}`);
  if (attributes["url.query"] !== undefined) span.setAttribute("url.query", `?${query}`);
}

function instrumentations() {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? "/").split("?", 1)[0] ?? "/"),
      // Outgoing calls (an SP's metadata by URL) are traced inside a request only, not on their own.
      requireParentforOutgoingSpans: true,
      requestHook: (span, request) => {
        // An outgoing call's request (a ClientRequest: an OutgoingMessage, with getHeader), not an incoming one.
        if ("getHeader" in request) redactOutgoing(span);
      },
    }),
    // fetch (Node's undici): external OpenID providers' discovery, JWKS and token endpoints, inside a request only.
    new UndiciInstrumentation({ requireParentforSpans: true, requestHook: (span) => redactOutgoing(span) }),
    // Queries made while serving something, without their values: none for the LISTEN connection or for taking a
    // connection from the pool.
    new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false, ignoreConnectSpans: true }),
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
  ];
}

export async function startTracing(env: Env = process.env): Promise<Tracing> {
  // Express is an ES module import: instrumented through import-in-the-middle's loader hooks, in-thread
  // (module.registerHooks) where this Node runs them — Node 26 deprecates module.register (DEP0205) — else on the
  // loader thread.
  if (supportsSyncHooks()) registerSyncHooks({ include: ["express"] });
  else register("@opentelemetry/instrumentation/hook.mjs", import.meta.url, { data: { include: ["express"] } });
  const sdk = new NodeSDK({
    // "svc" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name it (the environment's resource is merged over this one).
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ "service.name": "svc" })),
    instrumentations: instrumentations(),
    // Traces only: metrics are Prometheus' (/metrics) and logs go to stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  let stopped: Promise<void> | undefined;
  return {
    summary: summarize(env),
    serverHandler: serverHandler(API_SERVICES),
    interceptor: rpcInterceptor(),
    traceId: activeTraceId,
    logFields: activeLogFields,
    useLogger(log) {
      const level = DIAG_LEVELS[env.OTEL_LOG_LEVEL?.trim().toLowerCase() ?? ""] ?? api.DiagLogLevel.WARN;
      const child = log.child({ component: "opentelemetry" });
      // Outside any span: the batch processor's timer may have started inside a request, whose trace this is not.
      const line =
        (write: (msg: string) => void) =>
        (message: string, ...args: unknown[]) =>
          api.context.with(api.ROOT_CONTEXT, () => write([text(message), ...args.map(text)].join(" ")));
      api.diag.setLogger(
        {
          error: line((m) => child.error(m)),
          warn: line((m) => child.warn(m)),
          info: line((m) => child.info(m)),
          debug: line((m) => child.debug(m)),
          verbose: line((m) => child.trace(m)),
        },
        { logLevel: level, suppressOverrideMessage: true },
      );
    },
    shutdown(boundMs) {
      stopped ??= Promise.race([
        sdk.shutdown().catch((err: unknown) => core.globalErrorHandler(err as Error)),
        new Promise<void>((resolve) => setTimeout(resolve, boundMs).unref()),
      ]);
      return stopped;
    },
  };
}
