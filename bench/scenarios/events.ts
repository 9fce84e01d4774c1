// Events out (issue 27): what an event execution costs the request that writes the event, and how fast the outbox is
// delivered. A receiver on loopback in a process of its own answers 204 at once (the bench's svc allows loopback
// targets).
//  - "user create (machine, REST)" without any event execution, then with one webhook execution on user.machine.added:
//    the second pays for the delivery row in the create's statement and for the deliveries running beside it (svc's
//    process; the receiver's on the same cores). Target: at least 90 % of the first.
//  - the same two, paired: rounds of a run without and a run with (a few seconds each, back to back, the order
//    alternating), the share of each round and their median. A shared machine's speed drifts (the two runs above, a
//    minute apart, moved by up to a third on 2 December): the pairs take the drift out of the share.
//  - "event delivery": a backlog of up to SVC_BENCH_EVENTS (5,000) events, as many as 16 clients create in 20 s, waits
//    in the outbox (the receiver holds the first requests unanswered, so the target has its share in flight and
//    nothing else is claimed), then the receiver answers: the events delivered per second until the outbox is empty,
//    and the CPU per event of svc's process and of PostgreSQL. Target: at least 1,000/s on
//    PostgreSQL. On Linux it also prints how svc's main thread spent that time (/proc/self/schedstat): on a core,
//    waiting for one (the machine is busy: the rate is bound by CPU), or neither (waiting on PostgreSQL or the
//    receiver: bound by latency, as the 186 events/s of 2 December were). SVC_BENCH_EVENTS_PROFILE=<file> writes a V8
//    CPU profile of svc's process over the delivery.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { type BenchContext, type Loader, type LoadResult, machineCpuMs, measure, resolveRequest, type Scenario } from "../run.js";

const JSON_HEADERS = { "content-type": "application/json" };

async function api<T>(ctx: BenchContext, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(ctx.url + path, {
    method,
    headers: { authorization: `Bearer ${ctx.pat}`, ...JSON_HEADERS },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/**
 * The receiver: bench/event-receiver.mjs in a process of its own (a receiver is another system; in svc's process its
 * side of each POST counted as svc's CPU and took svc's event loop), pinned to the loader core like wrk where taskset
 * exists. While `hold` is set it keeps the requests unanswered until released.
 */
class Receiver {
  private child: ChildProcess | undefined;
  private reached: ((n: number) => void) | undefined;

  async start(): Promise<string> {
    const script = fileURLToPath(new URL("../event-receiver.mjs", import.meta.url));
    const cores = availableParallelism();
    const pinned = cores >= 2 && spawnSync("sh", ["-c", "command -v taskset"], { stdio: "ignore" }).status === 0;
    const [command, args] = pinned ? ["taskset", ["-c", String(cores - 1), process.execPath, script]] : [process.execPath, [script]];
    const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.child = child;
    const port = await new Promise<number>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`the receiver exited (${code})`)));
      child.once("message", (m: { port: number }) => resolve(m.port));
    });
    child.on("message", (m: { reached?: number }) => {
      if (m.reached !== undefined) this.reached?.(m.reached);
    });
    return `http://127.0.0.1:${port}/events`;
  }

  set hold(on: boolean) {
    this.child?.send({ op: on ? "hold" : "release" });
  }

  release(): void {
    this.hold = false;
  }

  /** Resolves once `n` requests were answered. */
  until(n: number): Promise<void> {
    return new Promise((resolve) => {
      this.reached = (m) => {
        if (m === n) {
          this.reached = undefined;
          resolve();
        }
      };
      this.child?.send({ op: "notify", n });
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.send({ op: "stop" });
    });
  }
}

/** A webhook target at `endpoint` bound to user.machine.added; returns a function that removes both. */
async function hook(ctx: BenchContext, name: string, endpoint: string): Promise<() => Promise<void>> {
  const { id } = await api<{ id: string }>(ctx, "POST", "/v2/actions/targets/new", { name, endpoint, kind: "TARGET_KIND_WEBHOOK", timeout: "30s" });
  await api(ctx, "PUT", "/v2/actions/executions", { event: { event: "user.machine.added" }, targetIds: [id] });
  return async () => {
    await api(ctx, "PUT", "/v2/actions/executions", { event: { event: "user.machine.added" }, targetIds: [] });
    await api(ctx, "DELETE", `/v2/actions/targets/${id}`);
  };
}

let removeCreateHook: (() => Promise<void>) | undefined;
let createReceiver: Receiver | undefined;

const createRequest = (ctx: BenchContext) => ({
  body: JSON.stringify({ organizationId: ctx.orgId, username: "bench-event-[<id>]", machine: { name: "bench event user" } }),
});

