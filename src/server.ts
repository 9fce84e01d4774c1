// Starts and stops svc: the application (src/app.ts, the composition root) on one port, HTTP/1.1 and h2c told apart
// by sniffing each connection, one log line per request, and a graceful close (drain, then cut off after the grace
// period, then the database).
import { randomUUID } from "node:crypto";
import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import type { Logger } from "pino";
import { type App, createApp, type NodeHandler } from "./app.js";
import type { Config } from "./config.js";
import type { Clock } from "./domain/context.js";
import { consoleAnnouncement } from "./http/console/index.js";
import { startProbePort } from "./http/probe-port.js";
import { shedding } from "./http/shedding.js";
import { routeConnectionsByPreface } from "./http/sniff.js";
import { createLogger } from "./logger.js";
import type { Database } from "./store/db.js";
import type { Tracing } from "./tracing/types.js";

export interface Server {
  readonly url: string;
  readonly port: number;
  /** The probe port (SVC_PROBE_PORT), when there is one. */
  readonly probePort?: number;
  readonly instanceId: string;
  readonly db: Database;
  /** The token runtime (issuer, signing keys, caches): tests read what tokens must verify against. */
  readonly tokens: App["tokens"];
  readonly log: Logger;
  /** Graceful: stop accepting, let in-flight requests finish (up to the grace period), close the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** OpenTelemetry, when the OTEL_* variables turned it on (src/main.ts). */
  tracing?: Tracing;
}

/** While draining, how long an open HTTP/1.1 connection may stay idle before it is closed. */
const IDLE_LINGER_MS = 500;
/** After the grace period, how long closing the database may take before svc stops without it. */
const CLOSE_BOUND_MS = 1_000;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ABSOLUTE_FORM = /^https?:\/\//i;

/** What the close sequence needs to know of the connections: responses in flight (HTTP/1.1) and open sessions (HTTP/2). */
interface Draining {
  shuttingDown: boolean;
  readonly pending: Set<http.ServerResponse>;
  readonly sessions: Set<http2.Http2Session>;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<Server> {
  const log = opts.logger ?? createLogger(config.logLevel, config.logFormat);
  const tracing = opts.tracing;
  // Before anything is created (a first start makes the instance and prints its admin's password): a port in use ends
  // the start here, with nothing written.
  await assertPortFree(config.host, config.port);
  if (config.probePort !== undefined) await assertPortFree(config.host, config.probePort, "SVC_PROBE_PORT");
  const app = await createApp(config, log, opts.clock ?? (() => new Date()), tracing?.interceptor);
  const draining: Draining = { shuttingDown: false, pending: new Set(), sessions: new Set() };
  const logged = withRequestLog(drainAware(app.dispatch, draining, config.requestTimeoutMs), log, tracing?.traceId);
  // Shedding outermost: a shed request is neither logged nor traced (src/http/shedding.ts).
  const handler = shedding(tracing ? tracing.serverHandler(logged) : logged, config.maxInflightRequests, app.countShed);
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
  h2.on("session", (s) => {
    draining.sessions.add(s);
    s.on("close", () => draining.sessions.delete(s));
  });
  // An idle HTTP/2 session is closed gracefully (GOAWAY) rather than destroyed with open streams.
  h2.setTimeout(120_000);
  h2.on("timeout", (s: http2.Http2Session) => s.close());
  routeConnectionsByPreface(h1, h2, config.sniffTimeoutMs);

  const port = await listen(h1, config.port, config.host);
  const probes = config.probePort === undefined ? undefined : await startProbePort(config.host, config.probePort, app.ready);
  const probePort = probes?.port;
  const url = `http://${config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host}:${port}`;
  log.info(
    { port, ...(probePort === undefined ? {} : { probePort }), database: app.db.kind, instanceId: app.instanceId },
    `svc listening on ${url} (gRPC, gRPC-Web, Connect and REST)${consoleAnnouncement(config.externalUrl, app.console)}`,
  );

  let closing: Promise<void> | undefined;
  const close = () => {
    probes?.notReady();
    // The probes answer (not ready) until the end of the drain, then go too.
    closing ??= closeGracefully(app, h1, draining, config.shutdownGraceMs, log).finally(() => probes?.close());
    return closing;
  };
  return { url, port, ...(probePort === undefined ? {} : { probePort }), instanceId: app.instanceId, db: app.db, tokens: app.tokens, log, close };
}

/**
 * The listen backlog: how many connections the kernel queues until svc accepts them (capped by net.core.somaxconn,
 * 4096 on current Linux). Node's default of 511 overflowed when a load balancer or load generator opened hundreds of
 * connections at once while the event loop was busy: the kernel then drops SYNs, and a client (a probe) that lost
 * one retries after 1, 3, 7 s — the multi-second /healthz tails measured under overload (issue 25, finding 2).
 */
const LISTEN_BACKLOG = 4096;

/** Fails when the port cannot be listened on (taken, or not allowed), naming the setting to change; port 0 always can. */
async function assertPortFree(host: string, port: number, setting = "SVC_PORT"): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  try {
    await listen(probe, port, host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "EADDRINUSE"
        ? "is in use by another process"
        : code === "EACCES"
          ? "needs privileges this user lacks"
          : `cannot be listened on (${code ?? String(err)})`;
    throw new Error(`port ${port} on ${host} ${why}: stop that process or choose another port with ${setting}; nothing was created`);
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

function listen(server: net.Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Stops accepting, lets in-flight requests finish within the grace period, cuts off the rest, then closes the app. */
async function closeGracefully(app: App, h1: http.Server, draining: Draining, graceMs: number, log: Logger): Promise<void> {
  draining.shuttingDown = true;
  app.beginShutdown();
  // Responses not yet sent tell HTTP/1.1 clients not to reuse the connection.
  for (const r of draining.pending) if (!r.headersSent) r.shouldKeepAlive = false;
  // Stop accepting, but do not cut the open keep-alive connections at once (http.Server.close would): a client may be
  // sending its next request on one at that very moment and would see ECONNRESET for a request it cannot know was
  // never read. Each open connection instead gets its next answer with Connection: close; those that stay idle for a
  // moment are closed then, when no client is about to use them. Closed after the loop's next poll for I/O
  // (setImmediate), not in the timer: a tick that comes late (a busy or starved process) runs before the reads, and a
  // request already waiting on the socket, not yet parsed, would make its connection look idle and be reset.
  const drained = new Promise<void>((resolve) => net.Server.prototype.close.call(h1, () => resolve()));
  const linger = setInterval(() => setImmediate(() => h1.closeIdleConnections()), Math.max(1, Math.min(IDLE_LINGER_MS, graceMs / 2)));
  linger.unref();
  void drained.finally(() => clearInterval(linger));
  for (const s of draining.sessions) s.close();
  const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), graceMs).unref());
  if ((await Promise.race([drained, grace])) === "timeout") {
    log.warn("shutdown grace period over: closing the remaining connections");
    app.abortInFlight();
    h1.closeAllConnections();
    for (const s of draining.sessions) s.destroy();
    await drained;
  }
  // The grace period is the bound: a database that does not answer (frozen, gone) must not hold the exit. Whatever
  // its connections still wait for is abandoned with the process.
  const closed = await Promise.race([
    app.close().then(() => "closed" as const),
    new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), CLOSE_BOUND_MS).unref()),
  ]);
  if (closed === "timeout") log.warn(`the database did not close within ${CLOSE_BOUND_MS} ms: stopping without it`);
  log.info("svc stopped");
}

