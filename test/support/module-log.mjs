// Preloaded into a svc child process (NODE_OPTIONS=--import) by the tracing tests: records every ES module URL under
// @opentelemetry/ that the process resolves (and src/main.ts or dist/'s files, to show the hook ran), into the file SVC_TEST_MODULE_LOG names, to show what tracing loads.
import { register } from "node:module";

if (process.env.SVC_TEST_MODULE_LOG) register("./module-log-hooks.mjs", import.meta.url, { data: { file: process.env.SVC_TEST_MODULE_LOG } });