/**
 * Creates up to `n` machine users, `concurrency` at a time, for at most `maxSeconds` (the held deliveries must not
 * reach their target's 30-second timeout); returns how many and how long it took, in seconds.
 */
async function createUsers(ctx: BenchContext, n: number, concurrency: number, maxSeconds: number): Promise<{ created: number; seconds: number }> {
  const run = Date.now().toString(36);
  let next = 0;
  let created = 0;
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < n && performance.now() - started < maxSeconds * 1000; i = next++) {
      await api(ctx, "POST", "/v2/users/new", { organizationId: ctx.orgId, username: `bench-backlog-${run}-${i}`, machine: { name: "backlog" } });
      created++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { created, seconds: (performance.now() - started) / 1000 };
}

/** This process's main thread: ns on a core and ns runnable but waiting for one (Linux), else undefined. */
function mainThreadTimes(): { running: number; waiting: number } | undefined {
  try {
    const [running, waiting] = readFileSync("/proc/self/schedstat", "utf8").trim().split(" ").map(Number);
    return running === undefined || waiting === undefined ? undefined : { running, waiting };
  } catch {
    return undefined;
  }
}

async function deliveryRate(ctx: BenchContext): Promise<LoadResult> {
  await removeCreateHook?.();
  await createReceiver?.stop();
  const raw = process.env.SVC_BENCH_EVENTS;
  const n = raw ? Number(raw) : 5_000;
  if (!Number.isInteger(n) || n < 1) throw new Error(`SVC_BENCH_EVENTS must be a positive integer, got "${raw}"`);
  const receiver = new Receiver();
  const remove = await hook(ctx, "bench-delivery", await receiver.start());
  try {
    receiver.hold = true;
    const backlog = await createUsers(ctx, n, 16, 20);
    process.stderr.write(`  events: ${backlog.created} users created in ${backlog.seconds.toFixed(1)} s (the backlog), delivering\n`);
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    const db0 = await ctx.databaseCpuMs();
    const thread0 = mainThreadTimes();
    const machine0 = machineCpuMs();
    // SVC_BENCH_EVENTS_PROFILE=<file>: a V8 CPU profile of svc's process while the backlog goes out.
    const profileFile = process.env.SVC_BENCH_EVENTS_PROFILE;
    const session = profileFile ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    }
    receiver.release();
    await receiver.until(backlog.created);
    if (session && profileFile) {
      const { profile } = await session.post("Profiler.stop");
      session.disconnect();
      writeFileSync(profileFile, JSON.stringify(profile));
      process.stderr.write(`  events: profile of the delivery in ${profileFile}\n`);
    }
    const seconds = (performance.now() - started) / 1000;
    const thread1 = mainThreadTimes();
    const machine1 = machineCpuMs();
    if (machine0 && machine1) {
      process.stderr.write(
        `  events: the machine's CPU per delivered event (every process: svc, PostgreSQL, the receiver) ${((machine1.busy - machine0.busy) / backlog.created).toFixed(2)} ms\n`,
      );
    }
    if (thread0 && thread1) {
      const pct = (ns: number) => `${Math.round(ns / 1e7 / seconds)} %`;
      const running = thread1.running - thread0.running;
      const waiting = thread1.waiting - thread0.waiting;
      process.stderr.write(
        `  events: ${backlog.created} delivered in ${seconds.toFixed(1)} s; svc's main thread ${pct(running)} on a core, ${pct(waiting)} waiting for one, ${pct(seconds * 1e9 - running - waiting)} neither\n`,
      );
    }
    const cpu = process.cpuUsage(cpu0);
    const db1 = await ctx.databaseCpuMs();
    return {
      requestsPerSecond: backlog.created / seconds,
      latencyP50Ms: 0,
      latencyP99Ms: 0,
      requests: backlog.created,
      non2xx: 0,
      errors: 0,
      svcCpuMsPerRequest: (cpu.user + cpu.system) / 1000 / backlog.created,
      ...(db0 !== undefined && db1 !== undefined ? { dbCpuMsPerRequest: (db1 - db0) / backlog.created } : {}),
    } as LoadResult;
  } finally {
    await remove();
    await receiver.stop();
  }
}

