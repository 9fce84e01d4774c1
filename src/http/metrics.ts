// Prometheus metrics (prom-client) at /metrics: requests by protocol, route and status with their latency (RED), the
// tokens the token endpoint issued by grant type, SCIM operations, sign-in outcomes (factor checks, finished OIDC and
// SAML requests), the database pool and query latency, the authentication caches' hits, and the process's own
// metrics. Labels come from bounded sets only (known RPCs, endpoint paths, resource names, factor names), never from
// ids in a path or from users. A registry per app, so that several servers in one process (tests) never share counters.

import { timingSafeEqual } from "node:crypto";
import type http from "node:http";
import type http2 from "node:http2";
import { type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import type { SignInSignals } from "../domain/signals.js";
import type { NodeResponse } from "./node-types.js";
import { isOAuthPath } from "./oauth/index.js";
import { isSamlPath } from "./saml/index.js";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/** An authentication cache's lookups so far. */
export interface CacheStats {
  cache: string;
  hits: number;
  misses: number;
}

/** What each scrape reads: see Metrics.readFrom. */
export interface MetricSources {
  pool?: () => PoolStats | undefined;
  caches?: () => CacheStats[];
  /** The outbox's deliveries waiting (pending or to be retried) and the age of the oldest. */
  outbox?: () => Promise<{ waiting: number; oldestSeconds: number }>;
}

export interface Metrics {
  registry: Registry;
  /** Sign-in outcomes, from the domain (Ctx.signals). */
  signals: SignInSignals;
  /** One database statement's round trip (PostgreSQL), in seconds. */
  observeQuery(seconds: number, ok: boolean): void;
  /** What each scrape reads: the database pool's counts (PostgreSQL) and the authentication caches' hits and misses. */
  readFrom(sources: MetricSources): void;
  /** Wraps the app's request handler: every answered request is counted and timed. */
  observe(handler: (req: NodeRequest, res: NodeResponse) => void): (req: NodeRequest, res: NodeResponse) => void;
  /** Serves GET /metrics (false: not a metrics request). */
  serve(req: NodeRequest, res: NodeResponse): boolean;
  /** One request shed by load shedding (answered 503 before anything else ran, and not logged). */
  countShed(): void;
}

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The gRPC services svc serves beside its own API (src/api/health.ts, src/api/reflection.ts). */
const GRPC_SERVICES = /^\/grpc\.(health\.v1\.Health\/(Check|Watch|List)|reflection\.v1(alpha)?\.ServerReflection\/ServerReflectionInfo)$/;

/** A path as the OAuth and SAML adapters route it: lower-cased, one trailing slash ignored. */
function endpointPath(path: string): string {
  const p = path.toLowerCase();
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

/**
 * The protocol and route of a request, from bounded sets (`rpcs`: the paths of the known RPCs; `rest`: the REST
 * collections their google.api.http rules name). Anything else is one constant route per protocol ("unknown"): a label
 * never comes from what an anonymous client chose to send.
 */
export function classify(req: NodeRequest, rpcs: ReadonlySet<string>, rest: ReadonlySet<string> = new Set()): { protocol: string; route: string } {
  const url = req.url ?? "/";
  const path = url.split("?", 1)[0] ?? "/";
  if (path.startsWith("/svc.") || path.startsWith("/grpc.")) {
    const type = String(req.headers["content-type"] ?? "");
    const protocol = type.startsWith("application/grpc-web") ? "grpc-web" : type.startsWith("application/grpc") ? "grpc" : "connect";
    return { protocol, route: rpcs.has(path) || GRPC_SERVICES.test(path) ? path : "unknown" };
  }
  if (path.startsWith("/v2/")) {
    const collection = (path.split("/")[2] ?? "").split(":")[0] ?? "";
    return { protocol: "rest", route: rest.has(collection) ? `/v2/${collection}` : "unknown" };
  }
  if (path.startsWith("/scim/v2/")) {
    const resource = path.split("/")[4] ?? "";
    return { protocol: "scim", route: /^(Users|Bulk|ServiceProviderConfig|ResourceTypes|Schemas|Me)$/.test(resource) ? resource : "other" };
  }
  if (path.startsWith("/oauth/v2/") || path.startsWith("/oidc/v1/") || path.startsWith("/.well-known/")) {
    const endpoint = endpointPath(path);
    return { protocol: "oauth", route: isOAuthPath(endpoint) ? endpoint : "unknown" };
  }
  if (path.startsWith("/ui/login")) return { protocol: "login", route: "/ui/login" };
  if (path.startsWith("/saml/v2/")) {
    const endpoint = endpointPath(path);
    return { protocol: "saml", route: isSamlPath(endpoint) ? endpoint : "unknown" };
  }
  if (path === "/healthz" || path === "/readyz" || path === "/metrics") return { protocol: "probe", route: path };
  return { protocol: "other", route: "other" };
}

/** The first path segment after /v2/ of every REST binding of `services` (`users` of `/v2/users/{userId}`, say). */
export function restCollections(services: readonly DescService[]): Set<string> {
  const found = new Set<string>();
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, httpRule)) continue;
      const rule = getOption(method, httpRule);
      for (const binding of [rule, ...rule.additionalBindings]) {
        const p = binding.pattern.case && binding.pattern.case !== "custom" ? binding.pattern.value : undefined;
        const segment = typeof p === "string" && p.startsWith("/v2/") ? p.split("/")[2] : undefined;
        if (segment && !segment.includes("{")) found.add(segment.split(":")[0] as string);
      }
    }
  }
  return found;
}

