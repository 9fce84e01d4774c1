// Assembles svc: database, migrations, bootstrap, the Connect router (gRPC,
// gRPC-Web, Connect), the REST transcoder and Express routes, all on one port.
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import express from "express";
import type { Logger } from "pino";
import { ApplicationService } from "../gen/svc/app/v2/app_service_pb.js";
import { AuthorizationService } from "../gen/svc/authorization/v2/authorization_service_pb.js";
import { EventService } from "../gen/svc/event/v2/event_service_pb.js";
import { InstanceService } from "../gen/svc/instance/v2/instance_service_pb.js";
import { OrganizationService } from "../gen/svc/org/v2/org_service_pb.js";
import { ProjectService } from "../gen/svc/project/v2/project_service_pb.js";
import { SettingsService } from "../gen/svc/settings/v2/settings_service_pb.js";
import { UserService } from "../gen/svc/user/v2/user_service_pb.js";
import { applicationService } from "./api/apps.js";
import { authorizationService } from "./api/authorizations.js";
import { type ApiDeps, authInterceptor } from "./api/connect.js";
import { eventService } from "./api/events.js";
import { registerHealth } from "./api/health.js";
import { instanceService } from "./api/instance.js";
import { organizationService } from "./api/orgs.js";
import { projectService } from "./api/projects.js";
import { registerReflection } from "./api/reflection.js";
import { settingsService } from "./api/settings.js";
import { userService } from "./api/users.js";
import type { Config } from "./config.js";
import type { Clock } from "./domain/context.js";
import { bootstrap } from "./domain/orgs/bootstrap.js";
import { createOAuth, isOAuthPath } from "./http/oauth/index.js";
import { createScimHandler, isScimPath } from "./http/scim/router.js";
import { routeConnectionsByPreface } from "./http/sniff.js";
import { createRestTranscoder } from "./http/transcoder.js";
import { createLogger } from "./logger.js";
import { type Database, openDatabase } from "./store/db.js";
import { createStore } from "./store/index.js";
import { applyMigrations, migrationsApplied } from "./store/migrate.js";

export const API_SERVICES: DescService[] = [
  UserService,
  OrganizationService,
  InstanceService,
  SettingsService,
  EventService,
  ProjectService,
  AuthorizationService,
  ApplicationService,
];

export interface Server {
  readonly url: string;
  readonly port: number;
  readonly instanceId: string;
  readonly db: Database;
  readonly log: Logger;
  /** Graceful: stop accepting, let in-flight requests finish (up to the grace period), close the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
}

type NodeHandler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ABSOLUTE_FORM = /^https?:\/\//i;

/** The path and query of an absolute-form request target ("/" when it has none). */
function originForm(target: string): string {
  try {
    const u = new URL(target);
    return `${u.pathname}${u.search}`;
  } catch {
    return target;
  }
}

/** Whether the request names an authority (Host or :authority) that a URL can be built on, read as connect-node reads it. */
function validAuthority(req: http.IncomingMessage | http2.Http2ServerRequest): boolean {
  const authority: unknown = "authority" in req ? req.authority : req.headers.host;
  return typeof authority === "string" && authority !== "" && URL.canParse(`http://${authority}/`);
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<Server> {
  const log = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? (() => new Date());
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize });
  let knownMigrations: string[];
  let instanceId: string;
  try {
    ({ knownMigrations, instanceId } = await db.withStartupLock(async () => {
      const { applied, known } = await applyMigrations(db);
      if (applied.length) log.info({ applied }, "applied database migrations");
      const boot = await bootstrap(db.prisma, config, log, clock());
      return { knownMigrations: known, instanceId: boot.instanceId };
    }));
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }

  let shuttingDown = false;
  const ready = async () => {
    if (shuttingDown) return false;
    try {
      await db.ping();
      return await migrationsApplied(db, knownMigrations);
    } catch {
      return false;
    }
  };

