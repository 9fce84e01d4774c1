// Reflection and health are judged by clients we did not write: buf curl
// (Go, grpc-go's reflection client) must discover and call the API with no
// local protos, and the connect client checks the exact reflection answers.

import { execFile } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { create, createFileRegistry, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { type FileDescriptorProto, FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { type HealthProbe, registerHealth } from "../../src/api/health.js";
import { registerReflection } from "../../src/api/reflection.js";

const bufBin = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));
const GOOGLE_API_HTTP = 72295728; // google.api.http, an extension of google.protobuf.MethodOptions
const SVC_AUTH_OPTION = 50001; // svc.options.v2.auth_option, the permission an RPC declares

interface Running {
  baseUrl: string;
  transport: Transport;
  /** Service type names of every RPC the server handled, in order. */
  hits: string[];
  setShuttingDown(): void;
  close(): Promise<void>;
}

async function startServer(probe: HealthProbe, intervalMs: number): Promise<Running> {
  const hits: string[] = [];
  const record: Interceptor = (next) => (req) => {
    hits.push(req.service.typeName);
    return next(req);
  };
  let health: { setShuttingDown(): void } | undefined;
  const server = http2.createServer(
    connectNodeAdapter({
      interceptors: [record],
      routes: (router) => {
        router.service(UserService, {
          getUserByID: (req) => ({ user: { userId: req.userId, username: "alice" } }),
        });
        registerReflection(router, [UserService]);
        health = registerHealth(router, [UserService.typeName], probe, intervalMs);
      },
    }),
  );
  // http2.Server.close() waits for open sessions (client transports keep theirs).
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    // gRPC is HTTP/2 only; connect-node 2.2's gRPC transport has no httpVersion option.
    transport: createGrpcTransport({ baseUrl }),
    hits,
    setShuttingDown: () => health?.setShuttingDown(),
    close: async () => {
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface CurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

// Asynchronous on purpose: the server runs in this process, a sync spawn would deadlock it.
function bufCurl(...args: string[]): Promise<CurlResult> {
  return new Promise((resolve) => {
    execFile(bufBin, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

type V1Request = MessageInitShape<typeof v1.ServerReflectionRequestSchema>;

/** Sends all requests on one reflection stream and collects the answers. */
async function reflectV1(transport: Transport, requests: V1Request[]): Promise<v1.ServerReflectionResponse[]> {
  const client = createClient(v1.ServerReflection, transport);
  const out: v1.ServerReflectionResponse[] = [];
  for await (const res of client.serverReflectionInfo(fromArray(requests))) out.push(res);
  return out;
}

async function* fromArray<T>(items: T[]): AsyncGenerator<T> {
  yield* items;
}

function descriptors(res: v1.ServerReflectionResponse | undefined): FileDescriptorProto[] {
  if (res?.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(`expected file descriptors, got ${res?.messageResponse.case}: ${JSON.stringify(res?.messageResponse.value)}`);
  }
  return res.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
}

/**
 * Orders files so that every import precedes its importer, as a
 * FileDescriptorSet must. (createFileRegistry's proto-plus-resolver form is
 * not used: in @bufbuild/protobuf 2.17 it adds a file before a shared import
 * when the importer also imports that file directly, and fails.)
 */
function importsFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto | undefined) => {
    if (!file || ordered.includes(file)) return;
    for (const dep of file.dependency) visit(byName.get(dep));
    ordered.push(file);
  };
  for (const file of files) visit(file);
  return ordered;
}

const names = (files: FileDescriptorProto[]) => files.map((f) => f.name);

function errorCode(res: v1.ServerReflectionResponse | undefined): number | undefined {
  return res?.messageResponse.case === "errorResponse" ? res.messageResponse.value.errorCode : undefined;
}

let healthy = true;
let probeCalls = 0;
const probe: HealthProbe = async () => {
  probeCalls++;
  return healthy;
};
let srv: Running;

beforeAll(async () => {
  srv = await startServer(probe, 50);
});
afterAll(async () => {
  await srv.close();
});
beforeEach(() => {
  healthy = true;
});

describe("buf curl (reflection, no --schema)", () => {
  it.each([
    ["grpc-v1", "grpc.reflection.v1.ServerReflection"],
    ["grpc-v1alpha", "grpc.reflection.v1alpha.ServerReflection"],
  ])("lists methods with --reflect-protocol %s", async (protocol, reflectionService) => {
    srv.hits.length = 0;
    const r = await bufCurl("--reflect-protocol", protocol, "--list-methods", srv.baseUrl);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const methods = r.stdout.trim().split("\n");
    expect(methods).toEqual(
      expect.arrayContaining([
        "svc.user.v2.UserService/CreateUser",
        "svc.user.v2.UserService/GetUserByID",
        "svc.user.v2.UserService/ListUsers",
        "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch",
        "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      ]),
    );
    // Proves the requested protocol answered, not a fallback to the other one.
    expect(new Set(srv.hits)).toEqual(new Set([reflectionService]));
  });

  it("calls a unary method resolved through reflection", async () => {
    const r = await bufCurl("-d", '{"userId":"x"}', `${srv.baseUrl}/svc.user.v2.UserService/GetUserByID`);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ user: { userId: "x", username: "alice" } });
  });

  it("reports SERVING for the overall and a registered service", async () => {
    for (const service of ["", UserService.typeName]) {
      const r = await bufCurl("-d", JSON.stringify({ service }), `${srv.baseUrl}/grpc.health.v1.Health/Check`);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({ status: "SERVING" });
    }
    const empty = await bufCurl("-d", "{}", `${srv.baseUrl}/grpc.health.v1.Health/Check`);
    expect(JSON.parse(empty.stdout)).toEqual({ status: "SERVING" });
  });

  it("fails Check for an unknown service with not_found", async () => {
    const r = await bufCurl("-d", '{"service":"no.such.Service"}', `${srv.baseUrl}/grpc.health.v1.Health/Check`);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("not_found");
  });

  it("reports NOT_SERVING once the probe fails", async () => {
    healthy = false;
    const r = await bufCurl("-d", "{}", `${srv.baseUrl}/grpc.health.v1.Health/Check`);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ status: "NOT_SERVING" });
  });
});

describe("ServerReflection v1 (connect client)", () => {
  it("lists our services plus reflection and health", async () => {
    const [res] = await reflectV1(srv.transport, [{ messageRequest: { case: "listServices", value: "" } }]);
    expect(res?.messageResponse.case).toBe("listServicesResponse");
    const listed = res?.messageResponse.case === "listServicesResponse" ? res.messageResponse.value.service : [];
    expect(listed.map((s) => s.name).sort()).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "svc.user.v2.UserService",
    ]);
  });

  it.each([
    ["svc.user.v2.UserService", "svc/user/v2/user_service.proto"],
    ["svc.user.v2.UserService.GetUserByID", "svc/user/v2/user_service.proto"],
    ["svc.user.v2.User", "svc/user/v2/user.proto"],
    ["svc.user.v2.CreateUserRequest.Profile", "svc/user/v2/user_service.proto"],
    ["svc.user.v2.GetUserByIDRequest.user_id", "svc/user/v2/user_service.proto"],
    ["google.api.http", "google/api/annotations.proto"],
    ["grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"],
    // The error details every error carries, for clients decoding grpc-status-details-bin.
    ["google.rpc.Status", "google/rpc/status.proto"],
    ["google.rpc.ErrorInfo", "google/rpc/error_details.proto"],
  ])("file_containing_symbol %s → %s first", async (symbol, file) => {
    const [res] = await reflectV1(srv.transport, [{ messageRequest: { case: "fileContainingSymbol", value: symbol } }]);
    expect(names(descriptors(res))[0]).toBe(file);
  });

  it("sends a self-contained set: the file and all transitive imports, each once", async () => {
    const [res] = await reflectV1(srv.transport, [{ messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.UserService" } }]);
    const files = descriptors(res);
    const fileNames = names(files);
    expect(new Set(fileNames).size).toBe(fileNames.length);
    expect(fileNames).toEqual(
      expect.arrayContaining([
        "svc/user/v2/user.proto",
        // Imported by svc/object/v2 (ErrorDetails): a client holding the API's files can decode error details.
        "google/rpc/error_details.proto",
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/protobuf/descriptor.proto",
        "google/protobuf/timestamp.proto",
      ]),
    );
    // The client-side view: the answer alone must resolve into a working schema.
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: importsFirst(files) }));
    const service = registry.getService("svc.user.v2.UserService");
    expect(service?.methods.map((m) => m.name)).toContain("GetUserByID");
    expect(registry.getMessage("svc.user.v2.User")?.fields.map((f) => f.name)).toContain("user_id");
  });

  it("does not repeat imports already sent on the same stream, but always sends the requested file", async () => {
    const [first, second, third] = await reflectV1(srv.transport, [
      { messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.UserService" } },
      { messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.User" } },
      { messageRequest: { case: "fileByFilename", value: "svc/user/v2/user_service.proto" } },
    ]);
    expect(names(descriptors(first))).toContain("svc/user/v2/user.proto");
    expect(names(descriptors(second))).toEqual(["svc/user/v2/user.proto"]);
    expect(names(descriptors(third))).toEqual(["svc/user/v2/user_service.proto"]);
    // A new stream starts from nothing.
    const [fresh] = await reflectV1(srv.transport, [{ messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.User" } }]);
    expect(names(descriptors(fresh)).length).toBeGreaterThan(1);
  });

  it("finds files by their wire name (with .proto) only", async () => {
    const [byWireName, bareName, unknown] = await reflectV1(srv.transport, [
      { messageRequest: { case: "fileByFilename", value: "svc/user/v2/user.proto" } },
      { messageRequest: { case: "fileByFilename", value: "svc/user/v2/user" } },
      { messageRequest: { case: "fileByFilename", value: "nope.proto" } },
    ]);
    expect(names(descriptors(byWireName))[0]).toBe("svc/user/v2/user.proto");
    expect(errorCode(bareName)).toBe(Code.NotFound);
    expect(errorCode(unknown)).toBe(Code.NotFound);
  });

  it("answers unknown symbols with error_response NOT_FOUND and keeps the stream usable", async () => {
    const responses = await reflectV1(srv.transport, [
      { messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.NoSuchThing" } },
      { messageRequest: { case: "listServices", value: "" } },
    ]);
    expect(responses).toHaveLength(2);
    expect(errorCode(responses[0])).toBe(5);
    expect(responses[1]?.messageResponse.case).toBe("listServicesResponse");
  });

  it("answers extension questions from the registry (google.api.http)", async () => {
    const [numbers, file, unknownNumber, unknownType, noType] = await reflectV1(srv.transport, [
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: GOOGLE_API_HTTP },
        },
      },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
        },
      },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "no.such.Type" } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "svc.user.v2.User" } },
    ]);
    expect(numbers?.messageResponse).toEqual({
      case: "allExtensionNumbersResponse",
      value: expect.objectContaining({ baseTypeName: "google.protobuf.MethodOptions", extensionNumber: [SVC_AUTH_OPTION, GOOGLE_API_HTTP] }),
    });
    expect(names(descriptors(file))[0]).toBe("google/api/annotations.proto");
    expect(errorCode(unknownNumber)).toBe(Code.NotFound);
    expect(errorCode(unknownType)).toBe(Code.NotFound);
    expect(noType?.messageResponse).toEqual({
      case: "allExtensionNumbersResponse",
      value: expect.objectContaining({ baseTypeName: "svc.user.v2.User", extensionNumber: [] }),
    });
  });

  it("echoes valid_host and original_request", async () => {
    const [res] = await reflectV1(srv.transport, [{ host: "iam.example", messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.User" } }]);
    expect(res?.validHost).toBe("iam.example");
    expect(res?.originalRequest?.host).toBe("iam.example");
    expect(res?.originalRequest?.messageRequest).toEqual({ case: "fileContainingSymbol", value: "svc.user.v2.User" });
  });

  it("answers an empty request with INVALID_ARGUMENT instead of ending the stream", async () => {
    const responses = await reflectV1(srv.transport, [{}, { messageRequest: { case: "listServices", value: "" } }]);
    expect(errorCode(responses[0])).toBe(Code.InvalidArgument);
    expect(responses[1]?.messageResponse.case).toBe("listServicesResponse");
  });
});

describe("ServerReflection v1alpha (connect client)", () => {
  it("shares the v1 answers in its own message types", async () => {
    const client = createClient(v1alpha.ServerReflection, srv.transport);
    const requests: MessageInitShape<typeof v1alpha.ServerReflectionRequestSchema>[] = [
      { host: "h", messageRequest: { case: "listServices", value: "*" } },
      { messageRequest: { case: "fileContainingSymbol", value: "svc.user.v2.UserService.GetUserByID" } },
      { messageRequest: { case: "fileContainingSymbol", value: "nope" } },
    ];
    const out: v1alpha.ServerReflectionResponse[] = [];
    for await (const res of client.serverReflectionInfo(fromArray(requests))) out.push(res);
    expect(out[0]?.$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
    expect(out[0]?.validHost).toBe("h");
    expect(out[0]?.messageResponse.case).toBe("listServicesResponse");
    const second = out[1]?.messageResponse;
    expect(second?.case).toBe("fileDescriptorResponse");
    const sent = second?.case === "fileDescriptorResponse" ? second.value.fileDescriptorProto : [];
    expect(sent.map((b) => fromBinary(FileDescriptorProtoSchema, b).name)[0]).toBe("svc/user/v2/user_service.proto");
    expect(out[2]?.messageResponse).toEqual({
      case: "errorResponse",
      value: expect.objectContaining({ errorCode: Code.NotFound }),
    });
  });
});

describe("Health Watch (connect client)", () => {
  it("sends the status, then only changes, and stops polling when the client cancels", async () => {
    const client = createClient(Health, srv.transport);
    const abort = new AbortController();
    const stream = client.watch({ service: UserService.typeName }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await stream.next()).value?.status).toBe(Status.SERVING);
    await delay(200); // several polls with an unchanged status must send nothing
    healthy = false;
    expect((await stream.next()).value?.status).toBe(Status.NOT_SERVING);
    healthy = true;
    expect((await stream.next()).value?.status).toBe(Status.SERVING);
    abort.abort();
    await expect(stream.next()).rejects.toMatchObject({ code: Code.Canceled });

    await delay(100); // let the server see the reset
    const callsAfterCancel = probeCalls;
    await delay(300);
    expect(probeCalls).toBe(callsAfterCancel);
  });

  it("sends SERVICE_UNKNOWN for an unknown name and keeps the stream open", async () => {
    const client = createClient(Health, srv.transport);
    const abort = new AbortController();
    const stream = client.watch({ service: "no.such.Service" }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await stream.next()).value?.status).toBe(Status.SERVICE_UNKNOWN);
    const next = stream.next();
    const outcome = await Promise.race([
      next.then(
        () => "message",
        () => "ended",
      ),
      delay(200, "open"),
    ]);
    expect(outcome).toBe("open");
    abort.abort();
    await expect(next).rejects.toBeInstanceOf(ConnectError);
  });
});

describe("setShuttingDown", () => {
  it("turns every status NOT_SERVING at once, waking Watch streams before the next poll", async () => {
    // A separate server: shutdown is one-way. A long interval proves the wake-up is immediate.
    const down = await startServer(async () => true, 60_000);
    try {
      const client = createClient(Health, down.transport);
      const abort = new AbortController();
      const stream = client.watch({ service: "" }, { signal: abort.signal })[Symbol.asyncIterator]();
      expect((await stream.next()).value?.status).toBe(Status.SERVING);
      const started = Date.now();
      down.setShuttingDown();
      expect((await stream.next()).value?.status).toBe(Status.NOT_SERVING);
      expect(Date.now() - started).toBeLessThan(2_000);
      abort.abort();
      await expect(stream.next()).rejects.toBeInstanceOf(ConnectError);

      for (const service of ["", UserService.typeName]) {
        expect((await client.check({ service })).status).toBe(Status.NOT_SERVING);
      }
      await expect(client.check({ service: "no.such.Service" })).rejects.toMatchObject({ code: Code.NotFound });
      const r = await bufCurl("-d", "{}", `${down.baseUrl}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(r.stdout)).toEqual({ status: "NOT_SERVING" });
    } finally {
      await down.close();
    }
  });
});
