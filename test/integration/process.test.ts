// The process as people run it: `npm start` stops, with no node process left, when npm gets SIGTERM (a service
// manager stops npm); `svc start` (the package's bin) starts the same service.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { ROOT } from "../support/server.js";

async function ready(port: number, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if ((await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`nothing answered on ${port}`);
}

async function answers(port: number): Promise<boolean> {
  return (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined)) !== undefined;
}

const exited = (p: ChildProcess) => new Promise<number | null>((resolve) => (p.exitCode !== null ? resolve(p.exitCode) : p.once("exit", (c) => resolve(c))));

async function withDataDir(fn: (env: Record<string, string>, port: number) => Promise<void>): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "svc-process-"));
  const port = await freePort();
  try {
    await fn({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SVC_PORT: String(port), SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: "warn" }, port);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe("the process", () => {
  it("npm start ends with the service when npm gets SIGTERM", async () => {
    await withDataDir(async (env, port) => {
      const npm = spawn("npm", ["start", "--silent"], { cwd: ROOT, env, stdio: "ignore" });
      await ready(port);
      npm.kill("SIGTERM");
      await exited(npm);
      const end = Date.now() + 15_000;
      while ((await answers(port)) && Date.now() < end) await new Promise((r) => setTimeout(r, 250));
      expect(await answers(port)).toBe(false);
    });
  }, 90_000);

  it("svc start (the package's bin) serves, and stops on SIGTERM with status 0", async () => {
    await withDataDir(async (env, port) => {
      const svc = spawn(process.execPath, [path.join(ROOT, "bin/svc.js"), "start"], { cwd: ROOT, env, stdio: "ignore" });
      await ready(port);
      svc.kill("SIGTERM");
      expect(await exited(svc)).toBe(0);
    });
  }, 90_000);
});
