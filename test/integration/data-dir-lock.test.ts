// Issue 25, finding 1: one process per embedded database. The lock is a Unix-domain socket bound in the data
// directory, which the kernel releases when its holder dies: a kill -9 leaves nothing that blocks the next start, two
// starts at the same instant after one let exactly one in, no reused pid or PID namespace can fool it, and the
// refusal names the holder and exits non-zero.
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { type ChildServer, spawnServer } from "../support/server.js";

const embedded = !process.env.SVC_TEST_DATABASE_URL;
const maybe = embedded ? describe : describe.skip;

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), "svc-lock-"));
  dirs.push(d);
  return path.join(d, "data");
}

const env = (dir: string) => ({ SVC_DATA_DIR: dir, SVC_LOG_LEVEL: "info" });

async function kill9(s: ChildServer): Promise<void> {
  const gone = new Promise((r) => (s.proc.exitCode !== null || s.proc.signalCode !== null ? r(null) : s.proc.once("exit", r)));
  s.proc.kill("SIGKILL");
  await gone;
}

/** The process serves its database (the instance admin lists users). */
async function serves(s: ChildServer, dir: string): Promise<void> {
  const pat = (await readFile(path.join(dir, "admin.pat"), "utf8")).trim();
  const res = await fetch(`${s.url}/v2/users`, { method: "POST", headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" }, body: "{}" });
  expect(res.status).toBe(200);
}

/** unshare's parent ignores SIGTERM while it waits: svc (its child) gets the signal, and unshare exits with it. */
const UNSHARE = ["unshare", "--pid", "--kill-child=SIGTERM"];
async function stopWrapped(s: ChildServer): Promise<number | null> {
  const kids = spawnSync("pgrep", ["-P", String(s.proc.pid)], { encoding: "utf8" })
    .stdout.split("\n")
    .filter(Boolean);
  for (const k of kids) process.kill(Number(k), "SIGTERM");
  return new Promise((r) => (s.proc.exitCode !== null ? r(s.proc.exitCode) : s.proc.once("exit", (c) => r(c))));
}

maybe("one process per embedded database (issue 25, finding 1)", () => {
  it("after a kill -9, two starts at the same instant: exactly one serves, the other refuses naming it and exits non-zero (5 trials)", async () => {
    const dir = await dataDir();
    let holder = await spawnServer(env(dir));
    try {
      for (let trial = 0; trial < 5; trial++) {
        await kill9(holder);
        const starts = await Promise.allSettled([spawnServer(env(dir)), spawnServer(env(dir))]);
        const up = starts.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
        const refused = starts.flatMap((r) => (r.status === "rejected" ? [String((r.reason as Error).message)] : []));
        // Both up is the data loss the issue saw: end them before failing.
        if (up.length !== 1) for (const s of up) await kill9(s);
        expect({ trial, up: up.length }).toEqual({ trial, up: 1 });
        holder = up[0] as ChildServer;
        expect(refused).toHaveLength(1);
        const why = refused[0] as string;
        expect(why).toMatch(/server exited with 1/);
        expect(why).toContain(`is in use by process ${holder.proc.pid} on host ${hostname()}`);
        await serves(holder, dir);
      }
      expect(await holder.stop()).toBe(0);
    } finally {
      // Whatever failed, no svc outlives the test.
      if (holder.proc.exitCode === null && holder.proc.signalCode === null) await kill9(holder);
    }
  }, 300_000);

  it("a stale lock never blocks: neither an older svc's pid file naming a live (reused) pid, nor the socket a killed holder left", async () => {
    const dir = await dataDir();
    const first = await spawnServer(env(dir));
    expect(await first.stop()).toBe(0);
    // An older svc's pid file naming a live process that is no svc (this test runner: a pid reused since).
    await writeFile(path.join(dir, "svc.pid"), String(process.pid));
    const second = await spawnServer(env(dir));
    await serves(second, dir);
    await kill9(second);
    // What the kill left behind: the socket file, bound by nobody now.
    expect(await readdir(dir)).toContain("svc.lock");
    const t0 = Date.now();
    const third = await spawnServer(env(dir));
    try {
      await serves(third, dir);
      // Connecting to a stale socket is refused at once: no timeout of any kind is waited for.
      expect(third.logs.some((l) => String(l.msg).includes("in use"))).toBe(false);
      expect(Date.now() - t0).toBeLessThan(30_000);
    } finally {
      expect(await third.stop()).toBe(0);
    }
    // A clean stop removes its socket.
    expect(await readdir(dir)).not.toContain("svc.lock");
  }, 120_000);

  it("a clean stop hands over at once, and the refusal while one runs names its pid, host and start", async () => {
    const dir = await dataDir();
    const first = await spawnServer(env(dir));
    try {
      const err = await spawnServer(env(dir)).then(
        () => "",
        (e: Error) => e.message,
      );
      expect(err).toMatch(new RegExp(`in use by process ${first.proc.pid} on host ${hostname()} \\(started 20\\d\\d-\\d\\d-\\d\\dT`));
      expect(err).toMatch(/server exited with 1/);
    } finally {
      expect(await first.stop()).toBe(0);
    }
    const second = await spawnServer(env(dir));
    expect(await second.stop()).toBe(0);
  }, 120_000);

  // Two containers on one volume: the second svc runs in a PID namespace of its own, where the first one's pid means
  // nothing (or another process).
  const unshare = process.getuid?.() === 0 && spawnSync("unshare", ["--pid", "--fork", "true"]).status === 0;
  (unshare ? it : it.skip)(
    "a second svc in a PID namespace of its own is refused, naming the holder",
    async () => {
      const dir = await dataDir();
      const first = await spawnServer(env(dir));
      try {
        const inNamespace = spawnServer(env(dir), 60_000, UNSHARE);
        const err = await inNamespace.then(
          async (s) => {
            await stopWrapped(s);
            return "it started";
          },
          (e: Error) => e.message,
        );
        expect(err).toContain(`in use by process ${first.proc.pid} on host ${hostname()}`);
      } finally {
        expect(await first.stop()).toBe(0);
      }
      const inside = await spawnServer(env(dir), 60_000, UNSHARE);
      try {
        const err = await spawnServer(env(dir)).then(
          async (s) => {
            await s.stop();
            return "it started";
          },
          (e: Error) => e.message,
        );
        // Its pid as it sees it (1 in its namespace): what matters is that it is refused.
        expect(err).toMatch(/in use by process \d+ on host/);
      } finally {
        expect(await stopWrapped(inside)).toBe(0);
      }
    },
    180_000,
  );
});
