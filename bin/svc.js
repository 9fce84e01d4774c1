#!/usr/bin/env node
// The `svc` command (and `npm start`, which runs `svc start`): start, migrate, healthcheck, version. Configured by the
// SVC_* environment variables, like the service. start and migrate run in this process (so that SIGTERM and Ctrl-C
// reach the service directly).
//
// Two ways to be installed:
// - a release (npm pack's tarball, `npm install -g svc-<version>.tgz`): it holds the compiled dist/ and no TypeScript
//   sources, and runs dist/ as it is; nothing is built or written next to the package (a read-only root filesystem
//   is fine), and no build tool (esbuild, tsx, TypeScript) is needed;
// - a checkout: dist/ is rebuilt first when the sources changed since (scripts/build.mjs: a check of a few milliseconds
//   when nothing did). Without esbuild (`npm install --omit=dev`) nothing can be built: a dist/ built before runs as
//   it is, and without one svc says how to get one (the dependencies that the bundle holds, Prisma's client among
//   them, are dev dependencies: a production install is the release tarball).
// Plain JavaScript with only Node's own modules loaded up front: `svc healthcheck` runs every few seconds in a
// container and must cost little.
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DIST = path.join(ROOT, "dist");
/** An installed release has no sources to build from. */
const RELEASE = !existsSync(path.join(ROOT, "src", "main.ts"));
const HEALTHCHECK_TIMEOUT_MS = 3_000;

const COMMANDS = {
  start: {
    summary: "run the service in the foreground (the default command)",
    help: `usage: svc start

Runs svc in the foreground until SIGTERM or SIGINT (Ctrl-C), then finishes in-flight requests
(SVC_SHUTDOWN_GRACE_MS) and exits 0. Applies pending database migrations first (under a lock, so that
replicas may start together) and, at the very first start, sets up the instance and its administrator.
Configuration comes from the SVC_* environment variables; a bad value is reported and the exit status is 2.`,
  },
  migrate: {
    summary: "apply the database migrations this version needs, then exit",
    help: `usage: svc migrate

Applies the migrations in prisma/migrations that the database has not seen yet, each in one transaction,
under the same lock as svc start, and exits: a release job run before the new version's replicas start.
PostgreSQL when SVC_DATABASE_URL is set (SVC_MASTER_KEY is not needed), otherwise the embedded database in
SVC_DATA_DIR (which no running svc may hold). Exit status: 0 when the database holds every migration,
1 when they could not be applied, 2 on a configuration error.`,
  },
  healthcheck: {
    summary: "exit 0 when the running svc is ready (GET /readyz), 1 when it is not or does not answer",
    options: ["--url", "--timeout"],
    help: `usage: svc healthcheck [--url URL] [--timeout MS]

Asks the running svc whether it is ready (GET /readyz: the database answers, the migrations are applied,
no shutdown has begun) and exits 0 when it is, 1 when it answers otherwise or not within the timeout:
a container's HEALTHCHECK. The address comes from SVC_HOST and SVC_PROBE_PORT (the probes' own port)
or else SVC_PORT, as svc start reads them (0.0.0.0 and :: are asked on the loopback address);
SVC_HEALTHCHECK_URL or --url names another.

  --url URL      the URL to ask (default: SVC_HEALTHCHECK_URL, else http://SVC_HOST:SVC_PROBE_PORT/readyz,
                 else http://SVC_HOST:SVC_PORT/readyz)
  --timeout MS   how long to wait for the answer, in milliseconds (default ${HEALTHCHECK_TIMEOUT_MS})`,
  },
  version: {
    summary: "print svc's version and Node.js's",
    help: `usage: svc version

Prints svc's version, then the version of Node.js that runs it. (svc --version does the same.)`,
  },
};

const USAGE = `usage: svc [command] [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join("\n")}

Configuration comes from SVC_* environment variables (see docs/deployment.md).
svc <command> --help says more about each command.`;

const isHelp = (a) => a === "--help" || a === "-h";
const argv = process.argv.slice(2);
let [name = "start", ...rest] = argv;
if (isHelp(name) || name === "help") {
  const about = rest[0] && Object.hasOwn(COMMANDS, rest[0]) ? COMMANDS[rest[0]].help : USAGE;
  console.log(about);
  process.exit(0);
}
if (name === "--version" || name === "-v") name = "version";
if (!Object.hasOwn(COMMANDS, name)) {
  console.error(`svc: unknown command "${name}"\n\n${USAGE}`);
  process.exit(2);
}
const command = COMMANDS[name];
if (rest.some(isHelp)) {
  console.log(command.help);
  process.exit(0);
}
const options = parseOptions(name, command, rest);

if (name === "version") {
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  console.log(`svc ${version}\nNode.js ${process.version} (${process.platform} ${process.arch})`);
} else if (name === "healthcheck") {
  process.exit(await healthcheck(options));
} else {
  await runBundle(name === "start" ? "main" : "migrate");
}

