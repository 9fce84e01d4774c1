// Starts the real svc on a random port against a fresh database, in-process
// (fast, lets a test move the clock) or as a child process (start-up,
// signals, several replicas).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { loadConfig } from "../../src/config.js";
import { type Server, startServer } from "../../src/server.js";
import { freshDatabase, type TestDatabase } from "./db.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
/** The master key test servers on PostgreSQL share (replicas must use the same one). */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7).toString("base64");

export interface TestServer {
  server: Server;
  url: string;
  pat: string;
  dataDir: string;
  /** Moves the server's clock (in-process servers only). */
  advanceClock(ms: number): void;
  stop(): Promise<void>;
}

/**
 * On PostgreSQL the database is a copy of one already migrated (the service
 * then finds nothing to apply); `migrateAtStart` gives it an empty one to
 * migrate itself, for the tests of the migrations.
 */
export async function startTestServer(env: Record<string, string> = {}, opts: { migrateAtStart?: boolean } = {}): Promise<TestServer> {
  const db = await freshDatabase({ migrated: !opts.migrateAtStart });
  const dataDir = await mkdtemp(path.join(tmpdir(), "svc-test-"));
  let offset = 0;
  const config = loadConfig({
    SVC_PORT: "0",
    SVC_HOST: "127.0.0.1",
    SVC_DATA_DIR: dataDir,
    SVC_SHUTDOWN_GRACE_MS: "2000",
    // The embedded database migrated by the server itself, not copied from the build's snapshot.
    ...(opts.migrateAtStart ? { SVC_EMBEDDED_SNAPSHOT: "false" } : {}),
    ...(db.url ? { SVC_DATABASE_URL: db.url, SVC_MASTER_KEY: TEST_MASTER_KEY } : {}),
    ...env,
  });
  const server = await startServer(config, { logger: pino({ level: process.env.SVC_TEST_LOG_LEVEL ?? "silent" }), clock: () => new Date(Date.now() + offset) });
  const pat = (await readFile(config.firstInstancePatPath, "utf8")).trim();
  return {
    server,
    url: server.url,
    pat,
    dataDir,
    advanceClock: (ms) => {
      offset += ms;
    },
    async stop() {
      await server.close();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  port: number;
  /** Every log line so far, parsed. */
  logs: Record<string, unknown>[];
  output(): string;
  /** What it wrote to stderr only. */
  errors(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs svc as `npm start` does (bin/svc.js: the bundle in dist/, rebuilt first when the sources changed) and waits until
 * it listens.
 */
export async function spawnServer(env: Record<string, string>, timeoutMs = 60_000, wrapper: string[] = []): Promise<ChildServer> {
  // `wrapper`: a command that runs svc in turn (`unshare --pid --fork`, say).
  const [cmd = process.execPath, ...args] = [...wrapper, process.execPath, "bin/svc.js", "start"];
  const proc = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      SVC_PORT: "0",
      SVC_HOST: "127.0.0.1",
      ...(env.SVC_DATABASE_URL ? { SVC_MASTER_KEY: TEST_MASTER_KEY } : {}),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  let raw = "";
  let stderr = "";
  let buffered = "";
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const listening = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${raw}`)), timeoutMs);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${raw}`));
    });
    const onData = (chunk: Buffer) => {
      raw += chunk.toString();
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (typeof entry.msg === "string" && entry.msg.startsWith("svc listening") && typeof entry.port === "number") {
            clearTimeout(timer);
            resolve(entry.port);
          }
        } catch {
          // not a log line (e.g. a Node warning on stderr)
        }
      }
    };
    proc.stdout?.on("data", onData);
    proc.stderr?.on("data", (c: Buffer) => {
      raw += c.toString();
      stderr += c.toString();
    });
  });
  let port: number;
  try {
    port = await listening;
  } catch (err) {
    // A server that did not come up in time must not outlive the test that waited for it.
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGKILL");
      await exited;
    }
    throw err;
  }
  return {
    proc,
    port,
    url: `http://127.0.0.1:${port}`,
    logs,
    output: () => raw,
    errors: () => stderr,
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      return exited;
    },
  };
}

export { freshDatabase, type TestDatabase };

/**
 * Starts svc in this process on `db` and `dataDir` with `env` (a master key, say), its log lines into `logs`: for
 * tests that start one database again and again with other settings.
 */
export function bootOn(db: TestDatabase, dataDir: string, env: Record<string, string>, logs: string[] = []): Promise<Server> {
  const config = loadConfig({ SVC_PORT: "0", SVC_HOST: "127.0.0.1", SVC_DATA_DIR: dataDir, ...(db.url ? { SVC_DATABASE_URL: db.url } : {}), ...env });
  const stream = { write: (line: string) => logs.push(line) };
  return startServer(config, { logger: pino({ level: "info" }, stream), clock: () => new Date() });
}

export function rest(url: string, pat: string | undefined, method: string, p: string, body?: unknown): Promise<Response> {
  return fetch(url + p, {
    method,
    headers: { ...(pat ? { authorization: `Bearer ${pat}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** `n` replicas (child processes) on one fresh PostgreSQL database, and the first instance admin's PAT. */
export interface Replicas {
  servers: ChildServer[];
  pat: string;
  stop(): Promise<void>;
}

export async function startReplicas(n: number, env: Record<string, string> = {}): Promise<Replicas> {
  const db = await freshDatabase();
  const dirs = await Promise.all(Array.from({ length: n }, () => mkdtemp(path.join(tmpdir(), "svc-replica-"))));
  const stop = async () => {
    await Promise.all(servers.map((r) => r.stop()));
    await db.drop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  };
  let servers: ChildServer[] = [];
  // Every start settles before anything is decided: when one replica fails, the ones that came up are stopped too.
  const started = await Promise.allSettled(dirs.map((dir) => spawnServer({ SVC_DATA_DIR: dir, SVC_DATABASE_URL: db.url as string, ...env })));
  servers = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  // The replica that bootstrapped the instance wrote the admin PAT into its data dir.
  const owner = servers.findIndex((r) => r.logs.some((l) => String(l.msg).startsWith("first start")));
  if (owner < 0) {
    await stop();
    throw new Error("no replica logged the instance's first start");
  }
  const pat = (await readFile(path.join(dirs[owner] as string, "admin.pat"), "utf8")).trim();
  return { servers, pat, stop };
}