  let oauth: Awaited<ReturnType<typeof createOAuth>>;
  try {
    oauth = await createOAuth({ config, db, instanceId, clock, log });
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  const deps: ApiDeps = { store: createStore(db.prisma), db: db.prisma, instanceId, clock, log };
  const shutdown = new AbortController();
  // connect-node links every in-flight call to this signal and unlinks it when the call ends: the listener count is the
  // number of calls in flight, not a leak, and Node's warning at 11 would fire under any real load.
  setMaxListeners(Number.POSITIVE_INFINITY, shutdown.signal);
  let router: ConnectRouter | undefined;
  let health: { setShuttingDown(): void } | undefined;
  const app = express();
  const connectHandler = connectNodeAdapter({
    interceptors: [authInterceptor(deps)],
    jsonOptions: { ignoreUnknownFields: false },
    readMaxBytes: config.maxRequestBytes,
    shutdownSignal: shutdown.signal,
    routes(r) {
      r.service(UserService, userService(deps));
      r.service(OrganizationService, organizationService(deps, config.externalUrl));
      r.service(InstanceService, instanceService(deps, config.externalUrl, oauth.runtime.keys));
      r.service(SettingsService, settingsService(deps));
      r.service(EventService, eventService(deps));
      r.service(ProjectService, projectService(deps));
      r.service(AuthorizationService, authorizationService(deps));
      r.service(ApplicationService, applicationService(deps));
      registerReflection(r, API_SERVICES);
      health = registerHealth(
        r,
        API_SERVICES.map((s) => s.typeName),
        ready,
      );
      router = r;
    },
    fallback: (req, res) => {
      // Express must never see an HTTP/2 request (it rewrites the request prototype and crashes).
      if (req.httpVersionMajor === 2) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: 5, message: "not found" }));
        return;
      }
      app(req as http.IncomingMessage, res as http.ServerResponse);
    },
  });
  if (!router) throw new Error("connect routes were not registered");
  const rest = createRestTranscoder(router, {
    maxBodyBytes: config.maxRequestBytes,
    onError: (err, req) => log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error in a REST call"),
  });

  /** Liveness and readiness, over HTTP/1.1 and HTTP/2 (probes and proxies may speak either); false when not asked for. */
  const probes = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): boolean => {
    const path = req.url?.split("?", 1)[0];
    if ((path !== "/healthz" && path !== "/readyz") || (req.method !== "GET" && req.method !== "HEAD")) return false;
    const answer = (status: number, body: string) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      if (req.method === "HEAD") res.end();
      else res.end(body);
    };
    if (path === "/healthz") answer(200, '{"status":"ok"}');
    else
      void ready().then(
        (ok) => answer(ok ? 200 : 503, ok ? '{"status":"ready"}' : '{"status":"unavailable"}'),
        () => answer(503, '{"status":"unavailable"}'),
      );
    return true;
  };

  // Express serves what nothing else took over HTTP/1.1: today only the 404.
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use((_req, res) => {
    res.status(404).json({ code: 5, message: "not found", details: [] });
  });
  app.use((err: unknown, req: express.Request, res: express.Response, _next: express.NextFunction) => {
    log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error in HTTP route");
    if (!res.headersSent) res.status(500).json({ code: 13, message: "internal error", details: [] });
  });

  // Responses not yet sent when draining starts tell HTTP/1.1 clients not to reuse the connection.
  // Behind a proxy the request's Host and scheme are the proxy's upstream ones: a configured public URL wins.
  const scim = createScimHandler({ ...deps, externalUrl: config.externalUrlConfigured ? config.externalUrl : undefined });
  const pending = new Set<http.ServerResponse>();
  const drainAware: NodeHandler = (req, res) => {
    if (req.httpVersionMajor === 1) {
      const r = res as http.ServerResponse;
      if (shuttingDown) r.shouldKeepAlive = false;
      pending.add(r);
      r.once("close", () => pending.delete(r));
      // RFC 9112 §3.2.2: a server must accept the absolute form; every surface below routes on the origin form.
      if (req.url !== undefined && ABSOLUTE_FORM.test(req.url)) req.url = originForm(req.url);
    }
    if (req.httpVersionMajor === 2) {
      // Rapid reset (CVE-2023-44487): a client opens streams and cancels them in the same packet, before its SETTINGS
      // limit can apply; each would still start a full request (token lookup, queries). Node emits the stream while
      // nghttp2 is still parsing the read, so look again once the whole read is processed and skip what is gone.
      const stream = (req as http2.Http2ServerRequest).stream;
      // Node's requestTimeout covers HTTP/1.1 only; an HTTP/2 stream has no deadline of its own, and a body dribbled
      // a byte at a time keeps the session from ever being idle. Cut off a request not received in time.
      // (A request without a body, ended with its headers, is complete already, read or not.)
      const deadline = setTimeout(() => {
        if (!stream.endAfterHeaders && !req.readableEnded && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }, config.requestTimeoutMs);
      req.once("end", () => clearTimeout(deadline));
      stream.once("close", () => clearTimeout(deadline));
      setImmediate(() => {
        if (!stream.destroyed && !stream.closed) dispatch(req, res);
      });
      return;
    }
    dispatch(req, res);
  };
  const dispatch: NodeHandler = (req, res) => {
    try {
      // SCIM, OAuth, REST and the probes are served on Node's request and response directly, over HTTP/1.1 and HTTP/2
      // (see their modules); the rest goes to the Connect router, and what it does not know to the 404.
      if (isScimPath(req.url)) void scim(req, res);
      else if (isOAuthPath(req.url)) void oauth.handler(req, res);
      else if (!rest(req, res) && !probes(req, res)) {
        // connect-node builds an absolute URL from the authority synchronously, outside any catch: a request without
        // one (HTTP/1.0 without Host) or with one no URL accepts would throw out of the 'request' event and end the process.
        if (!validAuthority(req)) {
          res.writeHead(400, { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff" });
          res.end(JSON.stringify({ code: 3, message: "missing or invalid Host header", details: [] }));
          return;
        }
        (connectHandler as NodeHandler)(req, res);
      }
    } catch (err) {
      log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error dispatching a request");
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json", "cache-control": "no-store" });
        res.end(JSON.stringify({ code: 13, message: "internal error", details: [] }));
      } else res.destroy();
    }
  };
  const handler = withRequestLog(drainAware, log);
  const h1 = http.createServer(
    {
      keepAliveTimeout: 5_000,
      headersTimeout: Math.min(30_000, config.requestTimeoutMs),
      requestTimeout: config.requestTimeoutMs,
      // Node checks both timeouts only this often: keep the overshoot small against the configured timeout.
      connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(config.requestTimeoutMs / 4))),
    },
    handler,
  );
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: config.http2MaxConcurrentStreams } }, handler);
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  // An idle HTTP/2 session is closed gracefully (GOAWAY) rather than destroyed with open streams.
  h2.setTimeout(120_000);
  h2.on("timeout", (s: http2.Http2Session) => s.close());
  routeConnectionsByPreface(h1, h2, config.sniffTimeoutMs);

  await new Promise<void>((resolve, reject) => {
    h1.once("error", reject);
    h1.listen(config.port, config.host, () => {
      h1.off("error", reject);
      resolve();
    });
  });
  const port = (h1.address() as AddressInfo).port;
  const url = `http://${config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host}:${port}`;
  log.info({ port, database: db.kind, instanceId }, `svc listening on ${url} (gRPC, gRPC-Web, Connect and REST)`);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      shuttingDown = true;
      health?.setShuttingDown();
      for (const r of pending) if (!r.headersSent) r.shouldKeepAlive = false;
      const drained = new Promise<void>((resolve) => h1.close(() => resolve()));
      h1.closeIdleConnections();
      for (const s of sessions) s.close();
      const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), config.shutdownGraceMs).unref());
      if ((await Promise.race([drained, grace])) === "timeout") {
        log.warn("shutdown grace period over: closing the remaining connections");
        shutdown.abort();
        h1.closeAllConnections();
        for (const s of sessions) s.destroy();
        await drained;
      }
      shutdown.abort();
      await oauth.close();
      await db.close();
      log.info("svc stopped");
    })();
    return closing;
  };
  return { url, port, instanceId, db, log, close };
}

/** One structured log line per request, with a request id that is also returned to the caller. */
function withRequestLog(next: NodeHandler, log: Logger): NodeHandler {
  return (req, res) => {
    const started = process.hrtime.bigint();
    const given = req.headers["x-request-id"];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    req.headers["x-request-id"] = requestId;
    res.setHeader("x-request-id", requestId);
    res.once("close", () => {
      log.info(
        {
          requestId,
          method: req.method,
          path: (req.url ?? "").split("?")[0],
          status: res.statusCode,
          grpcStatus: res.getHeader("grpc-status"),
          httpVersion: req.httpVersion,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
        },
        "request",
      );
    });
    next(req, res);
  };
}