function scimOperation(method: string, path: string): { resource: string; operation: string } | undefined {
  const parts = path.split("/");
  const resource = parts[4] ?? "";
  if (resource === "Bulk") return { resource: "Bulk", operation: "bulk" };
  if (resource !== "Users" && resource !== "Groups") return { resource: "other", operation: "discovery" };
  const item = parts[5];
  if (!item) return { resource, operation: method === "POST" ? "create" : "list" };
  if (item === ".search") return { resource, operation: "list" };
  const byMethod: Record<string, string> = { GET: "get", HEAD: "get", PUT: "replace", PATCH: "patch", DELETE: "delete" };
  const operation = byMethod[method];
  return operation ? { resource, operation } : undefined;
}

/** A bulk operation's resource ("/Users/…" → Users) and what it did, for the SCIM operations counter. */
function bulkOperation(op: { method: string; path: string }): { resource: string; operation: string } {
  const resource = /^\/(Users|Groups)(\/|$)/.exec(op.path)?.[1] ?? "other";
  const byMethod: Record<string, string> = { POST: "create", PUT: "replace", PATCH: "patch", DELETE: "delete" };
  return { resource, operation: byMethod[op.method] ?? "other" };
}

const FACTORS = new Map([
  ["user", "user"],
  ["password", "password"],
  ["totp", "totp"],
  ["otpEmail", "otp_email"],
  ["webAuthN", "webauthn"],
  ["idpIntent", "idp_intent"],
]);

