// A test-only service covering what the svc protos do not use yet: every
// scalar kind, enums, well-known types, body:"field", response_body, verbs,
// custom methods, additional_bindings and competing templates.
//
// It is built from a FileDescriptorProto at run time instead of being
// generated, so no generated code lives outside gen/. The equivalent proto:
//
//   package transcoder.fixture.v1;
//   enum Color { COLOR_UNSPECIFIED = 0; COLOR_RED = 1; COLOR_BLUE = 2; }
//   message Inner { string inner_name = 1; int32 depth = 2; Inner child = 3; }
//   message Scalars {
//     string name = 1; bool flag = 2; int32 i32 = 3; int64 i64 = 4; uint32 u32 = 5;
//     uint64 u64 = 6; sint32 s32 = 7; fixed64 f64 = 8; float f = 9; double d = 10;
//     Color color = 11; bytes data = 12; google.protobuf.Timestamp at = 13;
//     google.protobuf.Duration ttl = 14; google.protobuf.Int32Value wrapped = 15;
//     google.protobuf.FieldMask mask = 16; repeated string tags = 17;
//     repeated Color colors = 18; Inner inner = 19; repeated Inner inners = 20;
//     map<string, string> labels = 21; string parent_name = 22;
//   }
//   message EchoResponse { Scalars echo = 1; string note = 2; }
//   service Fixture { ...one rpc per entry of RULES below, all Scalars -> EchoResponse }

import type { MessageInitShape } from "@bufbuild/protobuf";
import { create, createFileRegistry, type DescMessage, type DescService, setExtension } from "@bufbuild/protobuf";
import {
  type DescriptorProto,
  DescriptorProtoSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  file_google_protobuf_field_mask,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FieldDescriptorProto_Label as Label,
  type MethodDescriptorProto,
  MethodDescriptorProtoSchema,
  MethodOptionsSchema,
  FieldDescriptorProto_Type as Type,
} from "@bufbuild/protobuf/wkt";
import { file_google_api_annotations, http } from "../../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../../gen/google/api/http_pb.js";

const PKG = "transcoder.fixture.v1";
export type RuleInit = MessageInitShape<typeof HttpRuleSchema>;

/** One rpc per rule; the rpc name is the key. */
export const RULES: Record<string, RuleInit> = {
  GetMessage: {
    pattern: { case: "get", value: "/v1/{name=messages/*}" },
    additionalBindings: [{ pattern: { case: "get", value: "/v1/users/{parent_name}/messages/{inner.inner_name}" } }],
  },
  Search: { pattern: { case: "get", value: "/v1/search" } },
  GetThing: { pattern: { case: "get", value: "/v1/things/{name}" } },
  GetSpecialThing: { pattern: { case: "get", value: "/v1/things/special" } },
  UpdateInner: { pattern: { case: "patch", value: "/v1/things/{name}" }, body: "inner", responseBody: "echo" },
  UpdateNamedInner: { pattern: { case: "patch", value: "/v1/named/{inner.inner_name}" }, body: "inner" },
  ReplaceThing: { pattern: { case: "put", value: "/v1/things/{name}" }, body: "*" },
  CancelThing: { pattern: { case: "post", value: "/v1/{name=things/*}:cancel" }, body: "*", responseBody: "note" },
  GetBook: { pattern: { case: "get", value: "/v1/{name=shelves/*/books/**}" } },
  PurgeCache: { pattern: { case: "custom", value: { kind: "PURGE", path: "/v1/cache/{name}" } } },
  DeleteNumbered: { pattern: { case: "delete", value: "/v1/numbered/{i64}/{color}" } },
};

// protobuf-es takes json_name from the descriptor, where protoc always sets it.
const jsonName = (name: string) => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const field = (name: string, number: number, type: Type, typeName?: string, label = Label.OPTIONAL) => ({
  name,
  jsonName: jsonName(name),
  number,
  type,
  label,
  ...(typeName === undefined ? {} : { typeName }),
});
const scalar = (name: string, number: number, type: Type, label = Label.OPTIONAL) => field(name, number, type, undefined, label);
const message = (name: string, number: number, typeName: string, label = Label.OPTIONAL) => field(name, number, Type.MESSAGE, typeName, label);

