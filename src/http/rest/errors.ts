// The REST errors: the ones the transcoder answers itself (RestError), and a Connect error body read back as
// grpc-gateway's error details.
import { create, type JsonObject, type JsonValue, type Registry, toJson } from "@bufbuild/protobuf";
import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import { AnySchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { isObject } from "./fields.js";

/** A failure the transcoder answers itself, before or instead of the handler. */
export class RestError extends Error {
  constructor(
    readonly status: number,
    readonly code: Code,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new RestError(400, Code.InvalidArgument, message);

export const quote = (value: string) => JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);

interface ConnectDetail {
  readonly type: string;
  readonly value: string;
}

export function parseConnectError(bytes: Buffer, status: number): { code: Code; message: string; details: ConnectDetail[] } {
  let json: JsonValue | undefined;
  try {
    json = JSON.parse(bytes.toString("utf8")) as JsonValue;
  } catch {
    json = undefined;
  }
  const code = isObject(json) && typeof json.code === "string" ? codeFromString(json.code) : undefined;
  if (!isObject(json) || code === undefined) {
    // Not a Connect error body (e.g. 415 when the router has the Connect
    // protocol disabled): a server misconfiguration, not a client mistake.
    return { code: Code.Internal, message: `unexpected HTTP ${status} from the Connect handler`, details: [] };
  }
  const details = Array.isArray(json.details) ? json.details.filter(isDetail) : [];
  return { code, message: typeof json.message === "string" ? json.message : "", details };
}

function isDetail(value: JsonValue): value is JsonObject & ConnectDetail {
  return isObject(value) && typeof value.type === "string" && typeof value.value === "string";
}

/** A detail as google.protobuf.Any JSON; undecodable ones keep their bytes. */
export function detailToJson(detail: ConnectDetail, registry: Registry): JsonValue {
  const typeUrl = `type.googleapis.com/${detail.type}`;
  try {
    const value = base64Decode(detail.value);
    try {
      return toJson(AnySchema, create(AnySchema, { typeUrl, value }), { registry });
    } catch {
      // Connect sends unpadded base64; grpc-gateway clients expect padding.
      return { "@type": typeUrl, value: base64Encode(value) };
    }
  } catch {
    return { "@type": typeUrl, value: detail.value };
  }
}