/** The path and query of an absolute-form request target ("/" when it has none). */
function originForm(target: string): string {
  try {
    const u = new URL(target);
    return `${u.pathname}${u.search}`;
  } catch {
    return target;
  }
}

/** Tracks HTTP/1.1 responses for draining and guards HTTP/2 streams (rapid reset, slow bodies) before dispatching. */
function drainAware(dispatch: NodeHandler, draining: Draining, requestTimeoutMs: number): NodeHandler {
  return (req, res) => {
    if (req.httpVersionMajor === 1) {
      const r = res as http.ServerResponse;
      // Responses not yet sent when draining starts tell HTTP/1.1 clients not to reuse the connection.
      if (draining.shuttingDown) r.shouldKeepAlive = false;
      draining.pending.add(r);
      r.once("close", () => draining.pending.delete(r));
      // RFC 9112 §3.2.2: a server must accept the absolute form; every surface below routes on the origin form.
      if (req.url !== undefined && ABSOLUTE_FORM.test(req.url)) req.url = originForm(req.url);
      dispatch(req, res);
      return;
    }
    // Rapid reset (CVE-2023-44487): a client opens streams and cancels them in the same packet, before its SETTINGS
    // limit can apply; each would still start a full request (token lookup, queries). Node emits the stream while
    // nghttp2 is still parsing the read, so look again once the whole read is processed and skip what is gone.
    const stream = (req as http2.Http2ServerRequest).stream;
    // Node's requestTimeout covers HTTP/1.1 only; an HTTP/2 stream has no deadline of its own, and a body dribbled
    // a byte at a time keeps the session from ever being idle. Cut off a request not received in time.
    // (A request without a body, ended with its headers, is complete already, read or not.)
    const deadline = setTimeout(() => {
      if (!stream.endAfterHeaders && !req.readableEnded && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    }, requestTimeoutMs);
    req.once("end", () => clearTimeout(deadline));
    stream.once("close", () => clearTimeout(deadline));
    setImmediate(() => {
      if (!stream.destroyed && !stream.closed) dispatch(req, res);
    });
  };
}

/**
 * One structured log line per request, with a request id that is also returned to the caller: with tracing on, the
 * trace id of the request's span (`traceId`), so that a log line leads to its trace and back.
 */
function withRequestLog(next: NodeHandler, log: Logger, traceId?: () => string | undefined): NodeHandler {
  return (req, res) => {
    const started = process.hrtime.bigint();
    const given = req.headers["x-request-id"];
    const requestId = traceId?.() ?? (typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID());
    req.headers["x-request-id"] = requestId;
    // Always the TCP peer, whatever a client sent under this name: the brute-force limits count per address.
    req.headers["x-svc-peer"] = req.socket?.remoteAddress ?? "";
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
