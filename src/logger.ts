import { type Logger, pino } from "pino";

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "svc" },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Bearer tokens and passwords must never reach a log line.
    redact: { paths: ["req.headers.authorization", "*.password", "*.token", "*.clientSecret"], censor: "[redacted]" },
  });
}
