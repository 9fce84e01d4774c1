// Issue 25, finding 8: svc run as a user who owns neither dist/ nor the database files (an image built as root and run
// as `USER node`, a data directory restored as another user). It never tries to rebuild dist/, and database files it
// cannot write are named in the refusal instead of PGlite's bare "failed to initialize properly".
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { spawnServer } from "../support/server.js";

const asPostgres = ["runuser", "-u", "postgres", "--"];
const possible = !process.env.SVC_TEST_DATABASE_URL && process.getuid?.() === 0 && spawnSync("runuser", ["-u", "postgres", "--", "true"]).status === 0;

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

(possible ? describe : describe.skip)("another user than the one who built dist/ (issue 25, finding 8)", () => {
  it("database files it cannot write are named in the refusal; once they are its own, it starts without touching dist/", async () => {
    const base = await mkdtemp(path.join(tmpdir(), "svc-unpriv-"));
    dirs.push(base);
    spawnSync("chmod", ["755", base]);
    const dataDir = path.join(base, "data");
    const first = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await first.stop()).toBe(0);
    // The runtime user's files, but read-only (a read-only volume, a restore that kept the backup's modes).
    expect(spawnSync("chown", ["-R", "postgres", dataDir]).status).toBe(0);
    expect(spawnSync("chmod", ["-R", "a-w", path.join(dataDir, "pglite")]).status).toBe(0);
    const refused = await spawnServer({ SVC_DATA_DIR: dataDir }, 60_000, asPostgres).then(
      async (s) => {
        await s.stop();
        return "it started";
      },
      (e: Error) => e.message,
    );
    expect(refused).toMatch(new RegExp(`the embedded database in ${path.join(dataDir, "pglite")} cannot be opened: \\S+ is not writable by user \\d+`));
    // Writable again, they open; dist/ (root's, not writable by this user) is run as it is.
    expect(spawnSync("chmod", ["-R", "u+w", path.join(dataDir, "pglite")]).status).toBe(0);
    const s = await spawnServer({ SVC_DATA_DIR: dataDir }, 60_000, asPostgres);
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    expect(s.logs.some((l) => String(l.msg).includes("is not writable by this user: running the bundle it holds"))).toBe(true);
    // SIGTERM to svc itself (runuser's child); runuser exits with its status.
    const exited = new Promise<number | null>((r) => s.proc.once("exit", (code) => r(code)));
    for (const pid of spawnSync("pgrep", ["-P", String(s.proc.pid)], { encoding: "utf8" })
      .stdout.split("\n")
      .filter(Boolean)) {
      process.kill(Number(pid), "SIGTERM");
    }
    expect(await exited).toBe(0);
  }, 180_000);
});
