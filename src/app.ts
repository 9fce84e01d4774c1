// The composition root: config → database (migrations, bootstrap) → store → domain runtimes (OAuth keys and token
// writer) → transports (the Connect router for gRPC, gRPC-Web and Connect; the REST transcoder; SCIM; OAuth/OIDC;
// the external sign-in callback; the probes; Express for what nothing else serves). It answers requests on Node's request and response;
// src/server.ts owns the sockets (listening, protocol sniffing, draining, closing).
import { setMaxListeners } from "node:events";
import type http from "node:http";
import type http2 from "node:http2";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import express from "express";
import type { Logger } from "pino";
import { ActionService } from "../gen/svc/action/v2/action_service_pb.js";
import { ApplicationService } from "../gen/svc/app/v2/app_service_pb.js";
import { AuthorizationService } from "../gen/svc/authorization/v2/authorization_service_pb.js";
import { EventService } from "../gen/svc/event/v2/event_service_pb.js";
import { IdentityProviderService } from "../gen/svc/idp/v2/idp_service_pb.js";
import { InstanceService } from "../gen/svc/instance/v2/instance_service_pb.js";
import { OIDCService } from "../gen/svc/oidc/v2/oidc_service_pb.js";
import { OrganizationService } from "../gen/svc/org/v2/org_service_pb.js";
import { ProjectService } from "../gen/svc/project/v2/project_service_pb.js";
import { SAMLService } from "../gen/svc/saml/v2/saml_service_pb.js";
import { SessionService } from "../gen/svc/session/v2/session_service_pb.js";
import { MailTextService } from "../gen/svc/settings/v2/mail_text_service_pb.js";
import { SettingsService } from "../gen/svc/settings/v2/settings_service_pb.js";
import { UserService } from "../gen/svc/user/v2/user_service_pb.js";
import { actionService } from "./api/actions.js";
import { applicationService } from "./api/apps.js";
import { authorizationService } from "./api/authorizations.js";
import { type ApiDeps, type Authenticator, authInterceptor, malformedInputIsInvalidArgument, wellFormedInterceptor } from "./api/connect.js";
import { eventService } from "./api/events.js";
import { registerHealth } from "./api/health.js";
import { idempotencyKeyGate, withIdempotentCreates } from "./api/idempotency.js";
import { identityProviderService } from "./api/idps.js";
import { instanceService } from "./api/instance.js";
import { mailTextService } from "./api/mail-texts.js";
import { oidcService } from "./api/oidc.js";
import { organizationService } from "./api/orgs.js";
import { projectService } from "./api/projects.js";
import { registerReflection } from "./api/reflection.js";
import { samlService } from "./api/saml.js";
import { API_SERVICES } from "./api/services.js";
import { sessionService } from "./api/sessions.js";
import { settingsService } from "./api/settings.js";
import { userService } from "./api/users.js";
import type { Config } from "./config.js";
import { setHashCeilings } from "./crypto/passwords.js";
import { masterKeySealer } from "./crypto/sealer.js";
import type { ActionTargets } from "./domain/actions/ports.js";
import type { Clock } from "./domain/context.js";
import { DomainError } from "./domain/errors.js";
import { type FailureLimits, failureKeys, rateLimited } from "./domain/limits.js";
import { authenticateBearer } from "./domain/oauth/authn.js";
import { DEVICE_CODE_LIMITS } from "./domain/oauth/device-entry.js";
import type { OAuthRuntime } from "./domain/oauth/runtime.js";
import { bootstrapInstance, type ConsoleClient } from "./domain/orgs/bootstrap.js";
import { systemContext } from "./domain/request-context.js";
import type { IdpCertificates, SamlIdp } from "./domain/saml/runtime.js";
import { originOf } from "./domain/settings/cors.js";
import { consoleRouter, isConsolePath } from "./http/console/index.js";
import { type CorsGate, corsGate } from "./http/cors.js";
import { serveDocs } from "./http/docs/index.js";
import { idpCallbackHandler, isIdpCallbackPath } from "./http/idp/callback.js";
import { idpSamlHandler, isIdpSamlPath } from "./http/idp/saml.js";
import type { LoginDeps } from "./http/login/context.js";
import { cookieJar } from "./http/login/cookie.js";
import { isLoginPath, loginRouter } from "./http/login/router.js";
import { createMetrics } from "./http/metrics.js";
import type { NodeResponse } from "./http/node-types.js";
import { isOAuthPath, oauthHandler } from "./http/oauth/index.js";
import { isSamlPath, samlHandler } from "./http/saml/index.js";
import { createScimHandler, isScimPath } from "./http/scim/router.js";
import { createRestTranscoder } from "./http/transcoder.js";
import { openidRelyingParty } from "./idp/openid.js";
import { smtpMailer } from "./mail/smtp.js";
import { createOAuthRuntime } from "./oauth-runtime.js";
import { httpMetadataFetcher } from "./saml/metadata-fetch.js";
import { type Database, openDatabase, type QueryObserver } from "./store/db.js";
import { withDatabaseBudget } from "./store/deadline.js";
import { createStore, type Store } from "./store/index.js";
import { applyMigrations } from "./store/migrate.js";
import { outage } from "./store/outage.js";
import { secretFile } from "./store/secret-file.js";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeHandler = (req: NodeRequest, res: NodeResponse) => void;