/** The sign-in counters and the signals that feed them. */
function signInMetrics(registry: Registry): SignInSignals {
  const checks = new Counter({
    name: "svc_session_checks_total",
    help: "Session checks (CreateSession, SetSession, the hosted login) by factor and outcome (success, invalid, locked, refused, rate_limited, error)",
    labelNames: ["factor", "outcome"],
    registers: [registry],
  });
  const finished = new Counter({
    name: "svc_sign_ins_total",
    help: "OIDC auth requests and SAML requests answered, by protocol and outcome (success: a code or an assertion; error: an error for the client)",
    labelNames: ["protocol", "outcome"],
    registers: [registry],
  });
  const actionCalls = new Counter({
    name: "svc_action_calls_total",
    help: "Calls of action targets by function (preuserinfo, preaccesstoken, presamlresponse) and outcome (success; error: refused, unreachable or an answer svc cannot read; timeout)",
    labelNames: ["function", "outcome"],
    registers: [registry],
  });
  const actionSeconds = new Histogram({
    name: "svc_action_call_duration_seconds",
    help: "How long action targets took to answer (or to fail), by function: issuing waits for them",
    labelNames: ["function"],
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const deliveries = new Counter({
    name: "svc_action_deliveries_total",
    help: "Attempts to deliver events to action targets (the outbox), by outcome (delivered; failed: to be retried; dead: given up)",
    labelNames: ["outcome"],
    registers: [registry],
  });
  return {
    delivery: (outcome) => deliveries.inc({ outcome }),
    check: (factor, outcome) => checks.inc({ factor: FACTORS.get(factor) ?? "other", outcome }),
    finished: (protocol, outcome) => finished.inc({ protocol, outcome }),
    action: (fn, outcome, seconds) => {
      actionCalls.inc({ function: fn, outcome });
      actionSeconds.observe({ function: fn }, seconds);
    },
  };
}

/** Counters that follow running totals kept elsewhere (the caches count their own hits): each scrape adds the growth. */
function cacheMetrics(registry: Registry, caches: () => CacheStats[]): void {
  const seen = new Map<string, number>();
  new Counter({
    name: "svc_cache_requests_total",
    help: "Lookups of the authentication caches (tokens, clients, machine_keys, role_claims, saml_apps) by result (hit, miss)",
    labelNames: ["cache", "result"],
    registers: [registry],
    collect() {
      for (const c of caches()) {
        for (const [result, total] of [
          ["hit", c.hits],
          ["miss", c.misses],
        ] as const) {
          const key = `${c.cache}/${result}`;
          this.inc({ cache: c.cache, result }, total - (seen.get(key) ?? 0));
          seen.set(key, total);
        }
      }
    },
  });
}

/** The outbox's depth and the age of its oldest waiting delivery, read at each scrape (one statement). */
function outboxMetrics(registry: Registry, sources: MetricSources): void {
  let read: Promise<{ waiting: number; oldestSeconds: number } | undefined> | undefined;
  // Both gauges are set from one read per scrape.
  const once = () => {
    if (read) return read;
    // A database that does not answer within a second leaves the gauges as they were: a scrape never waits on it.
    const late = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1_000).unref());
    read = Promise.race([(sources.outbox?.() ?? Promise.resolve(undefined)).catch(() => undefined), late]).finally(() =>
      setImmediate(() => {
        read = undefined;
      }),
    );
    return read;
  };
  new Gauge({
    name: "svc_action_outbox_depth",
    help: "Deliveries of events to action targets waiting in the outbox (pending, or failed and to be retried)",
    registers: [registry],
    async collect() {
      const s = await once();
      if (s) this.set(s.waiting);
    },
  });
  new Gauge({
    name: "svc_action_outbox_oldest_seconds",
    help: "Age of the oldest delivery waiting in the outbox (0 when none waits)",
    registers: [registry],
    async collect() {
      const s = await once();
      if (s) this.set(s.oldestSeconds);
    },
  });
}

