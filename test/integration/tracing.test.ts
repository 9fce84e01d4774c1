// OpenTelemetry traces, end to end: svc runs as a real child process configured by OTEL_* variables only, exporting to
// an OTLP/HTTP receiver started here (no mock exporter); independent clients (fetch, connect-node's Connect and gRPC
// transports) send W3C traceparent headers. With no OTEL_* variables, no OpenTelemetry module is loaded at all.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { defaultOrgId, project } from "../support/fixtures.js";
import { loginClient } from "../support/oidc.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpGrpcReceiver, startOtlpReceiver } from "../support/otlp.js";
import { admin } from "../support/rpc.js";
import { spKeyPair, spMetadata } from "../support/saml.js";
import { type ChildServer, freshDatabase, ROOT, spawnServer, type TestDatabase, type TestServer } from "../support/server.js";

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const ERROR = 2;
const MODULE_LOG_HOOK = path.join(ROOT, "test/support/module-log.mjs");

interface Traced {
  traceId: string;
  parentId: string;
  header: string;
}
function newTrace(): Traced {
  const traceId = randomBytes(16).toString("hex");
  const parentId = randomBytes(8).toString("hex");
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
}

/** Sends the caller's traceparent (and the PAT) on every call of a connect-node client. */
const headers =
  (trace: Traced, pat: string): Interceptor =>
  (next) =>
  (req) => {
    req.header.set("traceparent", trace.header);
    req.header.set("authorization", `Bearer ${pat}`);
    return next(req);
  };

async function notFound(call: Promise<unknown>): Promise<void> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.NotFound);
}

const inTrace = (spans: ReceivedSpan[], t: Traced) => spans.filter((s) => s.traceId === t.traceId);
const named = (spans: ReceivedSpan[], t: Traced, name: string) => inTrace(spans, t).filter((s) => s.name === name);
const dbSpans = (spans: ReceivedSpan[], t: Traced) => inTrace(spans, t).filter((s) => s.scope === "@opentelemetry/instrumentation-pg");

interface Started {
  child: ChildServer;
  pat: string;
  dataDir: string;
}

async function start(db: TestDatabase, env: Record<string, string>): Promise<Started> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "svc-tracing-"));
  const child = await spawnServer({ SVC_DATA_DIR: dataDir, ...(db.url ? { SVC_DATABASE_URL: db.url } : {}), ...env });
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  return { child, pat, dataDir };
}

