import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { startServer } from "./server.js";

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(2);
}

const log = createLogger(config.logLevel, config.logFormat);
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
    () => process.exit(0),
    (err) => {
      log.error({ err }, "shutdown failed");
      process.exit(1);
    },
  );
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
try {
  server = await startServer(config, { logger: log });
  if (stopping) {
    const signal = stopping;
    stopping = undefined;
    stop(signal);
  }
} catch (err) {
  // The reason in words first (a wrong data directory, a master key that does not fit): the stack is for us.
  log.fatal({ err }, `svc failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
