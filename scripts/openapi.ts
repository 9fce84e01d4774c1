// `npm run generate` (after buf generate): the OpenAPI 3.1 document of the REST API, from the protos' google.api.http
// annotations, message and field comments and types, written to gen/openapi/svc.openapi.json (committed; CI fails when
// it drifts from the protos). JSON follows proto3's canonical JSON mapping, as the REST transcoder answers it.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  createFileRegistry,
  type DescEnum,
  type DescField,
  type DescFile,
  type DescMessage,
  type DescMethod,
  type DescService,
  fromBinary,
  getOption,
  ScalarType,
} from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { http } from "../gen/google/api/annotations_pb.js";
import { API_SERVICES } from "../src/api/services.js";
import { parsePathTemplate } from "../src/http/rest/path-template.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const OUT = path.join(ROOT, "gen/openapi/svc.openapi.json");

type Schema = Record<string, unknown>;

// ---------------------------------------------------------------- comments from the source info

const commentsByFile = new Map<DescFile, Map<string, string>>();

function comments(file: DescFile): Map<string, string> {
  let map = commentsByFile.get(file);
  if (!map) {
    map = new Map();
    for (const loc of file.proto.sourceCodeInfo?.location ?? []) {
      const text = (loc.leadingComments || loc.trailingComments).trim();
      // Comment lines are wrapped at 120 columns in the protos: unwrap them, keep blank lines as paragraph breaks.
      if (text) map.set(loc.path.join("."), text.replace(/\n +/g, "\n").replace(/([^\n])\n(?!\n)/g, "$1 "));
    }
    commentsByFile.set(file, map);
  }
  return map;
}

function messagePath(m: DescMessage): number[] {
  if (m.parent) return [...messagePath(m.parent), 3, m.parent.proto.nestedType.indexOf(m.proto)];
  return [4, m.file.proto.messageType.indexOf(m.proto)];
}

function enumPath(e: DescEnum): number[] {
  if (e.parent) return [...messagePath(e.parent), 4, e.parent.proto.enumType.indexOf(e.proto)];
  return [5, e.file.proto.enumType.indexOf(e.proto)];
}

const commentOf = (file: DescFile, p: number[]) => comments(file).get(p.join("."));
const messageComment = (m: DescMessage) => commentOf(m.file, messagePath(m));
const fieldComment = (f: DescField) => commentOf(f.parent.file, [...messagePath(f.parent), 2, f.parent.proto.field.indexOf(f.proto)]);
const enumComment = (e: DescEnum) => commentOf(e.file, enumPath(e));
function methodComment(m: DescMethod): string | undefined {
  const s = m.parent;
  return commentOf(s.file, [6, s.file.proto.service.indexOf(s.proto), 2, s.proto.method.indexOf(m.proto)]);
}
const serviceComment = (s: DescService) => commentOf(s.file, [6, s.file.proto.service.indexOf(s.proto)]);

// ---------------------------------------------------------------- schemas (proto3 JSON)

const schemas: Record<string, Schema> = {};

const WELL_KNOWN: Record<string, Schema> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time", description: "RFC 3339, UTC" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: 'seconds with an "s" suffix, e.g. "3.5s"' },
  "google.protobuf.Struct": { type: "object", additionalProperties: true },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array", items: {} },
  "google.protobuf.Empty": { type: "object" },
  "google.protobuf.FieldMask": { type: "string", description: "comma-separated field paths in lowerCamelCase" },
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } }, additionalProperties: true },
  "google.protobuf.StringValue": { type: ["string", "null"] },
  "google.protobuf.BoolValue": { type: ["boolean", "null"] },
  "google.protobuf.Int32Value": { type: ["integer", "null"], format: "int32" },
  "google.protobuf.UInt32Value": { type: ["integer", "null"], format: "int32", minimum: 0 },
  "google.protobuf.Int64Value": { type: ["string", "null"], format: "int64" },
  "google.protobuf.UInt64Value": { type: ["string", "null"], format: "int64" },
  "google.protobuf.DoubleValue": { type: ["number", "null"] },
  "google.protobuf.FloatValue": { type: ["number", "null"] },
  "google.protobuf.BytesValue": { type: ["string", "null"], contentEncoding: "base64" },
};

function scalarSchema(t: ScalarType): Schema {
  switch (t) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      // 64-bit integers are strings in proto3 JSON (a number is accepted on input).
      return { type: "string", format: "int64" };
  }
}

function enumRef(e: DescEnum): Schema {
  if (!schemas[e.typeName]) {
    schemas[e.typeName] = { type: "string", enum: e.values.map((v) => v.name), ...(enumComment(e) ? { description: enumComment(e) } : {}) };
  }
  return { $ref: `#/components/schemas/${e.typeName}` };
}

function messageRef(m: DescMessage): Schema {
  const wk = WELL_KNOWN[m.typeName];
  if (wk) return wk;
  if (!schemas[m.typeName]) {
    schemas[m.typeName] = {};
    schemas[m.typeName] = messageSchema(m, new Set());
  }
  return { $ref: `#/components/schemas/${m.typeName}` };
}

