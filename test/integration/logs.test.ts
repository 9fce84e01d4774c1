// What svc prints: JSON lines when stdout is not a terminal (and nothing that is not a log line on stderr, on
// PostgreSQL too), readable lines with SVC_LOG_FORMAT=pretty.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "@jest/globals";
import { freshDatabase, ROOT, spawnServer } from "../support/server.js";

describe("logs", () => {
  it("are JSON lines, and stderr stays empty through a start and a stop", async () => {
    const db = await freshDatabase({ migrated: false });
    const dataDir = await mkdtemp(path.join(tmpdir(), "svc-logs-"));
    try {
      const child = await spawnServer({ SVC_DATA_DIR: dataDir, ...(db.url ? { SVC_DATABASE_URL: db.url } : {}) });
      await fetch(`${child.url}/healthz`);
      expect(await child.stop()).toBe(0);
      expect(child.errors()).toBe("");
      const lines = child.output().split("\n").filter(Boolean);
      expect(lines.length).toBeGreaterThan(2);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await db.drop();
    }
  }, 90_000);

  it("are readable lines with SVC_LOG_FORMAT=pretty", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "svc-logs-"));
    const proc = spawn(process.execPath, ["bin/svc.js", "start"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", SVC_PORT: "0", SVC_DATA_DIR: dataDir, SVC_LOG_FORMAT: "pretty" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}`)), 60_000);
        proc.stdout?.on("data", (c: Buffer) => {
          out += c.toString();
          const found = out.split("\n").find((l) => l.includes("svc listening"));
          if (found) {
            clearTimeout(timer);
            resolve(found);
          }
        });
      });
      expect(line.trimStart().startsWith("{")).toBe(false);
      expect(line).toMatch(/INFO/);
    } finally {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
