// The request and response types of svc's HTTP handlers, which serve HTTP/1.1 and HTTP/2 alike. Since @types/node 24
// the two response classes' writeHead overloads no longer unify, so a call on their union does not type-check; the
// intersection states the one form svc uses (status and a headers object), which both classes implement.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = (ServerResponse | Http2ServerResponse) & { writeHead(statusCode: number, headers?: OutgoingHttpHeaders): unknown };
