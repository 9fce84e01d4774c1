// When the OTEL_* variables turn tracing on (src/tracing/env.ts): the same reading as the SDK's.
import { describe, expect, it } from "@jest/globals";
import { traceExporters, tracingRequested } from "../../src/tracing/env.js";

describe("tracingRequested", () => {
  it("is off with no OTEL_* variable, or only unrelated ones", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: "svc", OTEL_RESOURCE_ATTRIBUTES: "a=b", OTEL_TRACES_SAMPLER: "always_on" })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(false);
  });

  it("is on with an OTLP endpoint, general or for traces", () => {
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
  });

  it("is on with an exporter named, and off when it starts with none", () => {
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "console" })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: " None " })).toBe(false);
    // The SDK reads "none" among other names as its default exporter.
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "otlp,none" })).toBe(true);
  });

  it("is off when OTEL_SDK_DISABLED=true, whatever else is set", () => {
    expect(tracingRequested({ OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: "TRUE", OTEL_TRACES_EXPORTER: "otlp" })).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: "false", OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
  });

  it("names otlp when no exporter is named", () => {
    expect(traceExporters({})).toEqual(["otlp"]);
    expect(traceExporters({ OTEL_TRACES_EXPORTER: "OTLP, console" })).toEqual(["otlp", "console"]);
  });
});