function fieldSchema(f: DescField): Schema {
  const one = (): Schema => {
    switch (f.fieldKind) {
      case "scalar":
        return scalarSchema(f.scalar);
      case "enum":
        return enumRef(f.enum);
      case "message":
        return messageRef(f.message);
      case "list":
        return {
          type: "array",
          items: f.listKind === "scalar" ? scalarSchema(f.scalar) : f.listKind === "enum" ? enumRef(f.enum) : messageRef(f.message),
        };
      case "map":
        return {
          type: "object",
          additionalProperties: f.mapKind === "scalar" ? scalarSchema(f.scalar) : f.mapKind === "enum" ? enumRef(f.enum) : messageRef(f.message),
        };
    }
  };
  const s = one();
  const description = [fieldComment(f), f.oneof ? `One of ${f.oneof.fields.map((o) => `\`${o.jsonName}\``).join(", ")}.` : undefined]
    .filter(Boolean)
    .join("\n\n");
  if (!description) return s;
  return s.$ref ? { allOf: [s], description } : { ...s, description };
}

/** A message's schema without the fields in `omit` (those bound to the path, or the body's own field). */
function messageSchema(m: DescMessage, omit: ReadonlySet<string>): Schema {
  const properties: Record<string, Schema> = {};
  for (const f of m.fields) if (!omit.has(f.name)) properties[f.jsonName] = fieldSchema(f);
  const description = messageComment(m);
  return { type: "object", ...(description ? { description } : {}), properties, additionalProperties: false };
}

// ---------------------------------------------------------------- operations

const ERROR_SCHEMA: Schema = {
  type: "object",
  description: "A Connect error: the gRPC code name, a message, and google.rpc.ErrorInfo details whose reason is the stable error id.",
  properties: {
    code: { type: "string", description: 'e.g. "not_found", "invalid_argument", "permission_denied"' },
    message: { type: "string" },
    details: {
      type: "array",
      items: {
        type: "object",
        properties: { type: { type: "string", examples: ["google.rpc.ErrorInfo"] }, value: { type: "string", contentEncoding: "base64" }, debug: {} },
      },
    },
  },
};

function rulesOf(m: DescMethod): { method: string; path: string; body: string }[] {
  const rule = getOption(m, http);
  const all = [rule, ...rule.additionalBindings];
  const out: { method: string; path: string; body: string }[] = [];
  for (const r of all) {
    const p = r.pattern;
    if (p.case === "get" || p.case === "post" || p.case === "put" || p.case === "delete" || p.case === "patch") {
      out.push({ method: p.case, path: p.value, body: r.body });
    }
  }
  return out;
}

function operation(s: DescService, m: DescMethod, rule: { method: string; path: string; body: string }, index: number) {
  const template = parsePathTemplate(rule.path);
  const pathFields = new Set(template.variables.map((v) => v.fieldPath));
  const openPath = rule.path.replace(/\{([^}=]+)(=[^}]*)?\}/g, (_, name: string) => `{${name}}`);
  const parameters: Schema[] = template.variables.map((v) => {
    const field = m.input.fields.find((f) => f.name === v.fieldPath);
    return {
      name: v.fieldPath,
      in: "path",
      required: true,
      schema: field ? fieldSchema(field) : { type: "string" },
    };
  });
  let requestBody: Schema | undefined;
  if (rule.body === "*") {
    const name = `${m.input.typeName}${pathFields.size ? ".Body" : ""}`;
    if (!schemas[name]) schemas[name] = messageSchema(m.input, pathFields);
    requestBody = { required: true, content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` } } } };
  } else if (rule.body) {
    const field = m.input.fields.find((f) => f.name === rule.body);
    if (field) requestBody = { required: true, content: { "application/json": { schema: fieldSchema(field) } } };
  } else {
    // Without a body, the remaining scalar fields travel in the query.
    for (const f of m.input.fields) {
      if (pathFields.has(f.name)) continue;
      if (f.fieldKind === "scalar" || f.fieldKind === "enum" || (f.fieldKind === "list" && f.listKind !== "message")) {
        parameters.push({ name: f.jsonName, in: "query", required: false, schema: fieldSchema(f) });
      }
    }
  }
  const comment = methodComment(m);
  return {
    path: openPath,
    method: rule.method,
    op: {
      operationId: index === 0 ? `${s.name}_${m.name}` : `${s.name}_${m.name}_${index}`,
      tags: [s.name],
      summary: m.name,
      ...(comment ? { description: `${comment}\n\ngRPC/Connect: \`${s.typeName}/${m.name}\`` } : { description: `gRPC/Connect: \`${s.typeName}/${m.name}\`` }),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: {
        "200": { description: "OK", content: { "application/json": { schema: messageRef(m.output) } } },
        default: { description: "An error", content: { "application/json": { schema: { $ref: "#/components/schemas/svc.Error" } } } },
      },
    },
  };
}

function main(): void {
  const image = execFileSync(path.join(ROOT, "node_modules/.bin/buf"), ["build", "-o", "-"], { cwd: ROOT, maxBuffer: 64 << 20 });
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, image));
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: { name: string; description?: string }[] = [];
  schemas["svc.Error"] = ERROR_SCHEMA;
  for (const generated of API_SERVICES) {
    const s = registry.getService(generated.typeName);
    if (!s) throw new Error(`${generated.typeName} is not in the buf image`);
    tags.push({ name: s.name, ...(serviceComment(s) ? { description: serviceComment(s) } : {}) });
    for (const m of s.methods) {
      if (m.methodKind !== "unary") continue;
      rulesOf(m).forEach((rule, i) => {
        const { path: p, method, op } = operation(s, m, rule, i);
        paths[p] ??= {};
        (paths[p] as Record<string, unknown>)[method] = op;
      });
    }
  }
  const sortedSchemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  const doc = {
    openapi: "3.1.0",
    info: {
      title: "svc REST API",
      version: "v2",
      description:
        "The REST mapping of svc's v2 API (the google.api.http annotations of its protos). The same RPCs are served over gRPC, gRPC-Web and Connect. JSON is proto3's canonical mapping: lowerCamelCase names, 64-bit integers as strings, enums by name, timestamps in RFC 3339.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    tags,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "A personal access token or an OAuth access token with the API's audience" } },
      schemas: sortedSchemas,
    },
  };
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(doc, null, 2)}\n`);
}

main();
