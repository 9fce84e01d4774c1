// Whether the standard OTEL_* variables ask for traces. Read before anything else loads (src/main.ts): without them,
// no OpenTelemetry module is loaded at all.

type Env = Record<string, string | undefined>;

/** The trace exporters OTEL_TRACES_EXPORTER names (the SDK's default, "otlp", when it names none). */
export function traceExporters(env: Env): string[] {
  const named = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  return named.length ? named : ["otlp"];
}

/**
 * On when an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an exporter
 * (OTEL_TRACES_EXPORTER) is set, unless OTEL_SDK_DISABLED=true or the exporter list says "none" (as the SDK reads them).
 */
export function tracingRequested(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.trim()) return traceExporters(env)[0] !== "none";
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
