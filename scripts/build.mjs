// Ahead-of-time build of svc into dist/ (gitignored), so that a start loads one compiled file instead of transpiling
// ~330 TypeScript files with tsx, and a new embedded database is copied from a snapshot instead of running PGlite's
// initdb and every migration:
//   dist/main.js (+ .map)          src/main.ts and src/, gen/ and the pure-JS dependencies bundled by esbuild
//   dist/migrate.js                `svc migrate` (src/migrate-main.ts): applies pending migrations and exits
//   dist/make-snapshot.js          the snapshot maker (src/make-snapshot.ts)
//   dist/pglite-snapshot/          an initialised and migrated PGlite data directory with manifest.json (the PGlite
//                                  version and the migrations it holds, by checksum)
//   dist/build.json                the fingerprint of the inputs the bundle was built from
//   dist/console/                  the admin console (console/, a browser app) built by Vite, served at /ui/console
//   dist/console.json              the fingerprint of the console's inputs
// `node scripts/build.mjs` builds what is out of date; `svc start` (bin/svc.js, hence `npm start`) calls ensureBuilt()
// first, and `npm install` runs it as the root package's `prepare` script. Plain JavaScript: the up-to-date check runs
// at every start and must not wait for a TypeScript loader.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const DIST = path.join(ROOT, "dist");
const STAMP = path.join(DIST, "build.json");
const SNAPSHOT = path.join(DIST, "pglite-snapshot");
const LOCK = path.join(DIST, ".build.lock");
const CONSOLE_LOCK = path.join(DIST, ".console.lock");
const MIGRATIONS = path.join(ROOT, "prisma", "migrations");
/** What the bundle is made of: a change to any of these (by size, mtime or presence) rebuilds it. */
const INPUTS = ["src", "gen", "package.json", "package-lock.json", "scripts/build.mjs"];
/** What the console's bundle is made of. */
const CONSOLE_INPUTS = ["console", "gen/svc", "gen/google", "package-lock.json"];
const CONSOLE_STAMP = path.join(DIST, "console.json");
const CONSOLE_DIST = path.join(DIST, "console");

/**
 * Left to Node at run time rather than bundled: packages that load files of their own beside their code (wasm, native
 * addons, worker scripts, static assets), and those that instrumentation patches when they are loaded (pg, express).
 * Prisma's client and driver adapters are bundled (its query compiler comes as a JavaScript module holding the wasm):
 * the release installs them not at all, which saves @prisma/client's 72 MB of other databases' compilers. The schema
 * engine stays outside: it loads its wasm file at run time (only scripts and tests do).
 */
const EXTERNAL = [
  "@electric-sql/pglite",
  "@prisma/schema-engine-wasm",
  "@node-rs/*",
  "pino",
  "pino-pretty",
  "swagger-ui-dist",
  "@simplewebauthn/browser",
  "@opentelemetry/*",
  // One instance with @opentelemetry/instrumentation's: its Hook() registrations must reach the loader hooks svc registers.
  "import-in-the-middle",
  "import-in-the-middle/*",
  "pg",
  "pg-native",
  "express",
];

/**
 * A log line as the service writes them (src/logger.ts): JSON in pino's shape, or a readable line at a terminal or with
 * SVC_LOG_FORMAT=pretty. The build runs before the service's logger exists.
 */
