#!/usr/bin/env node
// `svc` / `svc start` (and `npm start`, which runs this): starts the service in this process (so that SIGTERM and
// Ctrl-C reach it directly), configured by the SVC_* environment variables. It runs the compiled bundle in dist/,
// building it first when the sources changed since (scripts/build.mjs: a check of a few milliseconds when nothing
// did); without esbuild (`npm install --omit=dev`) it runs the TypeScript sources with tsx instead, which starts slower.
const [command = "start", ...rest] = process.argv.slice(2);
if (command === "--help" || command === "-h" || command === "help") {
  console.log("usage: svc [start]\n\nStarts svc; configuration comes from SVC_* environment variables (see the README).");
  process.exit(0);
}
if (command !== "start" || rest.length) {
  console.error(`svc: unknown command "${[command, ...rest].join(" ")}"\nusage: svc [start]`);
  process.exit(2);
}

const { ensureBuilt, log, DIST } = await import("../scripts/build.mjs");
const { accessSync, existsSync, constants } = await import("node:fs");
const writable = (p) => {
  try {
    accessSync(p, constants.W_OK);
    return true;
  } catch {
    return false;
  }
};
let built = "current";
if (existsSync(`${DIST}/main.js`) && !writable(DIST)) {
  // An image built as one user and run as another (USER node): dist/ is what the image holds, and nothing is rebuilt.
  // A snapshot that does not fit only means that a new embedded database is initialised the slow way.
  log("warn", `${DIST} is not writable by this user: running the bundle it holds without checking for changes`);
} else {
  try {
    // The snapshot only serves new embedded databases: a start on PostgreSQL does not wait for one to be made.
    built = await ensureBuilt({ snapshot: !process.env.SVC_DATABASE_URL && process.env.SVC_EMBEDDED_SNAPSHOT !== "false" });
  } catch (err) {
    console.error(`svc: building dist/ failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
if (built === "unavailable") {
  log("warn", "esbuild is not installed (npm install --omit=dev?): running the TypeScript sources with tsx, which starts slower");
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/main.ts");
} else {
  // Stack traces name dist/main.js; with NODE_OPTIONS=--enable-source-maps they name the TypeScript sources (through
  // dist/main.js.map), which costs some 100 ms at every start and is therefore not the default.
  await import("../dist/main.js");
}
