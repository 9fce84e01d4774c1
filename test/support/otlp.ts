// OTLP trace receivers for tests: a plain HTTP server accepting POST /v1/traces in OTLP/JSON or OTLP/protobuf, and an
// h2c server answering gRPC's TraceService/Export (unary, uncompressed), each message decoded here (the protobuf with a generic wire reader and the field numbers of opentelemetry-proto's
// trace/v1/trace.proto, not with the SDK's own serializer), into one flat list of spans.
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { BinaryReader, type WireType } from "@bufbuild/protobuf/wire";

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  scope: string;
  attributes: Record<string, AttributeValue>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT wants it. */
  url: string;
  spans: ReceivedSpan[];
  /** The content types of the exports received. */
  contentTypes: string[];
  /** From now on, answers every export with this HTTP status (OTLP/HTTP only), accepting nothing. */
  refuse(status: number): void;
  /** Resolves when `predicate` holds for the spans received so far (polling), or rejects after `timeoutMs`. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------
// OTLP/JSON (hex ids, enums as numbers, 64-bit integers as numbers or strings)
// ---------------------------------------------------------------------------------------------------------------

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
}
type JsonKeyValue = { key: string; value: JsonAnyValue };

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
  }
  return out;
}

interface JsonRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      scope?: { name?: string };
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: JsonKeyValue[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}

function fromJson(body: Buffer): ReceivedSpan[] {
  const req = JSON.parse(body.toString("utf8")) as JsonRequest;
  return (req.resourceSpans ?? []).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        scope: ss.scope?.name ?? "",
        attributes: jsonAttributes(s.attributes),
        status: { code: s.status?.code ?? 0, ...(s.status?.message ? { message: s.status.message } : {}) },
        resource,
      })),
    );
  });
}

// ---------------------------------------------------------------------------------------------------------------
// OTLP/protobuf (ExportTraceServiceRequest)
// ---------------------------------------------------------------------------------------------------------------

/** Calls `field` for each field of the message in `bytes`; what it does not read is skipped. */
function fields(bytes: Uint8Array, field: (no: number, r: BinaryReader, type: WireType) => boolean): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, type] = r.tag();
    if (!field(no, r, type)) r.skip(type, no);
  }
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function anyValue(bytes: Uint8Array): AttributeValue | undefined {
  let v: AttributeValue | undefined;
  fields(bytes, (no, r) => {
    if (no === 1) v = r.string();
    else if (no === 2) v = r.bool();
    else if (no === 3) v = Number(r.int64());
    else if (no === 4) v = r.double();
    else return false;
    return true;
  });
  return v;
}

function protoAttribute(bytes: Uint8Array, into: Record<string, AttributeValue>): void {
  let key = "";
  let value: AttributeValue | undefined;
  fields(bytes, (no, r) => {
    if (no === 1) key = r.string();
    else if (no === 2) value = anyValue(r.bytes());
    else return false;
    return true;
  });
  if (value !== undefined) into[key] = value;
}

function protoSpan(bytes: Uint8Array, scope: string, resource: Record<string, AttributeValue>): ReceivedSpan {
  const s: ReceivedSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, scope, attributes: {}, status: { code: 0 }, resource };
  fields(bytes, (no, r) => {
    if (no === 1) s.traceId = hex(r.bytes());
    else if (no === 2) s.spanId = hex(r.bytes());
    else if (no === 4) s.parentSpanId = hex(r.bytes());
    else if (no === 5) s.name = r.string();
    else if (no === 6) s.kind = r.int32();
    else if (no === 9) protoAttribute(r.bytes(), s.attributes);
    else if (no === 15)
      fields(r.bytes(), (n, rr) => {
        if (n === 2) s.status.message = rr.string();
        else if (n === 3) s.status.code = rr.int32();
        else return false;
        return true;
      });
    else return false;
    return true;
  });
  return s;
}

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  fields(body, (no, r) => {
    if (no !== 1) return false;
    const resource: Record<string, AttributeValue> = {};
    const scopes: Uint8Array[] = [];
    fields(r.bytes(), (n, rr) => {
      if (n === 1)
        fields(rr.bytes(), (a, ra) => {
          if (a !== 1) return false;
          protoAttribute(ra.bytes(), resource);
          return true;
        });
      else if (n === 2) scopes.push(rr.bytes());
      else return false;
      return true;
    });
    for (const ss of scopes) {
      let scope = "";
      const spans: Uint8Array[] = [];
      fields(ss, (n, rr) => {
        if (n === 1)
          fields(rr.bytes(), (a, ra) => {
            if (a !== 1) return false;
            scope = ra.string();
            return true;
          });
        else if (n === 2) spans.push(rr.bytes());
        else return false;
        return true;
      });
      for (const sp of spans) out.push(protoSpan(sp, scope, resource));
    }
    return true;
  });
  return out;
}

// ---------------------------------------------------------------------------------------------------------------

function receiver(url: string, spans: ReceivedSpan[], contentTypes: string[], close: () => Promise<void>, refuse = (_: number) => {}): OtlpReceiver {
  return {
    url,
    spans,
    contentTypes,
    refuse,
    async waitFor(predicate, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > until)
          throw new Error(`spans expected did not arrive in ${timeoutMs} ms; received:\n${spans.map((s) => `${s.traceId} ${s.name}`).join("\n")}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return spans;
    },
    close,
  };
}

const EXPORT_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/** gRPC over h2c: each request is one length-prefixed ExportTraceServiceRequest; the answer an empty response, status 0. */
export async function startOtlpGrpcReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      if (headers[":path"] !== EXPORT_PATH) {
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, { endStream: true });
        return;
      }
      contentTypes.push(String(headers["content-type"]));
      const frame = Buffer.concat(chunks);
      // The 5-byte prefix: a compressed flag (0 here) and the message's length.
      if (frame[0] === 0) spans.push(...fromProtobuf(frame.subarray(5, 5 + frame.readUInt32BE(1))));
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(Buffer.alloc(5));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return receiver(`http://127.0.0.1:${port}`, spans, contentTypes, () => new Promise<void>((resolve) => server.close(() => resolve())));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  let refusal: number | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const type = String(req.headers["content-type"] ?? "");
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      if (refusal !== undefined) {
        res.writeHead(refusal, { "content-type": "text/plain" }).end("refused by the test");
        return;
      }
      contentTypes.push(type);
      const body = Buffer.concat(chunks);
      const json = type.startsWith("application/json");
      spans.push(...(json ? fromJson(body) : fromProtobuf(body)));
      // An empty ExportTraceServiceResponse: all accepted.
      res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" });
      res.end(json ? "{}" : Buffer.alloc(0));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver(`http://127.0.0.1:${port}`, spans, contentTypes, close, (status) => {
    refusal = status;
  });
}