export interface App {
  readonly db: Database;
  /** The token runtime (signing keys, caches) that issues and resolves bearer tokens. */
  readonly tokens: OAuthRuntime;
  readonly instanceId: string;
  /** The admin console's OIDC client and the first admin's login name (the readiness log line names them). */
  readonly console?: ConsoleClient;
  /** Answers one request, over HTTP/1.1 or HTTP/2. */
  readonly dispatch: NodeHandler;
  /** Counts a request shed by the server's load shedding (svc_requests_shed_total). */
  readonly countShed: () => void;
  /** Whether this replica is ready (what /readyz answers): for the probe port (SVC_PROBE_PORT). */
  readonly ready: () => Promise<boolean>;
  /** From now on readiness and health report not serving (draining starts). */
  beginShutdown(): void;
  /** Aborts the Connect calls still in flight (the grace period is over). */
  abortInFlight(): void;
  /** Stops the OAuth runtime and closes the database. */
  close(): Promise<void>;
}

/**
 * Bearer authentication for the v2 API and SCIM with the per-address limit: an address that sent too many invalid
 * tokens is refused (429) before its next token is even looked up. A missing token is not a failed guess.
 */
function limitedBearer(tokens: OAuthRuntime, limits: FailureLimits): Authenticator {
  return async (authorization, now, peer) => {
    const keys = failureKeys({}, peer);
    const wait = limits.blockedFor(keys);
    if (wait > 0) throw rateLimited(wait);
    try {
      return await authenticateBearer(tokens, authorization, now);
    } catch (err) {
      if (err instanceof DomainError && err.kind === "Unauthenticated" && err.id !== "Errors.Token.Missing") await limits.failed(keys);
      throw err;
    }
  };
}

/** A start-up step, with a log line when it took more than a second (a start that seems to hang says what it does). */
async function slowStep<T>(log: Logger, what: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await run();
  const ms = Math.round(performance.now() - started);
  if (ms > 1_000) log.info({ ms }, `start-up: ${what} took ${ms} ms`);
  return result;
}

function applyHashCeilings(config: Config): void {
  setHashCeilings({
    pbkdf2Iterations: config.passwordHashMaxPbkdf2Iterations,
    bcryptCost: config.passwordHashMaxBcryptCost,
    argon2MemoryKiB: config.passwordHashMaxArgon2MemoryKiB,
    argon2Passes: config.passwordHashMaxArgon2Passes,
    argon2Parallelism: config.passwordHashMaxArgon2Parallelism,
    scryptMemoryKiB: config.passwordHashMaxScryptMemoryKiB,
    scryptParallelism: config.passwordHashMaxScryptParallelism,
  });
}

/** The SAML IdP's URLs and request lifetime (as auth requests'). */
const samlUrls = (config: Config) => ({
  externalUrl: config.externalUrl,
  loginUrl: config.loginUrl,
  requestLifetime: config.authRequestLifetime,
  wantAuthnRequestsSigned: config.samlWantAuthnRequestsSigned,
});

/** How long a readiness probe (/readyz, gRPC health) waits for the database. */
const READINESS_DEADLINE_MS = 1_000;

