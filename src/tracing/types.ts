// What the server and the composition root use of tracing when it is on (OTEL_* variables; src/tracing/sdk.ts). Types
// only: importing this file loads no OpenTelemetry module.
import type http from "node:http";
import type http2 from "node:http2";
import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;
type NodeHandler = (req: NodeRequest, res: NodeResponse) => void;

export interface Tracing {
  /** For the start-up log line: the exporters, protocol and endpoint (without credentials), the service name. */
  readonly summary: Record<string, string>;
  /**
   * Wraps the server's request handler (outermost): names the HTTP/1.1 span the http instrumentation started, and
   * starts the SERVER span of an HTTP/2 request (gRPC, Connect, gRPC-Web over h2c), which nothing else instruments.
   */
  serverHandler(next: NodeHandler): NodeHandler;
  /** The Connect interceptor: RPC names, rpc.* attributes and status on the request's span (or a child for REST). */
  readonly interceptor: Interceptor;
  /** The trace id of the span of the request being served, when there is one: the request id in the logs. */
  traceId(): string | undefined;
  /** pino's mixin: trace_id and span_id on every line logged while a span is active. */
  logFields(): Record<string, string>;
  /** SDK diagnostics (an exporter that cannot reach its collector) become log lines. */
  useLogger(log: Logger): void;
  /** Exports what is buffered and stops, within `boundMs`. */
  shutdown(boundMs: number): Promise<void>;
}
