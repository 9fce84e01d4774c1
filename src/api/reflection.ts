// gRPC server reflection (grpc.reflection.v1 and the deprecated v1alpha that
// older clients still ask for) for a connect-node router. Neither connect-es
// nor npm offers it, and tools such as buf curl and grpcurl need it to call
// the API without a local copy of the protos.

import { create, createFileRegistry, type DescEnum, type DescFile, type DescMessage, type DescService, type FileRegistry, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** A reflection question, independent of the protocol version (both generate the same shape). */
type Query =
  | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: undefined; value?: undefined };

/** A reflection answer, independent of the protocol version. */
type Answer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Everything reflection can talk about, built once at registration. */
interface Catalog {
  readonly serviceNames: string[];
  readonly registry: FileRegistry;
  /** Wire file name (with ".proto") → file. */
  readonly files: Map<string, DescFile>;
  /** Every fully-qualified name a client may ask for → the file that declares it. */
  readonly symbols: Map<string, DescFile>;
  /** Encoded FileDescriptorProto per wire file name, filled lazily. */
  readonly encoded: Map<string, Uint8Array>;
}

/** Registers grpc.reflection.v1.ServerReflection and grpc.reflection.v1alpha.ServerReflection answering for `services` (plus the reflection and health services themselves). */
/**
 * Files no service imports but clients need to decode what svc sends: the error details (google.rpc.Status in
 * grpc-status-details-bin, with ErrorInfo in its Any), so that a gRPC client resolving them over reflection can.
 */
const DETAIL_FILES: DescFile[] = [file_google_rpc_status, file_google_rpc_error_details];

export function registerReflection(router: ConnectRouter, services: DescService[]): void {
  const catalog = buildCatalog([...services, v1.ServerReflection, v1alpha.ServerReflection, Health], DETAIL_FILES);
  router.service(v1.ServerReflection, {
    serverReflectionInfo: (requests) =>
      converse(requests, catalog, (req, answer) =>
        create(v1.ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse: answer }),
      ),
  });
  router.service(v1alpha.ServerReflection, {
    serverReflectionInfo: (requests) =>
      converse(requests, catalog, (req, answer) =>
        create(v1alpha.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse: answer,
        }),
      ),
  });
}

/**
 * One reflection stream. The set of files already sent lives per stream:
 * clients cache what they received on the stream, so dependencies they
 * already hold are not repeated (the same contract as grpc-go).
 */
async function* converse<Req extends { host: string; messageRequest: Query }, Res>(
  requests: AsyncIterable<Req>,
  catalog: Catalog,
  wrap: (req: Req, answer: Answer) => Res,
): AsyncGenerator<Res> {
  const sent = new Set<string>();
  for await (const req of requests) {
    yield wrap(req, answer(catalog, req.messageRequest, sent));
  }
}

// Errors go into error_response rather than a thrown status: a thrown error
// would end the whole bidi stream, and clients keep asking on the same one.
function answer(catalog: Catalog, query: Query, sent: Set<string>): Answer {
  switch (query.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: catalog.serviceNames.map((name) => ({ name })) } };
    case "fileByFilename":
      return fileAnswer(catalog, catalog.files.get(query.value), sent, `file not found: ${query.value}`);
    case "fileContainingSymbol":
      return fileAnswer(catalog, catalog.symbols.get(query.value), sent, `symbol not found: ${query.value}`);
    case "fileContainingExtension":
      return extensionFileAnswer(catalog, query.value.containingType, query.value.extensionNumber, sent);
    case "allExtensionNumbersOfType":
      return extensionNumbersAnswer(catalog, query.value);
    default:
      return errorAnswer(Code.InvalidArgument, "message_request is not set");
  }
}

function fileAnswer(catalog: Catalog, file: DescFile | undefined, sent: Set<string>, notFound: string): Answer {
  if (!file) {
    return errorAnswer(Code.NotFound, notFound);
  }
  const fileDescriptorProto = withDependencies(file, sent).map((f) => encode(catalog, f));
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto } };
}

function extensionFileAnswer(catalog: Catalog, typeName: string, number: number, sent: Set<string>): Answer {
  const extendee = catalog.registry.getMessage(typeName);
  const extension = extendee && catalog.registry.getExtensionFor(extendee, number);
  return fileAnswer(catalog, extension?.file, sent, `extension ${number} of ${typeName} not found`);
}

