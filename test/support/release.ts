// The release path as operators take it (issue 26): `npm pack` in a checkout, `npm install --global` of the tarball
// into a prefix of its own, then the installed `svc` command. The commands are written once, here: the tarball test
// runs them, and the deployment files' test checks that deploy/Dockerfile runs the very same ones.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./server.js";

const run = promisify(execFile);

/**
 * The release commands, with {placeholders} for the paths each place chooses (the Dockerfile: /release, /opt/svc).
 * The install runs no install script (the package needs none; the tarball is installed from files only) and takes
 * packages from npm's cache when it has them.
 */
export const RELEASE_COMMANDS = {
  pack: "npm pack --pack-destination {dest}",
  install: "npm install --global --prefix {prefix} --ignore-scripts --prefer-offline --no-audit --no-fund {tarball}",
  migrate: "svc migrate",
  start: "svc start",
  healthcheck: "svc healthcheck",
} as const;

export const fill = (command: string, values: Record<string, string>): string[] =>
  command.split(" ").map((word) => word.replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? `{${k}}`));

/**
 * The environment of an operator's shell for the children: the machine's (its CA certificates for the registry:
 * NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, …), without the npm_* variables of the `npm test` that runs jest, NODE_OPTIONS,
 * jest's own and the tests' SVC_* settings, and with the Node.js that runs the tests first on PATH (the installed `svc`
 * starts with `#!/usr/bin/env node`).
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(npm_|SVC_|JEST_)/i.test(k) && k !== "NODE_OPTIONS" && k !== "NODE_ENV") env[k] = v;
  }
  return { ...env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`, ...extra };
}

export interface Release {
  tarball: string;
  prefix: string;
  /** The installed package: <prefix>/lib/node_modules/svc. */
  packageDir: string;
  /** <prefix>/bin/svc. */
  svc: string;
  packMs: number;
  installMs: number;
}

let release: Promise<Release> | undefined;

/** Packs the checkout and installs the tarball into a new prefix, once per test file. */
export function installRelease(): Promise<Release> {
  release ??= (async () => {
    const work = await mkdtemp(path.join(tmpdir(), "svc-release-"));
    const dest = path.join(work, "pack");
    const prefix = path.join(work, "prefix");
    try {
      return await packAndInstall(work, dest, prefix);
    } catch (err) {
      // A failed pack or install leaves nothing behind (the test's afterAll only knows a release that installed).
      await rm(work, { recursive: true, force: true });
      throw err;
    }
  })();
  return release;
}

async function packAndInstall(work: string, dest: string, prefix: string): Promise<Release> {
  let started = performance.now();
  const [npm, ...packArgs] = fill(RELEASE_COMMANDS.pack, { dest });
  // `npm pack` runs the package's prepare script (scripts/build.mjs): dist/ is brought up to date first.
  await run("mkdir", ["-p", dest]);
  const packed = await run(npm as string, [...packArgs, "--json"], { cwd: ROOT, env: cleanEnv(), maxBuffer: 64 * 1024 * 1024 });
  const json = packed.stdout.slice(packed.stdout.indexOf("["));
  const tarball = path.join(dest, (JSON.parse(json) as { filename: string }[])[0]?.filename as string);
  const packMs = Math.round(performance.now() - started);
  started = performance.now();
  const [npm2, ...installArgs] = fill(RELEASE_COMMANDS.install, { prefix, tarball });
  await run(npm2 as string, installArgs, { cwd: work, env: cleanEnv(), maxBuffer: 64 * 1024 * 1024 });
  const installMs = Math.round(performance.now() - started);
  const packageDir = path.join(prefix, "lib", "node_modules", "svc");
  return { tarball, prefix, packageDir, svc: path.join(prefix, "bin", "svc"), packMs, installMs };
}

/** `du -sb`: the bytes under `dir`. */
export async function bytesUnder(dir: string): Promise<number> {
  const { stdout } = await run("du", ["-sb", dir]);
  return Number(stdout.split(/\s/)[0]);
}

/** Every file and directory under `dir` with its size and mtime: what a start must leave as it was. */
export async function listing(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const p = path.join(rel, e.name);
      const s = await stat(path.join(dir, p));
      out.push(`${p}\0${s.size}\0${s.mtimeMs}`);
      if (e.isDirectory()) await walk(p);
    }
  };
  await walk("");
  return out.sort();
}

export interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (bounded by `timeoutMs`), with its exit code and output. */
export function runToEnd(cmd: string, args: string[], opts: { env: Record<string, string>; cwd?: string; timeoutMs?: number }): Promise<Exited> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${cmd} ${args.join(" ")} did not finish in ${opts.timeoutMs ?? 60_000} ms:\n${stdout}\n${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Running {
  proc: ChildProcess;
  port: number;
  url: string;
  /** Milliseconds from the spawn to the "svc listening" line. */
  readyMs: number;
  logs: Record<string, unknown>[];
  output(): string;
  stop(): Promise<number | null>;
}

/** Starts a command that runs svc (`svc start`, a systemd unit's ExecStart) and waits for its "svc listening" line. */
export function startListening(cmd: string, args: string[], opts: { env: Record<string, string>; cwd?: string; timeoutMs?: number }): Promise<Running> {
  const started = performance.now();
  const proc = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
  const logs: Record<string, unknown>[] = [];
  let raw = "";
  let buffered = "";
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    return exited;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`svc did not listen within ${opts.timeoutMs ?? 120_000} ms:\n${raw}`));
    }, opts.timeoutMs ?? 120_000);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`svc exited with ${code} before it listened:\n${raw}`));
    });
    proc.stderr?.on("data", (c: Buffer) => {
      raw += c.toString();
    });
    proc.stdout?.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        logs.push(entry);
        if (typeof entry.msg === "string" && entry.msg.startsWith("svc listening") && typeof entry.port === "number") {
          clearTimeout(timer);
          const port = entry.port;
          resolve({ proc, port, url: `http://127.0.0.1:${port}`, readyMs: Math.round(performance.now() - started), logs, output: () => raw, stop });
        }
      }
    });
  });
}

/** A systemd unit file: section → key → values (a key may repeat), with continuation lines joined. */
export function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  let section: Record<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      const name = header[1] as string;
      out[name] ??= {};
      section = out[name];
      continue;
    }
    const eq = line.indexOf("=");
    if (!section || eq < 0) throw new Error(`not a unit file line: ${line}`);
    const key = line.slice(0, eq).trim();
    const values = section[key] ?? [];
    values.push(line.slice(eq + 1).trim());
    section[key] = values;
  }
  return out;
}

/** An EnvironmentFile: KEY=value lines, # comments, optional quotes. */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`not an environment file line: ${line}`);
    out[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/s, "$1").replace(/^'(.*)'$/s, "$1");
  }
  return out;
}

/** Words as systemd splits a command line or an Environment= line (double quotes group). */
export function splitWords(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]) as string);
}
