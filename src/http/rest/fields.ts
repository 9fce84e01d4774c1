// Field paths and value conversion: path variables and query parameters are text, converted to the proto3 JSON
// of the field they bind.
import { type DescEnum, type DescField, type DescMessage, fromJson, type JsonObject, type JsonValue, ScalarType } from "@bufbuild/protobuf";
import { DurationSchema, FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { badRequest, quote } from "./errors.js";

/** What a single value of a field is, with list-ness stripped off. */
export type Leaf =
  | { readonly kind: "scalar"; readonly scalar: ScalarType }
  | { readonly kind: "enum"; readonly desc: DescEnum }
  | { readonly kind: "message"; readonly desc: DescMessage };

// Wrappers read like the scalar they wrap.
const WRAPPERS: ReadonlyMap<string, ScalarType> = new Map([
  ["google.protobuf.DoubleValue", ScalarType.DOUBLE],
  ["google.protobuf.FloatValue", ScalarType.FLOAT],
  ["google.protobuf.Int64Value", ScalarType.INT64],
  ["google.protobuf.UInt64Value", ScalarType.UINT64],
  ["google.protobuf.Int32Value", ScalarType.INT32],
  ["google.protobuf.UInt32Value", ScalarType.UINT32],
  ["google.protobuf.BoolValue", ScalarType.BOOL],
  ["google.protobuf.StringValue", ScalarType.STRING],
  ["google.protobuf.BytesValue", ScalarType.BYTES],
]);
// Messages whose JSON form is a string, validated with their own parser.
const STRING_MESSAGES: ReadonlyMap<string, DescMessage> = new Map<string, DescMessage>([
  [TimestampSchema.typeName, TimestampSchema],
  [DurationSchema.typeName, DurationSchema],
  [FieldMaskSchema.typeName, FieldMaskSchema],
]);
// Messages whose JSON is not an object, so "a.b" cannot address into them.
const NON_OBJECT_JSON = new Set([
  ...WRAPPERS.keys(),
  ...STRING_MESSAGES.keys(),
  "google.protobuf.Any",
  "google.protobuf.Struct",
  "google.protobuf.Value",
  "google.protobuf.ListValue",
]);

export function leafOf(field: DescField): Leaf | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return { kind: "scalar", scalar: field.scalar };
    case "enum":
      return { kind: "enum", desc: field.enum };
    case "message":
      return { kind: "message", desc: field.message };
    case "list":
      if (field.listKind === "scalar") return { kind: "scalar", scalar: field.scalar };
      if (field.listKind === "enum") return { kind: "enum", desc: field.enum };
      return { kind: "message", desc: field.message };
    case "map":
      return undefined;
  }
}

export function isTextual(leaf: Leaf): boolean {
  return leaf.kind !== "message" || WRAPPERS.has(leaf.desc.typeName) || STRING_MESSAGES.has(leaf.desc.typeName);
}

export function findField(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

/**
 * Resolves "a.b.c" (proto or JSON names) to fields. Intermediate fields must
 * be singular messages with object JSON; the leaf is checked by the caller.
 * Returns a reason string instead of fields when the path is unusable.
 */
export function resolveFieldPath(message: DescMessage, path: string): DescField[] | string {
  const fields: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const part of path.split(".")) {
    if (current === undefined) return `"${fields.map((f) => f.name).join(".")}" has no sub-fields`;
    const field = findField(current, part);
    if (field === undefined) return `${current.typeName} has no field "${part}"`;
    fields.push(field);
    current = field.fieldKind === "message" && !NON_OBJECT_JSON.has(field.message.typeName) ? field.message : undefined;
  }
  return fields;
}

const INT_RE = /^-?\d+$/;
const FLOAT_RE = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;
const FLOAT32_MAX = 3.4028234663852886e38;

interface IntRange {
  readonly min: bigint;
  readonly max: bigint;
  // The proto3 JSON form of 64-bit integers is a string.
  readonly asString: boolean;
}
const INT32: IntRange = { min: -(2n ** 31n), max: 2n ** 31n - 1n, asString: false };
const UINT32: IntRange = { min: 0n, max: 2n ** 32n - 1n, asString: false };
const INT64: IntRange = { min: -(2n ** 63n), max: 2n ** 63n - 1n, asString: true };
const UINT64: IntRange = { min: 0n, max: 2n ** 64n - 1n, asString: true };
const INT_RANGES: ReadonlyMap<ScalarType, IntRange> = new Map([
  [ScalarType.INT32, INT32],
  [ScalarType.SINT32, INT32],
  [ScalarType.SFIXED32, INT32],
  [ScalarType.UINT32, UINT32],
  [ScalarType.FIXED32, UINT32],
  [ScalarType.INT64, INT64],
  [ScalarType.SINT64, INT64],
  [ScalarType.SFIXED64, INT64],
  [ScalarType.UINT64, UINT64],
  [ScalarType.FIXED64, UINT64],
]);

/**
 * Converts one textual value to the proto3 JSON the Connect parser expects.
 * Returns undefined when the text is not a valid value of the type.
 */
function textToJson(leaf: Leaf, text: string): JsonValue | undefined {
  if (leaf.kind === "enum") return enumToJson(leaf.desc, text);
  if (leaf.kind === "scalar") return scalarToJson(leaf.scalar, text);
  const wrapped = WRAPPERS.get(leaf.desc.typeName);
  if (wrapped !== undefined) return scalarToJson(wrapped, text);
  const schema = STRING_MESSAGES.get(leaf.desc.typeName);
  if (schema === undefined) return undefined;
  try {
    fromJson(schema, text);
    return text;
  } catch {
    return undefined;
  }
}

function scalarToJson(scalar: ScalarType, text: string): JsonValue | undefined {
  const range = INT_RANGES.get(scalar);
  if (range !== undefined) return intToJson(range, text);
  switch (scalar) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL:
      return text === "true" ? true : text === "false" ? false : undefined;
    case ScalarType.BYTES:
      return BASE64_RE.test(text) && text.replace(/=+$/, "").length % 4 !== 1 ? text : undefined;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return floatToJson(scalar === ScalarType.FLOAT ? FLOAT32_MAX : Number.MAX_VALUE, text);
  }
  return undefined;
}

function intToJson(range: IntRange, text: string): JsonValue | undefined {
  if (!INT_RE.test(text)) return undefined;
  const value = BigInt(text);
  if (value < range.min || value > range.max) return undefined;
  return range.asString ? value.toString() : Number(value);
}

function floatToJson(max: number, text: string): JsonValue | undefined {
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") return text;
  if (!FLOAT_RE.test(text)) return undefined;
  const value = Number(text);
  return Math.abs(value) <= max ? value : undefined;
}

function enumToJson(desc: DescEnum, text: string): JsonValue | undefined {
  if (desc.values.some((v) => v.name === text)) return text;
  const number = intToJson(INT32, text);
  return typeof number === "number" ? number : undefined;
}

function leafTypeName(leaf: Leaf): string {
  if (leaf.kind === "scalar") return ScalarType[leaf.scalar].toLowerCase();
  return leaf.desc.typeName;
}

export function convertText(leaf: Leaf, text: string, where: string): JsonValue {
  const json = textToJson(leaf, text);
  if (json === undefined) throw badRequest(`invalid value ${quote(text)} for ${where}: expected ${leafTypeName(leaf)}`);
  return json;
}

export function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The key under which a field is present (clients may use either name). */
