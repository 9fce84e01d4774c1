// One call helper for every resource-API test: an RPC by its proto name,
// spoken as REST (the google.api.http rule, see rest.ts) or Connect JSON,
// with replies normalised to a Connect code and the ErrorInfo reason so one
// expectation checks both transports.

import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { expect } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type Json, type JsonObject, type Rpc, restFetch, rpcMethod } from "./rest.js";
import type { TestServer } from "./server.js";

export type { Json, Rpc };

export type Via = "rest" | "connect";
export const VIAS: Via[] = ["rest", "connect"];

const CODE_NAMES: Record<number, string> = {
  3: "invalid_argument",
  5: "not_found",
  6: "already_exists",
  7: "permission_denied",
  9: "failed_precondition",
  13: "internal",
  14: "unavailable",
  16: "unauthenticated",
};

export interface Reply {
  /** "ok" or the Connect error code name. */
  code: string;
  /** google.rpc.ErrorInfo reason of an error. */
  reason?: string;
  status: number;
  body: Json;
}

export async function call(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: JsonObject = {}): Promise<Reply> {
  const method = rpcMethod(rpc);
  const res =
    via === "rest"
      ? await restFetch(t.url, token, rpc, req)
      : await fetch(`${t.url}/${method.parent.typeName}/${method.name}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify(req),
        });
  const text = await res.text();
  const body = text ? JSON.parse(text) : {};
  if (res.status === 200) return { code: "ok", status: 200, body };
  if (via === "rest") {
    return { code: CODE_NAMES[body.code as number] ?? `code ${body.code}`, reason: body.details?.[0]?.reason, status: res.status, body };
  }
  const info = body.details?.find((d: Json) => d.type === "google.rpc.ErrorInfo");
  const reason = info ? fromBinary(ErrorInfoSchema, base64Decode(info.value)).reason : undefined;
  return { code: body.code, reason, status: res.status, body };
}

/** Calls and expects success, returning the JSON body. */
export async function ok(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: JsonObject = {}): Promise<Json> {
  const reply = await call(t, via, token, rpc, req);
  if (reply.code !== "ok") throw new Error(`${rpc} via ${via}: ${reply.code} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** Calls and expects the error code (and reason, when given). */
export async function fails(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: JsonObject, code: string, reason?: string): Promise<Reply> {
  const reply = await call(t, via, token, rpc, req);
  expect({ rpc, via, code: reply.code, ...(reason ? { reason: reply.reason } : {}) }).toEqual({ rpc, via, code, ...(reason ? { reason } : {}) });
  return reply;
}

/** As the instance admin over REST: the way fixtures are made. */
export const admin = (t: TestServer, rpc: Rpc, req: JsonObject = {}): Promise<Json> => ok(t, "rest", t.pat, rpc, req);