function extensionNumbersAnswer(catalog: Catalog, typeName: string): Answer {
  if (!catalog.registry.getMessage(typeName)) {
    return errorAnswer(Code.NotFound, `type not found: ${typeName}`);
  }
  const extensionNumber: number[] = [];
  for (const type of catalog.registry) {
    if (type.kind === "extension" && type.extendee.typeName === typeName) {
      extensionNumber.push(type.number);
    }
  }
  extensionNumber.sort((a, b) => a - b);
  return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber } };
}

function errorAnswer(code: Code, errorMessage: string): Answer {
  return { case: "errorResponse", value: { errorCode: code, errorMessage } };
}

/**
 * The requested file first, then its transitive imports breadth-first. The
 * requested file is always included, even if sent before, so that every
 * successful answer carries the file that was asked for; imports go out only
 * once per stream.
 */
function withDependencies(file: DescFile, sent: Set<string>): DescFile[] {
  const out: DescFile[] = [];
  const queue = [file];
  for (let next = queue.shift(); next; next = queue.shift()) {
    const name = next.proto.name;
    if (out.length === 0 || !sent.has(name)) {
      sent.add(name);
      out.push(next);
    }
    queue.push(...next.dependencies.filter((dep) => !sent.has(dep.proto.name)));
  }
  return out;
}

function encode(catalog: Catalog, file: DescFile): Uint8Array {
  let bytes = catalog.encoded.get(file.proto.name);
  if (!bytes) {
    bytes = toBinary(FileDescriptorProtoSchema, file.proto);
    catalog.encoded.set(file.proto.name, bytes);
  }
  return bytes;
}

function buildCatalog(services: DescService[], extraFiles: DescFile[]): Catalog {
  const registry = buildRegistry(services, extraFiles);
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  for (const file of registry.files) {
    files.set(file.proto.name, file);
    indexSymbols(file, symbols);
  }
  const serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
  return { serviceNames, registry, files, symbols, encoded: new Map() };
}

/**
 * A registry over the services' files and everything they import, so that
 * extensions declared in imports (google.api.http on MethodOptions) are
 * answerable too. createFileRegistry only takes descriptor protos plus a
 * resolver, so each root is handed in as its proto and its imports resolve to
 * the already-linked DescFiles found by walking `dependencies`.
 */
function buildRegistry(services: DescService[], extraFiles: DescFile[]): FileRegistry {
  const roots = [...new Set([...services.map((s) => s.file), ...extraFiles])];
  const linked = new Map<string, DescFile>();
  for (const root of roots) {
    collectFiles(root, linked);
  }
  const perRoot = roots.map((root) => createFileRegistry(root.proto, (name) => linked.get(name)));
  return createFileRegistry(...perRoot);
}

function collectFiles(file: DescFile, into: Map<string, DescFile>): void {
  if (into.has(file.proto.name)) {
    return;
  }
  into.set(file.proto.name, file);
  for (const dep of file.dependencies) {
    collectFiles(dep, into);
  }
}

/**
 * grpc-go resolves any descriptor name (protoregistry.FindDescriptorByName),
 * so besides types this also indexes methods, fields, oneofs and enum values;
 * enum values are named as siblings of their enum, as in protobuf scoping.
 */
function indexSymbols(file: DescFile, symbols: Map<string, DescFile>): void {
  for (const type of nestedTypes(file)) {
    symbols.set(type.typeName, file);
    switch (type.kind) {
      case "message":
        indexMessageMembers(type, file, symbols);
        break;
      case "enum":
        indexEnumValues(type, file, symbols);
        break;
      case "service":
        for (const method of type.methods) {
          symbols.set(`${type.typeName}.${method.name}`, file);
        }
        break;
      case "extension":
        break;
    }
  }
}

function indexMessageMembers(message: DescMessage, file: DescFile, symbols: Map<string, DescFile>): void {
  for (const member of [...message.fields, ...message.oneofs]) {
    symbols.set(`${message.typeName}.${member.name}`, file);
  }
}

function indexEnumValues(enumType: DescEnum, file: DescFile, symbols: Map<string, DescFile>): void {
  const dot = enumType.typeName.lastIndexOf(".");
  const scope = dot < 0 ? "" : `${enumType.typeName.slice(0, dot)}.`;
  for (const value of enumType.values) {
    symbols.set(`${scope}${value.name}`, file);
  }
}