/** Waits until the outbox has nothing pending (what a run with the execution left is delivered). */
async function drained(ctx: BenchContext): Promise<void> {
  for (const started = Date.now(); Date.now() - started < 60_000; ) {
    const r = await api<{ details?: { totalResult?: string } }>(ctx, "POST", "/v2/actions/deliveries", { state: "pending", query: { limit: 1 } });
    if (Number(r.details?.totalResult ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the outbox was not delivered within 60 s");
}

/**
 * The creates' rate with one webhook execution as a share of the rate without, in paired rounds: the two runs of a
 * round follow each other (a few seconds each, in the order A B, then B A in the next round), so that the drift of a
 * shared machine's speed (the separate runs above moved by up to a third within minutes) falls on both alike. Each
 * round's run with the execution is followed by a wait until the outbox is empty, and the next run starts without
 * a backlog. Prints each round's share, and the machine's CPU per create (every process: svc, PostgreSQL, the load
 * generator, the receiver) of both; the result is the median share, in percent (in the table's first column).
 */
async function pairedShare(ctx: BenchContext, seconds: number, connections: number, loader: Loader): Promise<LoadResult> {
  await removeCreateHook?.();
  removeCreateHook = undefined;
  await createReceiver?.stop();
  const rounds = Number(process.env.SVC_BENCH_EVENT_ROUNDS ?? 4);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`SVC_BENCH_EVENT_ROUNDS must be a positive integer, got "${process.env.SVC_BENCH_EVENT_ROUNDS}"`);
  const receiver = new Receiver();
  const endpoint = await receiver.start();
  const { id } = await api<{ id: string }>(ctx, "POST", "/v2/actions/targets/new", {
    name: "bench-paired",
    endpoint,
    kind: "TARGET_KIND_WEBHOOK",
    timeout: "30s",
  });
  const execution = (targetIds: string[]) => api(ctx, "PUT", "/v2/actions/executions", { event: { event: "user.machine.added" }, targetIds });
  const request = await resolveRequest(ctx, {
    name: "paired",
    method: "POST",
    path: "/v2/users/new",
    headers: JSON_HEADERS,
    uniqueIds: true,
    setup: createRequest,
  });
  const runSeconds = Math.max(2, Math.round(seconds / 2));
  const run = async (hooked: boolean) => {
    await execution(hooked ? [id] : []);
    const cpu0 = machineCpuMs();
    const r = await measure(request, { name: hooked ? "paired, one webhook" : "paired, none", connections, seconds: runSeconds, loader });
    const cpu1 = machineCpuMs();
    if (hooked) {
      await execution([]);
      await drained(ctx);
    }
    // The CPU of the warm-up counts too (its requests as well: about the same rate): an approximation.
    const perCreate = cpu0 && cpu1 ? (cpu1.busy - cpu0.busy) / (r.requests * (1 + 1 / runSeconds)) : Number.NaN;
    return { rate: r.requestsPerSecond, perCreate, requests: r.requests };
  };
  const shares: number[] = [];
  let requests = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      const [first, second] = round % 2 === 0 ? [false, true] : [true, false];
      const a = await run(first);
      const b = await run(second);
      const [none, hooked] = first ? [b, a] : [a, b];
      requests += none.requests + hooked.requests;
      shares.push(hooked.rate / none.rate);
      process.stderr.write(
        `  events, round ${round + 1}: ${Math.round(none.rate)} creates/s without, ${Math.round(hooked.rate)} with one webhook (${Math.round((100 * hooked.rate) / none.rate)} %); machine CPU per create ${none.perCreate.toFixed(2)} / ${hooked.perCreate.toFixed(2)} ms\n`,
      );
    }
  } finally {
    await execution([]);
    await api(ctx, "DELETE", `/v2/actions/targets/${id}`);
    await receiver.stop();
  }
  const sorted = [...shares].sort((x, y) => x - y);
  const median =
    sorted.length % 2 ? (sorted[(sorted.length - 1) / 2] as number) : ((sorted[sorted.length / 2 - 1] as number) + (sorted[sorted.length / 2] as number)) / 2;
  return { requestsPerSecond: 100 * median, latencyP50Ms: 0, latencyP99Ms: 0, requests, non2xx: 0, errors: 0 };
}

export const EVENT_SCENARIOS: Scenario[] = [
  {
    name: "events: user create (machine, REST), no event execution",
    method: "POST",
    path: "/v2/users/new",
    headers: JSON_HEADERS,
    uniqueIds: true,
    setup: createRequest,
  },
  {
    name: "events: user create (machine, REST), one webhook execution",
    method: "POST",
    path: "/v2/users/new",
    headers: JSON_HEADERS,
    uniqueIds: true,
    setup: async (ctx) => {
      createReceiver = new Receiver();
      removeCreateHook = await hook(ctx, "bench-create", await createReceiver.start());
      return createRequest(ctx);
    },
  },
  {
    name: "events: user create with one webhook execution, % of the rate without (median of paired rounds)",
    method: "POST",
    path: "/",
    local: pairedShare,
  },
  {
    name: "events: event delivery to a fast loopback receiver (events/s)",
    method: "POST",
    path: "/",
    local: deliveryRate,
  },
];