export function log(level, msg, fields = {}) {
  const format = process.env.SVC_LOG_FORMAT ?? "auto";
  if (format === "pretty" || (format === "auto" && process.stdout.isTTY)) {
    process.stdout.write(`[${new Date().toTimeString().slice(0, 8)}] ${level.toUpperCase()}: ${msg}\n`);
    return;
  }
  const levels = { info: 30, warn: 40, error: 50 };
  const line = { level: levels[level], time: new Date().toISOString(), service: "svc", ...fields, msg };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Synchronous: ~450 stats one after the other through the thread pool took up to 80 ms on a loaded machine. */
function walk(rel, out) {
  const abs = path.join(ROOT, rel);
  let st;
  try {
    st = statSync(abs);
  } catch {
    return;
  }
  if (!st.isDirectory()) {
    out.push(`${rel}\0${st.size}\0${st.mtimeMs}`);
    return;
  }
  for (const e of readdirSync(abs, { withFileTypes: true })) walk(path.join(rel, e.name), out);
}

/** The inputs' fingerprint: every file's path, size and mtime (a few ms for the ~450 files). */
function fingerprint(inputs = INPUTS) {
  const lines = [];
  for (const rel of inputs) walk(rel, lines);
  return createHash("sha256").update(lines.sort().join("\n")).digest("hex");
}

/** The PGlite version installed: a snapshot made by another one is not used. */
async function pgliteVersion() {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  let dir = path.dirname(entry);
  while (dir !== path.dirname(dir)) {
    const pkg = await readFile(path.join(dir, "package.json"), "utf8").catch(() => undefined);
    if (pkg && JSON.parse(pkg).name === "@electric-sql/pglite") return JSON.parse(pkg).version;
    dir = path.dirname(dir);
  }
  throw new Error("cannot find @electric-sql/pglite's package.json");
}

/** The committed migrations as the snapshot manifest lists them (name and sha256 of migration.sql, in order). */
async function migrationSet() {
  const dirs = (await readdir(MIGRATIONS, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => e.name);
  const set = [];
  for (const name of dirs.sort()) {
    const sql = await readFile(path.join(MIGRATIONS, name, "migration.sql"), "utf8");
    set.push({ name, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  return set;
}

async function readJson(file) {
  try {
    return JSON.parse(await readFile(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** What is out of date: the bundle (inputs changed), the snapshot (another PGlite or another set of migrations). */
async function outOfDate(wantSnapshot) {
  const [stamp, inputs, manifest, pglite, migrations] = await Promise.all([
    readJson(STAMP),
    fingerprint(),
    readJson(path.join(SNAPSHOT, "manifest.json")),
    pgliteVersion(),
    migrationSet(),
  ]);
  // A snapshot without its archive is one of the unpacked data directories made before.
  const snapshotCurrent =
    manifest?.pglite === pglite && JSON.stringify(manifest?.migrations) === JSON.stringify(migrations) && existsSync(path.join(SNAPSHOT, "pglite.archive.gz"));
  const outputs = ["main.js", "migrate.js", "make-snapshot.js"].every((f) => existsSync(path.join(DIST, f)));
  return { bundle: stamp?.inputs !== inputs || !outputs, snapshot: wantSnapshot && !snapshotCurrent, inputs };
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
};

/** One builder at a time (test workers and several `npm start`s may all find dist/ out of date); others wait. */
async function lock(file = LOCK) {
  await mkdir(DIST, { recursive: true });
  const until = Date.now() + 180_000;
  for (;;) {
    try {
      const handle = await open(file, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(file, { force: true });
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      const pid = Number((await readFile(file, "utf8").catch(() => "")).trim());
      if (pid && !alive(pid)) await rm(file, { force: true });
      else if (Date.now() > until) throw new Error(`dist/ has been locked by process ${pid} for 3 minutes (${file})`);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Rewrites import.meta.url and import.meta.dirname in svc's own modules to the module's place in the source tree: the
 * code finds the files beside it (login assets, messages, migrations, the OpenAPI document) and resolves packages from
 * there, bundled into dist/main.js or not. Relative to the bundle, so the checkout may move.
 */
const sourceLocation = {
  name: "source-location",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await readFile(args.path, "utf8");
      if (!text.includes("import.meta.")) return undefined;
      const file = path.relative(DIST, args.path).split(path.sep).join("/");
      const dir = path.posix.dirname(file);
      return {
        loader: "ts",
        contents: text
          .replaceAll("import.meta.url", `new URL(${JSON.stringify(file)}, import.meta.url).href`)
          .replaceAll("import.meta.dirname", `(import.meta.dirname + ${JSON.stringify(`/${dir}`)})`),
      };
    });
  },
};

async function compile(esbuild, inputs) {
  const started = performance.now();
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { main: "src/main.ts", migrate: "src/migrate-main.ts", "make-snapshot": "src/make-snapshot.ts" },
    outdir: DIST,
    bundle: true,
    platform: "node",
    format: "esm",
    // Dynamic imports stay chunks of their own: src/main.ts starts tracing before it imports the application, and the
    // packages left outside the bundle (pg, express) must not be imported before that, as one file would hoist them.
    splitting: true,
    target: "node20",
    external: EXTERNAL,
    sourcemap: "linked",
    // Error and class names stay as written (logs, `err.name`).
    keepNames: true,
    // The bundled CommonJS packages call require(): give the ES module one.
    banner: { js: 'import { createRequire as __svcCreateRequire } from "node:module"; const require = __svcCreateRequire(import.meta.url);' },
    plugins: [sourceLocation],
    write: false,
    logLevel: "silent",
  });
  // Each file is written beside and renamed into place: a process starting meanwhile reads the old or the new one.
  for (const f of result.outputFiles) {
    const tmp = `${f.path}.${process.pid}.tmp`;
    await writeFile(tmp, f.contents);
    await rename(tmp, f.path);
  }
  // Chunks of earlier builds (their names carry a content hash) go: the new entry files no longer name them.
  const current = new Set(result.outputFiles.map((f) => path.basename(f.path)));
  for (const name of await readdir(DIST)) {
    if (/^[\w.-]+-[A-Z0-9]{8}\.js(\.map)?$/.test(name) && !current.has(name)) await rm(path.join(DIST, name), { force: true });
  }
  await writeFile(STAMP, `${JSON.stringify({ inputs, esbuild: esbuild.version, builtAt: new Date().toISOString() })}\n`);
  return Math.round(performance.now() - started);
}

/** Runs dist/make-snapshot.js in a process of its own (PGlite's memory goes with it) and moves the result into place. */
async function snapshot() {
  const started = performance.now();
  const staging = `${SNAPSHOT}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  const child = spawn(process.execPath, [path.join(DIST, "make-snapshot.js"), staging], { stdio: ["ignore", "pipe", "pipe"] });
  // Stopped meanwhile (SIGTERM to `npm start`, Ctrl-C): the child goes too, and this process with the status a signal
  // gives (143, 130). The next build removes what they left.
  const signals = ["SIGTERM", "SIGINT"];
  const forward = (signal) => {
    child.kill("SIGKILL");
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  for (const s of signals) process.once(s, forward);
  let output = "";
  child.stdout.on("data", (c) => {
    output += c;
  });
  child.stderr.on("data", (c) => {
    output += c;
  });
  const code = await new Promise((resolve) => child.once("close", resolve));
  for (const s of signals) process.removeListener(s, forward);
  if (code !== 0) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`making the embedded database snapshot failed (exit ${code}):\n${output}`);
  }
  await rm(SNAPSHOT, { recursive: true, force: true });
  await rename(staging, SNAPSHOT);
  return Math.round(performance.now() - started);
}

/**
 * Builds the console with Vite in a process of its own (its memory goes with it) when its inputs changed. Returns
 * "current", "built", or "unavailable" when Vite is not installed (`npm install --omit=dev`: svc then answers
 * /ui/console with a 503 that says so).
 */
export async function ensureConsoleBuilt() {
  const inputs = fingerprint(CONSOLE_INPUTS);
  const current = () => readJson(CONSOLE_STAMP).then((stamp) => stamp?.inputs === inputs && existsSync(path.join(CONSOLE_DIST, "index.html")));
  if (await current()) return "current";
  let vite;
  try {
    vite = path.join(path.dirname(createRequire(import.meta.url).resolve("vite/package.json")), "bin", "vite.js");
  } catch {
    return "unavailable";
  }
  const release = await lock(CONSOLE_LOCK);
  try {
    if (await current()) return "current";
    const started = performance.now();
    const child = spawn(process.execPath, [vite, "build", "--config", path.join(ROOT, "console", "vite.config.ts"), "--logLevel", "error"], {
      cwd: ROOT,
      // Always React's production build: under jest NODE_ENV is "test", which Vite passes on to the bundle (React's
      // development build, StrictMode's double effects: every page's first request sent twice, the first aborted).
      env: { ...process.env, NODE_ENV: "production" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c) => {
      output += c;
    });
    child.stderr.on("data", (c) => {
      output += c;
    });
    const code = await new Promise((resolve) => child.once("close", resolve));
    if (code !== 0) throw new Error(`building the console failed (exit ${code}):\n${output}`);
    await writeFile(CONSOLE_STAMP, `${JSON.stringify({ inputs, builtAt: new Date().toISOString() })}\n`);
    const ms = Math.round(performance.now() - started);
    log("info", `start-up: building the admin console (dist/console) took ${ms} ms`, { ms });
    return "built";
  } finally {
    await release();
  }
}

/**
 * Brings dist/ up to date. Returns "current" (nothing to do), "built", or "unavailable" when the bundle is out of date
 * and esbuild is not installed (`npm install --omit=dev`): the caller then runs the dist/ it has, if any. Without
 * `snapshot` (a start on PostgreSQL) an out-of-date snapshot is left for a later build.
 */
export async function ensureBuilt({ snapshot: wantSnapshot = true } = {}) {
  // The console is built apart from the server's bundle: the server runs without it (and says so at /ui/console).
  try {
    const consoleOutcome = await ensureConsoleBuilt();
    if (consoleOutcome === "unavailable") log("warn", "vite is not installed (npm install --omit=dev?): the admin console at /ui/console is not built");
  } catch (err) {
    log("warn", err instanceof Error ? err.message : String(err));
  }
  const first = await outOfDate(wantSnapshot);
  if (!first.bundle && !first.snapshot) return "current";
  let esbuild;
  if (first.bundle) {
    try {
      esbuild = await import("esbuild");
    } catch {
      return "unavailable";
    }
  }
  const release = await lock();
  try {
    // What a build killed halfway left behind (no other builder runs: this one holds the lock).
    for (const name of await readdir(DIST)) {
      if (/\.\d+\.tmp$/.test(name)) await rm(path.join(DIST, name), { recursive: true, force: true });
    }
    // Another process may have built it while this one waited.
    const stale = await outOfDate(wantSnapshot);
    if (stale.bundle) {
      esbuild ??= await import("esbuild");
      const ms = await compile(esbuild, stale.inputs);
      log("info", `start-up: compiling the TypeScript sources into dist/ took ${ms} ms`, { ms });
    }
    if (stale.snapshot) {
      // Only an optimisation: without it a new embedded database is initialised and migrated at its first start.
      try {
        const ms = await snapshot();
        log("info", `start-up: making the embedded database snapshot (dist/pglite-snapshot) took ${ms} ms`, { ms });
      } catch (err) {
        log("warn", err instanceof Error ? err.message : String(err));
      }
    }
    return stale.bundle || stale.snapshot ? "built" : "current";
  } finally {
    await release();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const outcome = await ensureBuilt();
    if (outcome === "unavailable") log("warn", "esbuild is not installed (npm install --omit=dev?): dist/ cannot be built");
  } catch (err) {
    log("error", `build failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
