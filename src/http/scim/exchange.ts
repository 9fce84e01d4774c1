// One SCIM request on its way through Node's request and response: the
// path's organization and resource id, the query, the absolute base URL; how
// an answer is written; the query parameters' types.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { NodeResponse } from "../node-types.js";
import { SCIM_CONTENT_TYPE, ScimError } from "./errors.js";

export type Req = IncomingMessage | Http2ServerRequest;
export type Res = NodeResponse;

export interface Exchange {
  req: Req;
  res: Res;
  orgId: string;
  id: string;
  query: Record<string, unknown>;
  /** The absolute `/scim/v2/{orgId}` URL of this request (for meta.location and Location). */
  base: string;
  head: boolean;
}

export function send(x: Exchange, status: number, body?: unknown, extra: Record<string, string> = {}): void {
  // Resources carry personal data: never stored by browsers or shared caches.
  const headers = { ...extra, "cache-control": "no-store" };
  if (body === undefined) {
    x.res.writeHead(status, headers);
    x.res.end();
    return;
  }
  const json = JSON.stringify(body);
  x.res.writeHead(status, { ...headers, "content-type": SCIM_CONTENT_TYPE, "content-length": String(Buffer.byteLength(json)) });
  // HEAD: the headers of the GET, no body.
  if (x.head) x.res.end();
  else (x.res as ServerResponse).end(json);
}

export function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** The scheme and authority the request was sent to, when no public URL is configured. */
export function requestOrigin(req: Req): string {
  const host = header(req, "host") ?? header(req, ":authority") ?? "localhost";
  const proto = (req.socket as { encrypted?: boolean } | undefined)?.encrypted ? "https" : "http";
  return `${proto}://${host}`;
}

/** RFC 7644 §3.1/§8.1: SCIM speaks application/scim+json and accepts application/json. */
export function acceptable(req: Req): boolean {
  const accept = req.headers.accept;
  if (!accept) return true;
  return accept.split(",").some((part) => {
    const type = (part.split(";")[0] ?? "").trim().toLowerCase();
    return type === "application/scim+json" || type === "application/json" || type === "application/*" || type === "*/*";
  });
}

const invalidParam = (detail: string, name: string) => new ScimError(400, "invalidValue", `Errors.Scim.${name}.Invalid`, detail);

export function intParam(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  const n = typeof v === "number" ? v : typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw invalidParam(`${name} must be an integer`, name);
  return n;
}

export function strParam(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalidParam(`${name} must be a string`, name);
  return v;
}

export function listParam(v: unknown, name: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  const raw = Array.isArray(v) ? v.join(",") : strParam(v, name);
  return raw
    ?.split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}
