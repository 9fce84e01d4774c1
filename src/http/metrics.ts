// Prometheus metrics (prom-client) at /metrics: requests by protocol, route and status with their latency (RED), the
// tokens the token endpoint issued by grant type, the database pool, and the process's own metrics. Labels come from
// bounded sets only (known RPCs, endpoint paths, resource names), never from ids in a path. A registry per app, so
// that several servers in one process (tests) never share counters.

import { timingSafeEqual } from "node:crypto";
import type http from "node:http";
import type http2 from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

export interface Metrics {
  registry: Registry;
  /** Wraps the app's request handler: every answered request is counted and timed. */
  observe(handler: (req: NodeRequest, res: NodeResponse) => void): (req: NodeRequest, res: NodeResponse) => void;
  /** Serves GET /metrics (false: not a metrics request). */
  serve(req: NodeRequest, res: NodeResponse): boolean;
}

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The protocol and route of a request, from bounded sets (`rpcs`: the paths of the known RPCs). */
export function classify(req: NodeRequest, rpcs: ReadonlySet<string>): { protocol: string; route: string } {
  const url = req.url ?? "/";
  const path = url.split("?", 1)[0] ?? "/";
  if (path.startsWith("/svc.") || path.startsWith("/grpc.")) {
    const type = String(req.headers["content-type"] ?? "");
    const protocol = type.startsWith("application/grpc-web") ? "grpc-web" : type.startsWith("application/grpc") ? "grpc" : "connect";
    return { protocol, route: rpcs.has(path) ? path : path.startsWith("/grpc.") ? path.split("/", 2).join("/") : "unknown" };
  }
  if (path.startsWith("/v2/")) return { protocol: "rest", route: `/v2/${(path.split("/")[2] ?? "").replace(/[^a-z_]/g, "")}` };
  if (path.startsWith("/scim/v2/")) {
    const resource = path.split("/")[4] ?? "";
    return { protocol: "scim", route: /^(Users|Bulk|ServiceProviderConfig|ResourceTypes|Schemas|Me)$/.test(resource) ? resource : "other" };
  }
  if (path.startsWith("/oauth/v2/") || path.startsWith("/oidc/v1/") || path.startsWith("/.well-known/")) {
    return { protocol: "oauth", route: /^\/[a-z0-9._/-]{1,60}$/.test(path) && path.split("/").length <= 4 ? path.toLowerCase() : "unknown" };
  }
  if (path.startsWith("/ui/login")) return { protocol: "login", route: "/ui/login" };
  if (path.startsWith("/saml/v2/")) return { protocol: "saml", route: path.split("/").slice(0, 4).join("/") };
  if (path === "/healthz" || path === "/readyz" || path === "/metrics") return { protocol: "probe", route: path };
  return { protocol: "other", route: "other" };
}

/**
 * `token`: when set (SVC_METRICS_TOKEN), /metrics answers only `Authorization: Bearer <token>`. `pool`: the database
 * pool's counts (PostgreSQL), read at each scrape.
 */
export function createMetrics(o: { services: readonly DescService[]; token?: string; pool?: () => PoolStats | undefined }): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "svc_" });
  const rpcs = new Set(o.services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
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
  const pool = o.pool;
  if (pool) {
    new Gauge({
      name: "svc_db_pool_connections",
      help: "Database pool connections by state (total, idle) and the requests waiting for one",
      labelNames: ["state"],
      registers: [registry],
      collect() {
        const s = pool();
        if (!s) return;
        this.set({ state: "total" }, s.total);
        this.set({ state: "idle" }, s.idle);
        this.set({ state: "waiting" }, s.waiting);
      },
    });
  }
  const grantOf = (req: NodeRequest) => (req as NodeRequest & { svcGrantType?: string }).svcGrantType;
  const expected = o.token ? Buffer.from(`Bearer ${o.token}`) : undefined;

  return {
    registry,
    observe(handler) {
      return (req, res) => {
        const start = process.hrtime.bigint();
        res.once("finish", () => {
          const { protocol, route } = classify(req, rpcs);
          const code = String(res.statusCode);
          requests.inc({ protocol, route, code });
          duration.observe({ protocol, route }, Number(process.hrtime.bigint() - start) / 1e9);
          const grant = grantOf(req);
          if (grant && code === "200") tokens.inc({ grant_type: grant });
        });
        handler(req, res);
      };
    },
    serve(req, res) {
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
    },
  };
}

/** Tells the metrics which grant a token request asked for (the token endpoint knows it once the form is read). */
export function noteGrantType(req: NodeRequest, grantType: string): void {
  if (/^[a-z0-9_:.-]{1,80}$/.test(grantType)) (req as NodeRequest & { svcGrantType?: string }).svcGrantType = grantType;
}