/** `--name value` and `--name=value` for the options a command takes; anything else is a usage error (exit 2). */
function parseOptions(name, command, args) {
  const out = {};
  const allowed = command.options ?? [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf("=");
    const key = eq > 0 ? arg.slice(0, eq) : arg;
    if (!allowed.includes(key)) usageError(name, `unexpected argument "${arg}"`);
    const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === "") usageError(name, `${key} needs a value`);
    out[key.slice(2)] = value;
  }
  return out;
}

function usageError(name, message) {
  console.error(`svc ${name}: ${message}\n\n${COMMANDS[name].help}`);
  process.exit(2);
}

/** Where svc start answers /readyz, as the same variables say; 0.0.0.0 and :: are reached on the loopback address. */
function readinessUrl(env) {
  const given = env.SVC_HEALTHCHECK_URL?.trim();
  if (given) return given;
  // The probes' own port when there is one (it answers while a flood of clients fills the main port's queue).
  const name = env.SVC_PROBE_PORT?.trim() ? "SVC_PROBE_PORT" : "SVC_PORT";
  const port = env[name]?.trim() || "8080";
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw new Error(`${name} is "${port}", not a port svc can be asked on: set SVC_HEALTHCHECK_URL (or --url) to its /readyz`);
  }
  let host = env.SVC_HOST?.trim() || "127.0.0.1";
  if (host === "0.0.0.0") host = "127.0.0.1";
  else if (host === "::" || host === "[::]") host = "::1";
  if (host.includes(":") && !host.startsWith("[")) host = `[${host}]`;
  return `http://${host}:${port}/readyz`;
}

/** 0 when GET <url> answers 200 within the timeout, 1 otherwise (Docker's HEALTHCHECK reserves 2). */
async function healthcheck(options) {
  let url;
  let timeoutMs = HEALTHCHECK_TIMEOUT_MS;
  try {
    if (options.timeout !== undefined) {
      timeoutMs = Number(options.timeout);
      if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000) usageError("healthcheck", "--timeout takes milliseconds, 1 to 600000");
    }
    url = new URL(options.url ?? readinessUrl(process.env));
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`${url.href} is not an http or https URL`);
  } catch (err) {
    console.error(`svc healthcheck: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  const client = await import(url.protocol === "https:" ? "node:https" : "node:http");
  return new Promise((resolve) => {
    let answered = false;
    const done = (code, message) => {
      if (answered) return;
      answered = true;
      clearTimeout(deadline);
      (code === 0 ? console.log : console.error)(message);
      resolve(code);
    };
    const req = client.get(url, { agent: false, headers: { accept: "application/json" } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        if (body.length < 1_000) body += chunk;
      });
      res.on("end", () => {
        if (res.statusCode === 200) done(0, `ready: ${url.href}`);
        else done(1, `not ready: ${url.href} answered ${res.statusCode} ${body.trim().slice(0, 200)}`);
      });
      res.on("error", (err) => done(1, `not ready: ${url.href}: ${err.message}`));
    });
    // The whole exchange, connecting included, is bounded: not only an idle socket.
    const deadline = setTimeout(() => {
      done(1, `not ready: ${url.href} did not answer within ${timeoutMs} ms`);
      req.destroy();
    }, timeoutMs);
    req.on("error", (err) => done(1, `not ready: ${url.href}: ${err.code ?? err.message}`));
  });
}

/** Runs dist/<entry>.js ("main": the service, "migrate": svc migrate) in this process, building it first in a checkout. */
async function runBundle(entry) {
  const bundle = path.join(DIST, `${entry}.js`);
  if (RELEASE) {
    if (!existsSync(bundle)) {
      console.error(`svc: ${bundle} is missing: this installation is incomplete (install the release tarball again)`);
      process.exit(1);
    }
    await import(pathToFileURL(bundle).href);
    return;
  }
  const { ensureBuilt, log } = await import("../scripts/build.mjs");
  const writable = (p) => {
    try {
      accessSync(p, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  };
  let built = "current";
  if (existsSync(bundle) && !writable(DIST)) {
    // A checkout built as one user and run as another: dist/ is what it holds, and nothing is rebuilt. A snapshot that
    // does not fit only means that a new embedded database is initialised the slow way.
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
    if (!existsSync(bundle)) {
      console.error(
        "svc: dist/ is not built, and esbuild, which builds it, is not installed (npm install --omit=dev?): install the dev " +
          "dependencies too (npm install), or install the release tarball (npm pack; docs/deployment.md)",
      );
      process.exit(1);
    }
    log("warn", "esbuild is not installed (npm install --omit=dev?): running dist/ as it was built, without checking the sources for changes");
    await import(pathToFileURL(bundle).href);
  } else {
    // Stack traces name dist/main.js; with NODE_OPTIONS=--enable-source-maps they name the TypeScript sources (through
    // dist/main.js.map), which costs some 100 ms at every start and is therefore not the default.
    await import(pathToFileURL(bundle).href);
  }
}
