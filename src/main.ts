// The entry point (npm start, bin/svc.js). Tracing must start before the application's modules load: the
// instrumentations patch http, pg and express as they are first loaded. So this file imports nothing of the
// application statically, and without the OTEL_* variables that ask for traces no OpenTelemetry module is loaded at
// all (src/tracing/env.ts).
import { tracingRequested } from "./tracing/env.js";

let tracing: import("./tracing/types.js").Tracing | undefined;
if (tracingRequested(process.env)) {
  try {
    tracing = await (await import("./tracing/sdk.js")).startTracing();
  } catch (err) {
    console.error("svc: OpenTelemetry tracing could not start (see the OTEL_* variables):", err);
    process.exit(2);
  }
}
const { run } = await import("./run.js");
await run(tracing);
