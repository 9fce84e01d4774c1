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

const log = createLogger(config.logLevel);
try {
  const server = await startServer(config, { logger: log });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
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
} catch (err) {
  // The reason in words first (a wrong data directory, a master key that does not fit): the stack is for us.
  log.fatal({ err }, `svc failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
