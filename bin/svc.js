#!/usr/bin/env node
// `svc` / `svc start` for those who install the package (npx svc): runs the service as `npm start` does, in this
// process (so that SIGTERM and Ctrl-C reach it directly), configured by the SVC_* environment variables.
import { register } from "tsx/esm/api";

const [command = "start", ...rest] = process.argv.slice(2);
if (command === "--help" || command === "-h" || command === "help") {
  console.log("usage: svc [start]\n\nStarts svc; configuration comes from SVC_* environment variables (see the README).");
  process.exit(0);
}
if (command !== "start" || rest.length) {
  console.error(`svc: unknown command "${[command, ...rest].join(" ")}"\nusage: svc [start]`);
  process.exit(2);
}
register();
await import("../src/main.ts");