/** The database's own metrics: the pool (read at each scrape) and each statement's round trip. */
function databaseMetrics(registry: Registry, sources: { pool?: () => PoolStats | undefined }): Histogram<"outcome"> {
  new Gauge({
    name: "svc_db_pool_connections",
    help: "Database pool connections by state (total, idle) and the requests waiting for one",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const s = sources.pool?.();
      if (!s) return;
      this.set({ state: "total" }, s.total);
      this.set({ state: "idle" }, s.idle);
      this.set({ state: "waiting" }, s.waiting);
    },
  });
  return new Histogram({
    name: "svc_db_query_duration_seconds",
    help: "Round trip of each database statement from the pool (PostgreSQL), by outcome (ok, error)",
    labelNames: ["outcome"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
}

/** Requests (RED), tokens by grant and SCIM operations, counted when each answer is finished. */
function requestMetrics(
  registry: Registry,
  rpcs: ReadonlySet<string>,
  rest: ReadonlySet<string>,
): (req: NodeRequest, res: NodeResponse, start: bigint) => void {
  const requests = new Counter({
    name: "svc_requests_total",
    help: "Requests answered, by protocol, route (RPC, endpoint or resource) and HTTP status",
    labelNames: ["protocol", "route", "code"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "svc_request_duration_seconds",
    help: "Time from the request's arrival to the end of its answer, by protocol and route",
    labelNames: ["protocol", "route"],
    buckets: SECONDS_BUCKETS,
    registers: [registry],
  });
  const tokens = new Counter({
    name: "svc_oauth_tokens_issued_total",
    help: "Successful token endpoint answers, by grant type",
    labelNames: ["grant_type"],
    registers: [registry],
  });
  const scimOps = new Counter({
    name: "svc_scim_operations_total",
    help: "SCIM operations by resource, operation (list, get, create, replace, patch, delete, bulk, discovery) and HTTP status; each operation of a bulk request counts too",
    labelNames: ["resource", "operation", "code"],
    registers: [registry],
  });
  return (req, res, start) => {
    const { protocol, route } = classify(req, rpcs, rest);
    const code = String(res.statusCode);
    requests.inc({ protocol, route, code });
    duration.observe({ protocol, route }, Number(process.hrtime.bigint() - start) / 1e9);
    const grant = (req as NodeRequest & { svcGrantType?: string }).svcGrantType;
    if (grant && code === "200") tokens.inc({ grant_type: grant });
    if (protocol !== "scim") return;
    const op = scimOperation(req.method ?? "GET", (req.url ?? "/").split("?", 1)[0] ?? "/");
    if (op) scimOps.inc({ ...op, code });
    for (const inner of (req as NodeRequest & { svcScimBulk?: BulkOutcome[] }).svcScimBulk ?? []) scimOps.inc({ ...bulkOperation(inner), code: inner.status });
  };
}

/** GET /metrics: the registry's text, behind the bearer token when one is set (compared in constant time). */
function scrape(registry: Registry, token: string | undefined): (req: NodeRequest, res: NodeResponse) => boolean {
  const expected = token ? Buffer.from(`Bearer ${token}`) : undefined;
  return (req, res) => {
    if ((req.url ?? "").split("?", 1)[0] !== "/metrics") return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET", "content-type": "text/plain; charset=utf-8" });
      res.end("use GET\n");
      return true;
    }
    if (expected) {
      const given = Buffer.from(String(req.headers.authorization ?? ""));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        res.writeHead(401, { "www-authenticate": 'Bearer realm="metrics"', "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
        res.end("a bearer token is required\n");
        return true;
      }
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" });
        if (req.method === "HEAD") res.end();
        else res.end(text);
      },
      () => {
        res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end("metrics could not be collected\n");
      },
    );
    return true;
  };
}

/**
 * `token`: when set (SVC_METRICS_TOKEN), /metrics answers only `Authorization: Bearer <token>`. What is read at each
 * scrape (the database pool's counts, the authentication caches' hits and misses) is given later, with `readFrom`,
 * once the database and the caches exist: the statement timer must be there before the database opens.
 */
export function createMetrics(o: { services: readonly DescService[]; token?: string }): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "svc_" });
  const rpcs = new Set(o.services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
  const sources: MetricSources = {};
  const finished = requestMetrics(registry, rpcs, restCollections(o.services));
  const queries = databaseMetrics(registry, sources);
  cacheMetrics(registry, () => sources.caches?.() ?? []);
  outboxMetrics(registry, sources);
  const shed = new Counter({
    name: "svc_requests_shed_total",
    help: "Requests answered 503 at once by load shedding (SVC_MAX_INFLIGHT_REQUESTS), neither logged nor counted in svc_requests_total",
    registers: [registry],
  });
  return {
    countShed: () => shed.inc(),
    registry,
    signals: signInMetrics(registry),
    observeQuery: (seconds, ok) => queries.observe({ outcome: ok ? "ok" : "error" }, seconds),
    readFrom(more) {
      Object.assign(sources, more);
    },
    observe(handler) {
      return (req, res) => {
        const start = process.hrtime.bigint();
        res.once("finish", () => finished(req, res, start));
        handler(req, res);
      };
    },
    serve: scrape(registry, o.token),
  };
}

/** Tells the metrics which grant a token request asked for (the token endpoint knows it once the form is read). */
export function noteGrantType(req: NodeRequest, grantType: string): void {
  if (/^[a-z0-9_:.-]{1,80}$/.test(grantType)) (req as NodeRequest & { svcGrantType?: string }).svcGrantType = grantType;
}

interface BulkOutcome {
  method: string;
  path: string;
  status: string;
}

/** Tells the metrics what each operation of a SCIM bulk request did (the bulk handler knows once it ran them). */
export function noteScimBulk(req: NodeRequest, outcomes: BulkOutcome[]): void {
  (req as NodeRequest & { svcScimBulk?: BulkOutcome[] }).svcScimBulk = outcomes.filter((o) => /^\d{3}$/.test(o.status));
}
