import { type DestinationStream, type Logger, pino } from "pino";
import pretty from "pino-pretty";

export type { Logger };

/**
 * JSON lines, one per event; for a person at a terminal (stdout is a TTY) the same events printed readably by
 * pino-pretty, in this process (no worker thread), unless SVC_LOG_FORMAT says otherwise ("json" or "pretty").
 * `fields`: added to every line (with tracing on, the trace_id and span_id of the active span).
 */
export function createLogger(level: string, format: "auto" | "json" | "pretty" = "auto", fields?: () => Record<string, string>): Logger {
  const readable = format === "pretty" || (format === "auto" && process.stdout.isTTY === true);
  const destination: DestinationStream | undefined = readable
    ? pretty({ colorize: process.stdout.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname,service" })
    : undefined;
  return pino(
    {
      level,
      base: { service: "svc" },
      timestamp: pino.stdTimeFunctions.isoTime,
      ...(fields ? { mixin: fields } : {}),
      // Bearer tokens and passwords must never reach a log line.
      redact: { paths: ["req.headers.authorization", "*.password", "*.token", "*.clientSecret"], censor: "[redacted]" },
    },
    destination,
  );
}