describe("tracing on (OTLP http/json)", () => {
  let receiver: OtlpReceiver;
  let db: TestDatabase;
  let svc: Started;
  const moduleLog = path.join(tmpdir(), `svc-modules-${randomBytes(4).toString("hex")}.log`);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    db = await freshDatabase();
    svc = await start(db, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      SVC_SAML_METADATA_ALLOW_PRIVATE: "true",
      NODE_OPTIONS: `--import ${MODULE_LOG_HOOK}`,
      SVC_TEST_MODULE_LOG: moduleLog,
    });
  }, 120_000);

  afterAll(async () => {
    await svc?.child.stop();
    await receiver?.close();
    await db?.drop();
    if (svc) await rm(svc.dataDir, { recursive: true, force: true });
    await rm(moduleLog, { force: true });
  });

  it("loads the SDK and says where spans go", async () => {
    expect(await readFile(moduleLog, "utf8")).toContain("/@opentelemetry/sdk-node/");
    const line = svc.child.logs.find((l) => l.msg === "tracing on (OpenTelemetry)");
    expect(line).toMatchObject({ exporters: "otlp", protocol: "http/json", endpoint: `${receiver.url}/`, serviceName: "svc" });
  });

  it("traces a REST call under the caller's trace: HTTP span, the RPC as its child, database spans without values", async () => {
    const t = newTrace();
    const res = await fetch(`${svc.child.url}/v2/users/needle-rest-7f3a`, { headers: { authorization: `Bearer ${svc.pat}`, traceparent: t.header } });
    expect(res.status).toBe(404);
    // The request id handed back (and logged) is the trace id.
    expect(res.headers.get("x-request-id")).toBe(t.traceId);
    const spans = await receiver.waitFor((s) => named(s, t, "svc.user.v2.UserService/GetUserByID").length > 0 && named(s, t, "GET /v2/users").length > 0);
    const [http] = named(spans, t, "GET /v2/users");
    expect(http).toMatchObject({
      kind: SERVER,
      parentSpanId: t.parentId,
      scope: "@opentelemetry/instrumentation-http",
      attributes: expect.objectContaining({ "http.request.method": "GET", "url.path": "/v2/users/needle-rest-7f3a", "http.response.status_code": 404 }),
      resource: expect.objectContaining({ "service.name": "svc", "deployment.environment.name": "test" }),
    });
    const [rpc] = named(spans, t, "svc.user.v2.UserService/GetUserByID");
    expect(rpc).toMatchObject({
      kind: INTERNAL,
      parentSpanId: http?.spanId,
      attributes: expect.objectContaining({ "rpc.system": "connect_rpc", "rpc.service": "svc.user.v2.UserService", "rpc.method": "GetUserByID" }),
      status: { code: ERROR, message: "user not found" },
    });
    expect(rpc?.attributes["rpc.connect_rpc.error_code"]).toBe("not_found");
    if (db.url) {
      // Queries run under the RPC's span; their text has placeholders, never the values (the id asked for).
      const queries = dbSpans(spans, t);
      expect(queries.length).toBeGreaterThan(0);
      expect(queries.some((q) => q.parentSpanId === rpc?.spanId)).toBe(true);
      for (const q of queries) expect(JSON.stringify(q.attributes)).not.toContain("needle-rest");
      expect(queries.some((q) => String(q.attributes["db.query.text"]).includes('"User"') && String(q.attributes["db.query.text"]).includes("$1"))).toBe(true);
    }
  });

  it("traces outgoing calls as client spans under the request's: http (an SP's metadata) and fetch (an OpenID provider), queries reduced to names", async () => {
    // One local server plays an SP publishing its metadata behind a token and an OpenID provider's discovery.
    const sp = spKeyPair();
    const outside = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/sp/metadata" && url.searchParams.get("token") === "md-secret-8c1e") {
        res.writeHead(200, { "content-type": "application/samlmetadata+xml" });
        return void res.end(spMetadata({ entityId: `https://sp-${randomBytes(4).toString("hex")}.example.com`, cert: sp }));
      }
      if (url.pathname === "/op/.well-known/openid-configuration") {
        const issuer = `http://127.0.0.1:${(outside.address() as AddressInfo).port}/op`;
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(
          JSON.stringify({
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ["code"],
            subject_types_supported: ["public"],
            id_token_signing_alg_values_supported: ["RS256"],
          }),
        );
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => outside.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(outside.address() as AddressInfo).port}`;
    try {
      const t = { url: svc.child.url, pat: svc.pat } as unknown as TestServer;
      const orgId = await defaultOrgId(t);
      const projectId = await project(t, orgId, `traced-${randomBytes(3).toString("hex")}`);
      const app = newTrace();
      const created = await fetch(`${t.url}/svc.app.v2.ApplicationService/CreateApplication`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/json", traceparent: app.header },
        body: JSON.stringify({ projectId, name: "traced sp", saml: { metadataUrl: `${base}/sp/metadata?token=md-secret-8c1e` } }),
      });
      expect(created.status).toBe(200);
      // The client span ends (and may be exported) before its parent: wait for both.
      const appSpans = await receiver.waitFor((s) => {
        const call = inTrace(s, app).find((x) => x.kind === CLIENT && x.scope === "@opentelemetry/instrumentation-http");
        return call !== undefined && inTrace(s, app).some((x) => x.spanId === call.parentSpanId);
      });
      const metadataCall = inTrace(appSpans, app).find((x) => x.kind === CLIENT && x.scope === "@opentelemetry/instrumentation-http");
      expect(metadataCall?.attributes["url.full"]).toBe(`${base}/sp/metadata?token=REDACTED`);
      expect(metadataCall?.attributes["http.response.status_code"]).toBe(200);
      expect(inTrace(appSpans, app).some((x) => x.spanId === metadataCall?.parentSpanId)).toBe(true);
      expect(JSON.stringify(inTrace(appSpans, app))).not.toContain("md-secret-8c1e");

      const login = await loginClient(t, orgId, `traced-login-${randomBytes(3).toString("hex")}`);
      const { id: idpId } = await admin(t, "AddGenericOIDCProvider", { name: "Traced OP", issuer: `${base}/op`, clientId: "svc", clientSecret: "s3cret" });
      const intent = newTrace();
      const started = await fetch(`${t.url}/svc.user.v2.UserService/StartIdentityProviderIntent`, {
        method: "POST",
        headers: { authorization: `Bearer ${login.pat}`, "content-type": "application/json", traceparent: intent.header },
        body: JSON.stringify({ idpId, urls: { successUrl: "https://login.example.com/ok", failureUrl: "https://login.example.com/failed" } }),
      });
      expect(started.status).toBe(200);
      const rpcName = "svc.user.v2.UserService/StartIdentityProviderIntent";
      const spans = await receiver.waitFor(
        (s) => inTrace(s, intent).some((x) => x.scope === "@opentelemetry/instrumentation-undici") && named(s, intent, rpcName).length > 0,
      );
      const discovery = inTrace(spans, intent).find((x) => x.scope === "@opentelemetry/instrumentation-undici");
      expect(discovery).toMatchObject({
        kind: CLIENT,
        attributes: expect.objectContaining({
          "url.full": `${base}/op/.well-known/openid-configuration`,
          "http.request.method": "GET",
          "http.response.status_code": 200,
        }),
      });
      expect(named(spans, intent, rpcName).map((x) => x.spanId)).toContain(discovery?.parentSpanId);
    } finally {
      outside.close();
    }
  });

  it("redacts query string values (codes, SAML messages) and keeps only the parameter names", async () => {
    const t = newTrace();
    await fetch(`${svc.child.url}/oauth/v2/authorize?client_id=x&code_challenge=secret-challenge-value`, { headers: { traceparent: t.header } });
    const spans = await receiver.waitFor((s) => inTrace(s, t).some((x) => x.kind === SERVER));
    const server = inTrace(spans, t).find((x) => x.kind === SERVER);
    expect(server?.attributes["url.query"]).toBe("client_id=REDACTED&code_challenge=REDACTED");
    expect(JSON.stringify(inTrace(spans, t))).not.toContain("secret-challenge-value");
  });

  it("gives a Connect call over HTTP/2 its SERVER span, named by the RPC, with the database spans under it and the trace id in the log", async () => {
    const t = newTrace();
    const client = createClient(UserService, createConnectTransport({ baseUrl: svc.child.url, httpVersion: "2", interceptors: [headers(t, svc.pat)] }));
    await notFound(client.getUserByID({ userId: "needle-h2-91c2" }));
    const spans = await receiver.waitFor((s) => named(s, t, "svc.user.v2.UserService/GetUserByID").length > 0);
    const rpcs = named(spans, t, "svc.user.v2.UserService/GetUserByID");
    expect(rpcs).toHaveLength(1);
    const [rpc] = rpcs;
    expect(rpc).toMatchObject({
      kind: SERVER,
      parentSpanId: t.parentId,
      attributes: expect.objectContaining({
        "rpc.system": "connect_rpc",
        "rpc.service": "svc.user.v2.UserService",
        "rpc.method": "GetUserByID",
        "rpc.connect_rpc.error_code": "not_found",
        "network.protocol.version": "2",
        "http.response.status_code": 404,
      }),
      status: { code: ERROR, message: "user not found" },
    });
    if (db.url) expect(dbSpans(spans, t).some((q) => q.parentSpanId === rpc?.spanId)).toBe(true);
    else expect(dbSpans(spans, t)).toHaveLength(0); // PGlite runs in the process: no pg client, no database spans
    const line = svc.child.logs.find((l) => l.msg === "request" && l.requestId === t.traceId);
    expect(line).toMatchObject({ trace_id: t.traceId, span_id: rpc?.spanId, path: "/svc.user.v2.UserService/GetUserByID", httpVersion: "2.0" });
  });

  it("gives gRPC calls a SERVER span with rpc.grpc.status_code, ERROR on failure only", async () => {
    const failing = newTrace();
    const ok = newTrace();
    await notFound(
      createClient(UserService, createGrpcTransport({ baseUrl: svc.child.url, interceptors: [headers(failing, svc.pat)] })).getUserByID({ userId: "nope" }),
    );
    await createClient(UserService, createGrpcTransport({ baseUrl: svc.child.url, interceptors: [headers(ok, svc.pat)] })).listUsers({});
    const spans = await receiver.waitFor(
      (s) => named(s, failing, "svc.user.v2.UserService/GetUserByID").length > 0 && named(s, ok, "svc.user.v2.UserService/ListUsers").length > 0,
    );
    expect(named(spans, failing, "svc.user.v2.UserService/GetUserByID")[0]).toMatchObject({
      kind: SERVER,
      parentSpanId: failing.parentId,
      attributes: expect.objectContaining({ "rpc.system": "grpc", "rpc.method": "GetUserByID", "rpc.grpc.status_code": Code.NotFound }),
      status: { code: ERROR, message: "user not found" },
    });
    const [list] = named(spans, ok, "svc.user.v2.UserService/ListUsers");
    expect(list).toMatchObject({ kind: SERVER, attributes: expect.objectContaining({ "rpc.system": "grpc", "rpc.grpc.status_code": 0 }) });
    expect(list?.status.code).not.toBe(ERROR);
  });

  it("names a Connect call over HTTP/1.1 by its RPC on the one HTTP span (no second span for it)", async () => {
    const t = newTrace();
    const client = createClient(UserService, createConnectTransport({ baseUrl: svc.child.url, httpVersion: "1.1", interceptors: [headers(t, svc.pat)] }));
    await client.listUsers({});
    const spans = await receiver.waitFor((s) => named(s, t, "svc.user.v2.UserService/ListUsers").length > 0);
    const rpcs = named(spans, t, "svc.user.v2.UserService/ListUsers");
    expect(rpcs).toHaveLength(1);
    expect(rpcs[0]).toMatchObject({ kind: SERVER, scope: "@opentelemetry/instrumentation-http", parentSpanId: t.parentId });
    expect(rpcs[0]?.attributes).toMatchObject({ "rpc.system": "connect_rpc", "network.protocol.version": "1.1", "http.response.status_code": 200 });
  });

  it("treats gRPC-Web as gRPC (status code from the trailer's code)", async () => {
    const t = newTrace();
    const client = createClient(UserService, createGrpcWebTransport({ baseUrl: svc.child.url, httpVersion: "1.1", interceptors: [headers(t, svc.pat)] }));
    await notFound(client.getUserByID({ userId: "nope" }));
    const spans = await receiver.waitFor((s) => named(s, t, "svc.user.v2.UserService/GetUserByID").length > 0);
    expect(named(spans, t, "svc.user.v2.UserService/GetUserByID")[0]).toMatchObject({
      kind: SERVER,
      attributes: expect.objectContaining({ "rpc.system": "grpc", "rpc.grpc.status_code": Code.NotFound, "svc.protocol": "grpc-web" }),
      status: { code: ERROR },
    });
  });

  it("traces the Express routes (hosted login) with their route template: the ESM loader hook patched express", async () => {
    const t = newTrace();
    const res = await fetch(`${svc.child.url}/ui/login/assets/no-such-asset.js`, { headers: { traceparent: t.header } });
    await res.arrayBuffer();
    const spans = await receiver.waitFor((s) => inTrace(s, t).some((x) => x.scope === "@opentelemetry/instrumentation-express"));
    const server = inTrace(spans, t).find((x) => x.kind === SERVER);
    expect(server?.name).toBe("GET /ui/login/assets/:name");
    expect(server?.attributes["http.route"]).toBe("/ui/login/assets/:name");
  });

  it("leaves the probes untraced", async () => {
    const t = newTrace();
    await fetch(`${svc.child.url}/readyz`, { headers: { traceparent: t.header } });
    const marker = newTrace();
    await fetch(`${svc.child.url}/v2/users/x`, { headers: { authorization: `Bearer ${svc.pat}`, traceparent: marker.header } });
    // Spans are exported in order of their end: once the later request's span is in, the probe's would be too.
    await receiver.waitFor((s) => inTrace(s, marker).some((x) => x.kind === SERVER));
    expect(inTrace(receiver.spans, t)).toHaveLength(0);
  });

  // Last in this group: the receiver refuses everything from here on.
  it("logs a collector's refusal as a JSON line (component opentelemetry), outside any trace", async () => {
    receiver.refuse(400);
    const t = newTrace();
    await fetch(`${svc.child.url}/v2/users/x`, { headers: { authorization: `Bearer ${svc.pat}`, traceparent: t.header } });
    const until = Date.now() + 15_000;
    const refused = () => svc.child.logs.find((l) => l.component === "opentelemetry" && l.level === 50);
    while (!refused() && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(refused()).toBeDefined();
    expect(refused()).not.toHaveProperty("trace_id");
    expect(svc.child.errors()).toBe("");
  });
});

describe("tracing on (OTLP http/protobuf)", () => {
  it("exports in protobuf under OTEL_SERVICE_NAME, and SIGTERM flushes what is buffered before the exit", async () => {
    const receiver = await startOtlpReceiver();
    const db = await freshDatabase();
    // Spans would wait a minute in the batch: only the flush at shutdown can deliver them in time.
    const svc = await start(db, {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
      OTEL_SERVICE_NAME: "svc-b",
      OTEL_BSP_SCHEDULE_DELAY: "60000",
    });
    try {
      const t = newTrace();
      await notFound(
        createClient(UserService, createGrpcTransport({ baseUrl: svc.child.url, interceptors: [headers(t, svc.pat)] })).getUserByID({ userId: "nope" }),
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.spans).toHaveLength(0);
      expect(await svc.child.stop()).toBe(0);
      expect(svc.child.errors()).toBe(""); // nothing but JSON log lines, tracing on too
      expect(receiver.contentTypes.every((c) => c === "application/x-protobuf")).toBe(true);
      const [rpc] = named(receiver.spans, t, "svc.user.v2.UserService/GetUserByID");
      expect(rpc).toMatchObject({
        kind: SERVER,
        parentSpanId: t.parentId,
        attributes: expect.objectContaining({ "rpc.system": "grpc", "rpc.grpc.status_code": Code.NotFound }),
        status: { code: ERROR },
        resource: expect.objectContaining({ "service.name": "svc-b" }),
      });
    } finally {
      await svc.child.stop();
      await receiver.close();
      await db.drop();
      await rm(svc.dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("tracing on (OTLP grpc)", () => {
  it("exports over gRPC with OTEL_EXPORTER_OTLP_PROTOCOL=grpc", async () => {
    const receiver = await startOtlpGrpcReceiver();
    const db = await freshDatabase();
    const svc = await start(db, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_BSP_SCHEDULE_DELAY: "100" });
    try {
      const t = newTrace();
      const res = await fetch(`${svc.child.url}/v2/users/x`, { headers: { authorization: `Bearer ${svc.pat}`, traceparent: t.header } });
      expect(res.status).toBe(404);
      const spans = await receiver.waitFor((s) => named(s, t, "GET /v2/users").length > 0);
      expect(named(spans, t, "GET /v2/users")[0]).toMatchObject({ kind: SERVER, parentSpanId: t.parentId });
      expect(receiver.contentTypes[0]).toMatch(/^application\/grpc/);
    } finally {
      await svc.child.stop();
      await receiver.close();
      await db.drop();
      await rm(svc.dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("tracing off", () => {
  it("loads no OpenTelemetry module without OTEL_* variables, and request ids stay the server's own", async () => {
    const db = await freshDatabase();
    const moduleLog = path.join(tmpdir(), `svc-modules-${randomBytes(4).toString("hex")}.log`);
    const svc = await start(db, { NODE_OPTIONS: `--import ${MODULE_LOG_HOOK}`, SVC_TEST_MODULE_LOG: moduleLog });
    try {
      const t = newTrace();
      const res = await fetch(`${svc.child.url}/v2/users/x`, { headers: { authorization: `Bearer ${svc.pat}`, traceparent: t.header } });
      expect(res.status).toBe(404);
      expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      expect(await svc.child.stop()).toBe(0);
      // The hook saw the application's modules (so it ran) and none of OpenTelemetry's.
      const loaded = await readFile(moduleLog, "utf8");
      expect(loaded).toMatch(/\/(src\/main\.ts|dist\/main\.js)/);
      // Bundled (dist/), tracing is a chunk of its own that only a start with tracing imports.
      expect(loaded).not.toMatch(/\/dist\/sdk-/);
      // The hook sees require() as well as import: Prisma's client runtime requires @opentelemetry/api, the no-op façade;
      // no SDK, exporter or instrumentation module is loaded.
      expect(loaded.split("\n").filter((u) => u.includes("/@opentelemetry/") && !u.includes("/@opentelemetry/api/"))).toEqual([]);
      expect(svc.child.logs.some((l) => "trace_id" in l || l.msg === "tracing on (OpenTelemetry)")).toBe(false);
    } finally {
      await svc.child.stop();
      await db.drop();
      await rm(svc.dataDir, { recursive: true, force: true });
      await rm(moduleLog, { force: true });
    }
  }, 120_000);
});
