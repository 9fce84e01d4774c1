// The process around the server: configuration, the logger, signals and exit codes (src/main.ts loads it, after
// starting tracing when the OTEL_* variables ask for it).
import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { startServer } from "./server.js";
import type { Tracing } from "./tracing/types.js";

/** How long the exit waits for the spans still buffered to reach the collector. */
const TRACE_FLUSH_BOUND_MS = 2_000;

export async function run(tracing?: Tracing): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(2);
  }

  const log = createLogger(config.logLevel, config.logFormat, tracing?.logFields);
  if (tracing) {
    tracing.useLogger(log);
    log.info(tracing.summary, "tracing on (OpenTelemetry)");
  }
  // Spans buffered when svc stops are exported first, within a bound: a collector that does not answer must not hold the exit.
  const exit = (code: number) => {
    if (!tracing) process.exit(code);
    void tracing.shutdown(TRACE_FLUSH_BOUND_MS).finally(() => process.exit(code));
  };
  // Handlers first: "svc listening" is logged before startServer returns, and a SIGTERM that arrives in between (an
  // orchestrator stopping a replica that just came up) must still shut down gracefully, not kill the process.
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let stopping: string | undefined;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = signal;
    if (!server) return; // closed as soon as the start completes
    log.info({ signal }, "shutting down: finishing in-flight requests");
    server.close().then(
      () => exit(0),
      (err) => {
        log.error({ err }, "shutdown failed");
        exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  try {
    server = await startServer(config, { logger: log, tracing });
    if (stopping) {
      const signal = stopping;
      stopping = undefined;
      stop(signal);
    }
  } catch (err) {
    // The reason in words first (a wrong data directory, a master key that does not fit): the stack is for us.
    log.fatal({ err }, `svc failed to start: ${err instanceof Error ? err.message : String(err)}`);
    exit(1);
  }
}