function messages(): DescriptorProto[] {
  const inner = create(DescriptorProtoSchema, {
    name: "Inner",
    field: [scalar("inner_name", 1, Type.STRING), scalar("depth", 2, Type.INT32), message("child", 3, `.${PKG}.Inner`)],
  });
  const scalars = create(DescriptorProtoSchema, {
    name: "Scalars",
    field: [
      scalar("name", 1, Type.STRING),
      scalar("flag", 2, Type.BOOL),
      scalar("i32", 3, Type.INT32),
      scalar("i64", 4, Type.INT64),
      scalar("u32", 5, Type.UINT32),
      scalar("u64", 6, Type.UINT64),
      scalar("s32", 7, Type.SINT32),
      scalar("f64", 8, Type.FIXED64),
      scalar("f", 9, Type.FLOAT),
      scalar("d", 10, Type.DOUBLE),
      field("color", 11, Type.ENUM, `.${PKG}.Color`),
      scalar("data", 12, Type.BYTES),
      message("at", 13, ".google.protobuf.Timestamp"),
      message("ttl", 14, ".google.protobuf.Duration"),
      message("wrapped", 15, ".google.protobuf.Int32Value"),
      message("mask", 16, ".google.protobuf.FieldMask"),
      scalar("tags", 17, Type.STRING, Label.REPEATED),
      field("colors", 18, Type.ENUM, `.${PKG}.Color`, Label.REPEATED),
      message("inner", 19, `.${PKG}.Inner`),
      message("inners", 20, `.${PKG}.Inner`, Label.REPEATED),
      message("labels", 21, `.${PKG}.Scalars.LabelsEntry`, Label.REPEATED),
      scalar("parent_name", 22, Type.STRING),
    ],
    nestedType: [
      {
        name: "LabelsEntry",
        field: [scalar("key", 1, Type.STRING), scalar("value", 2, Type.STRING)],
        options: { mapEntry: true },
      },
    ],
  });
  const echo = create(DescriptorProtoSchema, {
    name: "EchoResponse",
    field: [message("echo", 1, `.${PKG}.Scalars`), scalar("note", 2, Type.STRING)],
  });
  return [inner, scalars, echo];
}

function methods(rules: Record<string, RuleInit>): MethodDescriptorProto[] {
  return Object.entries(rules).map(([name, rule]) => {
    const options = create(MethodOptionsSchema);
    setExtension(options, http, create(HttpRuleSchema, rule));
    return create(MethodDescriptorProtoSchema, {
      name,
      inputType: `.${PKG}.Scalars`,
      outputType: `.${PKG}.EchoResponse`,
      options,
    });
  });
}

const DEPENDENCIES = new Map([
  ["google/api/annotations.proto", file_google_api_annotations],
  ["google/protobuf/timestamp.proto", file_google_protobuf_timestamp],
  ["google/protobuf/duration.proto", file_google_protobuf_duration],
  ["google/protobuf/wrappers.proto", file_google_protobuf_wrappers],
  ["google/protobuf/field_mask.proto", file_google_protobuf_field_mask],
]);

function buildRegistry(rules: Record<string, RuleInit>) {
  const file = create(FileDescriptorProtoSchema, {
    name: "transcoder/fixture/v1/fixture.proto",
    package: PKG,
    syntax: "proto3",
    dependency: [...DEPENDENCIES.keys()],
    enumType: [
      {
        name: "Color",
        value: [
          { name: "COLOR_UNSPECIFIED", number: 0 },
          { name: "COLOR_RED", number: 1 },
          { name: "COLOR_BLUE", number: 2 },
        ],
      },
    ],
    messageType: messages(),
    service: [{ name: "Fixture", method: methods(rules) }],
  });
  return createFileRegistry(file, (name) => DEPENDENCIES.get(name));
}

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`fixture: ${what} missing`);
  return value;
}

/** The fixture service with other rules, e.g. broken ones. */
export function fixtureServiceWith(rules: Record<string, RuleInit>): DescService {
  return must(buildRegistry(rules).getService(`${PKG}.Fixture`), "service");
}

const registry = buildRegistry(RULES);
export const FixtureService: DescService = must(registry.getService(`${PKG}.Fixture`), "service");
export const ScalarsSchema: DescMessage = must(registry.getMessage(`${PKG}.Scalars`), "Scalars");
export const EchoResponseSchema: DescMessage = must(registry.getMessage(`${PKG}.EchoResponse`), "EchoResponse");