/** Opens the database and, under the start-up lock (replicas start safely together), migrates it and bootstraps the instance. */
async function openAndBootstrap(
  config: Config,
  log: Logger,
  clock: Clock,
  onQuery: QueryObserver,
): Promise<{ db: Database; store: Store; knownMigrations: string[]; instanceId: string; console?: ConsoleClient }> {
  const db = await slowStep(log, "opening the database", () =>
    openDatabase({
      url: config.databaseUrl,
      dataDir: config.dataDir,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      lockTimeoutMs: config.databaseLockTimeoutMs,
      acquireTimeoutMs: config.databaseAcquireTimeoutMs,
      onQuery,
      ...(config.embeddedSnapshot ? {} : { snapshotDir: null }),
      log,
    }),
  );
  try {
    return await db.withStartupLock(async () => {
      const { applied, known, modified } = await slowStep(log, "applying migrations", () => applyMigrations(db));
      if (applied.length) log.info({ applied }, "applied database migrations");
      if (modified.length) log.warn({ modified }, "migration files changed after they were applied: the database keeps what ran then");
      const store = createStore(db.prisma);
      const boot = await slowStep(log, "setting up the instance", () =>
        bootstrapInstance(store, config, log, clock(), secretFile(config.firstInstancePatPath)),
      );
      return { db, store, knownMigrations: known, instanceId: boot.instanceId, ...(boot.console ? { console: boot.console } : {}) };
    });
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}

/** `tracing`: OpenTelemetry's Connect interceptor, outermost, when tracing is on (src/tracing). */
export async function createApp(config: Config, log: Logger, clock: Clock, tracing?: Interceptor): Promise<App> {
  outage.setLogger(log);
  applyHashCeilings(config);
  // The metrics exist before the database opens: they time its statements.
  const metrics = createMetrics({ services: API_SERVICES, token: config.metricsToken });
  const { db, store, knownMigrations, instanceId, console: consoleClient } = await openAndBootstrap(config, log, clock, metrics.observeQuery);
  const signals = metrics.signals;
  let shuttingDown = false;
  // A probe answers within its own deadline, on its own connection: a frozen database is a 503, never a hang.
  const ready = async () => !shuttingDown && (await db.ready(knownMigrations, READINESS_DEADLINE_MS).catch(() => false));
  const limits = db.failureLimits(
    { perClient: config.rateLimitClientFailures, perAddress: config.rateLimitAddressFailures, windowSeconds: config.rateLimitWindowSeconds },
    log,
  );
  let oauth: Awaited<ReturnType<typeof createOAuthRuntime>>;
  try {
    oauth = await slowStep(log, "loading the signing keys", () => createOAuthRuntime({ config, db, store, instanceId, clock, log, limits, signals }));
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  const tokens = oauth.runtime;
  metrics.readFrom({ pool: () => db.poolStats(), caches: oauth.cacheStats, outbox: oauth.outboxStats });
  const mailer = config.smtpUrl && config.smtpFrom ? smtpMailer(config.smtpUrl, config.smtpFrom) : undefined;
  const loginOrigins = [...new Set([new URL(config.externalUrl).origin, new URL(config.loginUrl).origin, ...config.loginUiAllowedOrigins])];
  const authn = { sealer: masterKeySealer(oauth.masterKey), externalUrl: config.externalUrl, loginOrigins };
  const idp = { ...openidRelyingParty(), samlCertificates: oauth.samlCertificates };
  const samlMetadata = httpMetadataFetcher({ allowPrivate: config.samlMetadataAllowPrivate });
  const deps: ApiDeps = { store, authenticate: limitedBearer(tokens, limits), instanceId, clock, log, limits, mailer, authn, idp, samlMetadata, signals };
  const samlIdp: SamlIdp = { ...deps, ...samlUrls(config), certificates: oauth.samlCertificates, apps: oauth.samlApps };
  const shutdown = new AbortController();
  // connect-node links every in-flight call to this signal and unlinks it when the call ends: the listener count is the
  // number of calls in flight, not a leak, and Node's warning at 11 would fire under any real load.
  setMaxListeners(Number.POSITIVE_INFINITY, shutdown.signal);
  const keys = { signing: oauth.runtime.keys, saml: oauth.samlCertificates, actions: oauth.runtime.actions };
  const connect = connectTransport(config, deps, keys, ready, shutdown.signal, expressFallback(log), tracing);
  const rest = createRestTranscoder(connect.router, {
    maxBodyBytes: config.maxRequestBytes,
    onError: (err, req) => log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error in a REST call"),
  });
  // Behind a proxy the request's Host and scheme are the proxy's upstream ones: a configured public URL wins.
  const scim = createScimHandler({ ...deps, externalUrl: config.externalUrlConfigured ? config.externalUrl : undefined });
  const saml = { externalUrl: config.externalUrl, certificates: oauth.samlCertificates, actions: oauth.runtime.actions };
  // An external identity provider's answer (a browser sent back to /idps/callback or a SAML ACS) comes in no one's name.
  const providerAnswerCtx = (req: http.IncomingMessage | http2.Http2ServerRequest) =>
    systemContext(
      { store, instanceId, clock, log, limits, authn, idp, signals },
      { requestId: (req.headers["x-request-id"] as string | undefined) ?? "", peer: req.socket?.remoteAddress },
    );
  const { perInstance, perAddress, windowSeconds } = DEVICE_CODE_LIMITS;
  const deviceCodeLimits = db.failureLimits({ perClient: perInstance, perAddress, windowSeconds }, log);
  const login = hostedLogin(config, { store, instanceId, clock, log, limits, deviceCodeLimits, mailer, authn, idp, signals, saml });
  const routes = dispatcher(log, [
    (req, res) => metrics.serve(req, res),
    serveDocs,
    servesPaths(isScimPath, scim),
    servesPaths(isOAuthPath, oauthHandler(tokens)),
    servesPaths(isSamlPath, samlHandler(samlIdp, log)),
    servesPaths(isLoginPath, http1Only(login)),
    servesPaths(isConsolePath, http1Only(consoleRouter({ clientId: consoleClient?.clientId, issuer: config.externalUrl }))),
    servesPaths(isIdpCallbackPath, idpCallbackHandler(providerAnswerCtx, log)),
    servesPaths(isIdpSamlPath, idpSamlHandler(providerAnswerCtx, log)),
    rest,
    probes(ready),
    servesPaths(() => true, connect.handler),
  ]);
  const cors = corsGate({ store, instanceId }, originOf(config.externalUrl) ?? "", log);
  const dispatch = budgeted(metrics.observe(withCors(routes, cors, log)), config.databaseRequestTimeoutMs);
  return {
    db,
    tokens,
    instanceId,
    ...(consoleClient ? { console: consoleClient } : {}),
    dispatch,
    countShed: metrics.countShed,
    ready,
    beginShutdown() {
      shuttingDown = true;
      connect.health.setShuttingDown();
    },
    abortInFlight: () => shutdown.abort(),
    async close() {
      shutdown.abort();
      mailer?.close();
      await oauth.close();
      await db.close();
    },
  };
}

/**
 * The Connect router (gRPC, gRPC-Web, Connect) with the resource API, reflection and health. It stays on Node's
 * request and response rather than an Express router: measured faster, and Express must never see an HTTP/2 request.
 */
function connectTransport(
  config: Config,
  deps: ApiDeps,
  keys: { signing: Parameters<typeof instanceService>[1]; saml: IdpCertificates; actions?: ActionTargets },
  ready: () => Promise<boolean>,
  shutdownSignal: AbortSignal,
  fallback: express.Express,
  tracing?: Interceptor,
): { handler: NodeHandler; router: ConnectRouter; health: { setShuttingDown(): void } } {
  let router: ConnectRouter | undefined;
  let health: { setShuttingDown(): void } | undefined;
  const handler = connectNodeAdapter({
    interceptors: [...(tracing ? [tracing] : []), authInterceptor(deps), wellFormedInterceptor(), idempotencyKeyGate()],
    requestGate: malformedInputIsInvalidArgument,
    jsonOptions: { ignoreUnknownFields: false },
    readMaxBytes: config.maxRequestBytes,
    shutdownSignal,
    routes(base) {
      const r = withIdempotentCreates(base);
      r.service(UserService, userService());
      r.service(OrganizationService, organizationService(config.externalUrl));
      r.service(InstanceService, instanceService(config.externalUrl, keys.signing));
      r.service(SettingsService, settingsService());
      r.service(MailTextService, mailTextService());
      r.service(EventService, eventService());
      r.service(ProjectService, projectService());
      r.service(AuthorizationService, authorizationService());
      r.service(ApplicationService, applicationService());
      r.service(OIDCService, oidcService({ issuer: config.externalUrl, codeLifetime: config.authCodeLifetime }));
      r.service(SAMLService, samlService({ externalUrl: config.externalUrl, certificates: keys.saml, actions: keys.actions }));
      r.service(SessionService, sessionService());
      r.service(IdentityProviderService, identityProviderService());
      r.service(ActionService, actionService());
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
      fallback(req as http.IncomingMessage, res as http.ServerResponse);
    },
  }) as NodeHandler;
  if (!router || !health) throw new Error("connect routes were not registered");
  const connect = handler;
  return {
    router,
    health,
    handler: (req, res) => {
      // connect-node builds an absolute URL from the authority synchronously, outside any catch: a request without
      // one (HTTP/1.0 without Host) or with one no URL accepts would throw out of the 'request' event and end the process.
      if (!validAuthority(req)) {
        res.writeHead(400, { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff" });
        res.end(JSON.stringify({ code: 3, message: "missing or invalid Host header", details: [] }));
        return;
      }
      connect(req, res);
    },
  };
}

/** The hosted login (/ui/login) over the same domain and runtime as the API. */
function hostedLogin(
  config: Config,
  d: Pick<LoginDeps, "store" | "instanceId" | "clock" | "log" | "limits" | "deviceCodeLimits" | "mailer" | "authn" | "idp" | "saml" | "signals">,
) {
  return loginRouter({
    ...d,
    externalUrl: config.externalUrl,
    issuer: config.externalUrl,
    codeLifetime: config.authCodeLifetime,
    cookies: cookieJar(d.authn.sealer, config.externalUrl.startsWith("https:")),
    trustProxy: config.trustProxy,
  });
}

/**
 * Each request's database work shares one budget (src/store/deadline.ts): a request that runs several statements or
 * transactions one after another waits on a frozen database for the budget, not for the sum of their bounds.
 */
function budgeted(next: NodeHandler, ms: number): NodeHandler {
  return (req, res) => {
    const budget = withDatabaseBudget(ms, () => next(req, res));
    res.once("close", budget.close);
  };
}

/** Cross-origin requests pass the CORS gate first (it answers preflights); everything else goes straight on. */
function withCors(routes: NodeHandler, gate: CorsGate, log: Logger): NodeHandler {
  return (req, res) => {
    if (req.headers.origin === undefined) return routes(req, res);
    gate(req, res).then(
      (answered) => {
        if (!answered) routes(req, res);
      },
      (err: unknown) => {
        log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error in the CORS gate");
        routes(req, res);
      },
    );
  };
}

/** An Express app behind the dispatcher: Express must never see an HTTP/2 request (browsers reach svc over HTTP/1.1). */
function http1Only(app: express.Express): (req: NodeRequest, res: NodeResponse) => void {
  return (req, res) => {
    if (req.httpVersionMajor === 2) {
      res.writeHead(505, { "content-type": "text/plain; charset=utf-8" });
      res.end("the hosted login is served over HTTP/1.1");
      return;
    }
    app(req as http.IncomingMessage, res as http.ServerResponse);
  };
}

/** Whether the request names an authority (Host or :authority) that a URL can be built on, read as connect-node reads it. */
function validAuthority(req: NodeRequest): boolean {
  const authority: unknown = "authority" in req ? req.authority : req.headers.host;
  return typeof authority === "string" && authority !== "" && URL.canParse(`http://${authority}/`);
}

/** Express serves what nothing else took over HTTP/1.1: today only the 404 (and the 500 of an error in a route). */
function expressFallback(log: Logger): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use((_req, res) => {
    res.status(404).json({ code: 5, message: "not found", details: [] });
  });
  app.use((err: unknown, req: express.Request, res: express.Response, _next: express.NextFunction) => {
    log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error in HTTP route");
    if (!res.headersSent) res.status(500).json({ code: 13, message: "internal error", details: [] });
  });
  return app;
}

/** Liveness and readiness, over HTTP/1.1 and HTTP/2 (probes and proxies may speak either); false when not asked for. */
function probes(ready: () => Promise<boolean>): Surface {
  return (req, res) => {
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
}

type Surface = (req: NodeRequest, res: NodeResponse) => boolean;

/** A surface taking the requests whose path `matches`; an asynchronous handler answers its own errors. */
function servesPaths(matches: (url: string | undefined) => boolean, serve: (req: NodeRequest, res: NodeResponse) => unknown): Surface {
  return (req, res) => {
    if (!matches(req.url)) return false;
    void serve(req, res);
    return true;
  };
}

/**
 * Offers the request to each surface in turn until one takes it (SCIM, OAuth, REST, the probes, then the Connect
 * router, whose fallback is Express's 404). All of them run on Node's request and response, over HTTP/1.1 and HTTP/2.
 */
function dispatcher(log: Logger, surfaces: Surface[]): NodeHandler {
  return (req, res) => {
    try {
      for (const takes of surfaces) if (takes(req, res)) return;
    } catch (err) {
      log.error({ err, requestId: req.headers["x-request-id"] }, "unhandled error dispatching a request");
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json", "cache-control": "no-store" });
        res.end(JSON.stringify({ code: 13, message: "internal error", details: [] }));
      } else res.destroy();
    }
  };
}
