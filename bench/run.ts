// `npm run bench`: starts svc in this process on a fresh database, seeds users
// through the real API and loads each scenario. The load generator is wrk (a
// separate process, pinned to the machine's last core with taskset where
// there are at least two) when it is on the PATH, otherwise autocannon in a
// worker thread of this process. Either way it shares the machine with the
// server and PostgreSQL: compare figures from one machine, and read them as
// lower bounds of capacity.
//
//   npm run bench [-- --scenario <name>[,<name>...]] [-- --json] [-- --loader wrk|autocannon] [-- --profile <dir>]
//   npm run bench -- --peer oidc-provider [--rounds N]   (svc beside oidc-provider: see bench/peer.ts)
//   npm run bench -- --targets   (issue 28's sign-in and machine-facing targets side by side, with peers: bench/targets.ts)
//
// --profile writes a V8 CPU profile of svc (this process) over each request scenario's measured run (open it in
// Chrome's DevTools or speedscope); the profiler's own cost lowers that run's figures a little.
//
// SVC_BENCH_USERS (10000), SVC_BENCH_SECONDS (10), SVC_BENCH_CONNECTIONS (10),
// SVC_BENCH_DATABASE_URL (a fresh, empty PostgreSQL database; the embedded one when unset), SVC_BENCH_BURST (10000:
// the creates before the read-after-burst scenarios).
import { execFile, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
// @ts-expect-error autocannon 9 ships no type declarations; the part used here is typed below.
import autocannonUntyped from "autocannon";
import pg from "pg";
import { type Config, loadConfig } from "../src/config.js";
import { type Server, startServer } from "../src/server.js";
import type { FlowSpec } from "./flow-client.js";
import { PEER_TABLE } from "./peer/pg-adapter.js";
import { type Measured, PEER_VERSION, peerTable, runPeerComparison } from "./peer.js";
import { BURST_SCENARIOS } from "./scenarios/burst.js";
import { EVENT_SCENARIOS } from "./scenarios/events.js";
import { LIST_SCENARIOS } from "./scenarios/lists.js";
import { OAUTH_SCENARIOS } from "./scenarios/oauth.js";
import { SAML_SCENARIOS } from "./scenarios/saml.js";
import { SCIM_SCENARIOS } from "./scenarios/scim.js";
import { SIGN_IN_SCENARIOS } from "./scenarios/sign-in.js";
import { commitMark, commitTimesSince, countStatements, statementCounts, statementTally, tallySince } from "./statements.js";
import { runTargets, targetReport } from "./targets.js";

type Method = "GET" | "POST" | "PUT" | "DELETE";

/** What the scenarios may use: the running server, its admin token and the seeded data. */
export interface BenchContext {
  readonly url: string;
  readonly pat: string;
  readonly orgId: string;
  readonly userIds: readonly string[];
  /** Refreshes the planner statistics after a scenario's setup added data. */
  analyze(): Promise<void>;
  /** CPU time (ms) the database's server processes of this database have used so far; undefined when not measurable. */
  databaseCpuMs(): Promise<number | undefined>;
}

/** The request a scenario sends, repeated for the whole run. */
export interface ScenarioRequest {
  method: Method;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** A file with one body per line, each sent once (for single-use bodies such as signed assertions); replaces `body`. */
  bodiesFile?: string;
}

export interface Scenario extends ScenarioRequest {
  name: string;
  /** Sent without the admin token (baselines and public endpoints). */
  anonymous?: boolean;
  /** Overrides SVC_BENCH_CONNECTIONS; 1 measures the latency of one client rather than throughput. */
  connections?: number;
  /** Every "[<id>]" in the body becomes an id unique to the request (e.g. a userName that must not collide). */
  uniqueIds?: boolean;
  /** Runs once before the warm-up; what it returns replaces parts of the request (e.g. a path naming a created resource). */
  setup?: (ctx: BenchContext) => Promise<Partial<ScenarioRequest> | undefined> | Partial<ScenarioRequest> | undefined;
  /** A multi-request flow instead of one repeated request: bench/flow-client.ts runs it in its own process. */
  flow?: (ctx: BenchContext) => Promise<Omit<FlowSpec, "connections" | "warmupSeconds" | "seconds">>;
  /** Work measured in this process instead of requests (a bound to compare a flow with). */
  local?: (ctx: BenchContext, seconds: number, connections: number, loader: Loader) => Promise<LoadResult>;
}

export interface ScenarioResult {
  name: string;
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  /**
   * CPU per request of svc's process and of the PostgreSQL backends serving it (undefined: embedded database, or not
   * measurable): unlike requests per second, these hardly move when other work shares the machine.
   */
  svcCpuMsPerRequest?: number;
  dbCpuMsPerRequest?: number;
}

const JSON_HEADERS = { "content-type": "application/json" };

export const SCENARIOS: Scenario[] = [
  {
    name: "ListUsers (Connect JSON)",
    method: "POST",
    path: "/svc.user.v2.UserService/ListUsers",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 100 } }),
  },
  {
    // The page a console shows: 10 rows of an organization of 10,000 users, newest first, no filter.
    name: "ListUsers page of 10 (Connect JSON)",
    method: "POST",
    path: "/svc.user.v2.UserService/ListUsers",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 10 } }),
  },
  {
    name: "ListUsers page of 10 (REST)",
    method: "POST",
    path: "/v2/users",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 10 } }),
  },
  {
    // The seed wrote one event per user: a page of 10 over more than 10,000 events.
    name: "ListEvents page of 10 (Connect JSON)",
    method: "POST",
    path: "/svc.event.v2.EventService/ListEvents",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 10 } }),
  },
  {
    name: "ListUsers (REST)",
    method: "POST",
    path: "/v2/users",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 100 } }),
  },
  {
    name: "ListUsers filter+sort (Connect JSON)",
    method: "POST",
    path: "/svc.user.v2.UserService/ListUsers",
    headers: JSON_HEADERS,
    body: JSON.stringify({
      query: { limit: 100, asc: true },
      sortingColumn: "USER_FIELD_NAME_USER_NAME",
      queries: [{ userNameQuery: { userName: "user-1", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } }],
    }),
  },
  {
    name: "ListUsers filter+sort, 1 client (latency)",
    method: "POST",
    path: "/svc.user.v2.UserService/ListUsers",
    headers: JSON_HEADERS,
    connections: 1,
    body: JSON.stringify({
      query: { limit: 100, asc: true },
      sortingColumn: "USER_FIELD_NAME_USER_NAME",
      queries: [{ userNameQuery: { userName: "USER-12", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } }],
    }),
  },
  {
    name: "ListUsers contains+type, sort by email, 1 client (latency)",
    method: "POST",
    path: "/svc.user.v2.UserService/ListUsers",
    headers: JSON_HEADERS,
    connections: 1,
    body: JSON.stringify({
      query: { limit: 100 },
      sortingColumn: "USER_FIELD_NAME_EMAIL",
      queries: [{ emailQuery: { emailAddress: "99@EXAMPLE", method: "TEXT_QUERY_METHOD_CONTAINS_IGNORE_CASE" } }, { typeQuery: { type: "USER_TYPE_HUMAN" } }],
    }),
  },
  {
    name: "GetUserByID (REST)",
    method: "GET",
    path: "/v2/users/{id}",
    setup: (ctx) => ({ path: `/v2/users/${ctx.userIds[Math.floor(ctx.userIds.length / 2)]}` }),
  },
  ...LIST_SCENARIOS,
  { name: "/healthz", method: "GET", path: "/healthz", anonymous: true },
  ...OAUTH_SCENARIOS,
  ...SIGN_IN_SCENARIOS,
  ...SAML_SCENARIOS,
  ...SCIM_SCENARIOS,
  ...EVENT_SCENARIOS,
  // Last: the burst adds SVC_BENCH_BURST users that every later scenario would see.
  ...BURST_SCENARIOS,
];

// The subset of autocannon's programmatic API this file relies on.
interface AutocannonOptions {
  url: string;
  method: Method;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
  workers?: number;
  requests?: { setupRequest: string }[];
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
const autocannon = autocannonUntyped as (opts: AutocannonOptions) => Promise<AutocannonResult>;

const WARMUP_SECONDS = Number(process.env.SVC_BENCH_WARMUP_SECONDS || 1);
const SEED_CONCURRENCY = 16;

function envInt(name: string, def: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}, got "${raw}"`);
  return n;
}

async function api<T>(ctx: Pick<BenchContext, "url" | "pat">, method: Method, p: string, body?: unknown): Promise<T> {
  const res = await fetch(ctx.url + p, {
    method,
    headers: { authorization: `Bearer ${ctx.pat}`, ...(body === undefined ? {} : JSON_HEADERS) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Half machine users, half humans without a password (argon2 would make seeding the bottleneck). */
async function seedUsers(ctx: Pick<BenchContext, "url" | "pat" | "orgId">, count: number): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const username = `user-${i}`;
      const body =
        i % 2 === 0
          ? { organizationId: ctx.orgId, username, machine: { name: `Service ${i}` } }
          : {
              organizationId: ctx.orgId,
              username,
              human: { profile: { givenName: `Given${i}`, familyName: `Family${i}` }, email: { email: `${username}@example.com` } },
            };
      ids[i] = (await api<{ id: string }>(ctx, "POST", "/v2/users/new", body)).id;
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEED_CONCURRENCY, count) }, worker));
  return ids;
}

export type Loader = "wrk" | "autocannon";

/** What one load run measured, whichever generator ran it. */
export interface LoadResult {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

interface LoadRun {
  url: string;
  method: Method;
  headers: Record<string, string>;
  body?: string;
  bodiesFile?: string;
  /** The first line of bodiesFile to send (earlier runs used the ones before). */
  offset: number;
  uniqueIds: boolean;
  connections: number;
  seconds: number;
}

const WRK_SCRIPT = fileURLToPath(new URL("./wrk.lua", import.meta.url));
const AUTOCANNON_VARY = fileURLToPath(new URL("./autocannon-vary.cjs", import.meta.url));

function wrkVersion(): string {
  const out = spawnSync("wrk", ["--version"], { encoding: "utf8" });
  return /wrk\s+(\S+)/.exec(`${out.stdout}${out.stderr}`)?.[1] ?? "";
}

function onPath(command: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

/** The core wrk is pinned to: the machine's last, when there are at least two and taskset exists. */
function loaderCore(): number | undefined {
  const cores = os.availableParallelism();
  return cores >= 2 && onPath("taskset") ? cores - 1 : undefined;
}

/** wrk in its own process (one thread), pinned to one core; bench/wrk.lua shapes the requests and prints the totals. */
async function runWrk(run: LoadRun, tmp: string): Promise<LoadResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_WRK_METHOD: run.method, SVC_WRK_RUN: randomBytes(4).toString("hex") };
  if (run.body !== undefined) {
    const file = path.join(tmp, "body");
    await writeFile(file, run.body);
    env.SVC_WRK_BODY_FILE = file;
  }
  if (run.uniqueIds) env.SVC_WRK_UNIQUE = "1";
  if (run.bodiesFile) {
    env.SVC_WRK_BODIES_FILE = run.bodiesFile;
    env.SVC_WRK_OFFSET = String(run.offset);
  }
  // wrk sets Content-Length itself.
  const headerArgs = Object.entries(run.headers)
    .filter(([k]) => k.toLowerCase() !== "content-length")
    .flatMap(([k, v]) => ["-H", `${k}: ${v}`]);
  const wrkArgs = ["-t1", `-c${run.connections}`, `-d${run.seconds}s`, "--timeout", "10s", "-s", WRK_SCRIPT, ...headerArgs, run.url, "--", "1"];
  const core = loaderCore();
  const [command, args] = core === undefined ? ["wrk", wrkArgs] : ["taskset", ["-c", String(core), "wrk", ...wrkArgs]];
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(command, args, { env, maxBuffer: 1 << 20 }, (err, out, errOut) => (err ? reject(new Error(`wrk: ${err.message} ${errOut}`)) : resolve(out))),
  );
  const line = stdout.split("\n").find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no totals:\n${stdout}`);
  const t = JSON.parse(line) as Totals & { status: number; connect: number; read: number; write: number; timeout: number };
  return loadResult(t, t.status, t.connect + t.read + t.write + t.timeout);
}

/** What wrk (bench/wrk.lua) and the flow client print: completed requests, the run's length, latency percentiles. */
interface Totals {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
}

function loadResult(t: Totals, non2xx: number, errors: number): LoadResult {
  return {
    requestsPerSecond: t.requests / (t.durationUs / 1e6),
    latencyP50Ms: t.p50Us / 1000,
    latencyP99Ms: t.p99Us / 1000,
    requests: t.requests,
    non2xx,
    errors,
  };
}

/** autocannon in one worker thread of this process: its own event loop, but this process's CPUs. */
async function runAutocannon(run: LoadRun): Promise<LoadResult> {
  const vary = run.bodiesFile ? "bodies" : run.uniqueIds ? "unique" : undefined;
  if (vary) {
    process.env.SVC_BENCH_VARY = vary;
    process.env.SVC_BENCH_BODIES_FILE = run.bodiesFile ?? "";
    process.env.SVC_BENCH_OFFSET = String(run.offset);
  }
  const r = await autocannon({
    url: run.url,
    method: run.method,
    headers: run.headers,
    body: run.body,
    connections: run.connections,
    duration: run.seconds,
    workers: 1,
    ...(vary ? { requests: [{ setupRequest: AUTOCANNON_VARY }] } : {}),
  });
  return {
    requestsPerSecond: r.requests.average,
    latencyP50Ms: r.latency.p50,
    latencyP99Ms: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

const FLOW_CLIENT = fileURLToPath(new URL("./flow-client.ts", import.meta.url));

/** A flow scenario: bench/flow-client.ts in its own process, pinned to the loader core like wrk. */
/**
 * CPU time (µs) of each PostgreSQL backend serving `database` (on this machine), by pid, from /proc (empty without
 * /proc or a database).
 */
async function postgresCpuUs(database: string | undefined): Promise<Map<string, number>> {
  const byPid = new Map<string, number>();
  if (!database) return byPid;
  const tick = 1e6 / 100;
  const pids = await readdir("/proc").catch(() => [] as string[]);
  await Promise.all(
    pids
      .filter((p) => /^\d+$/.test(p))
      .map(async (pid) => {
        const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
        const close = stat.lastIndexOf(")");
        if (!stat.slice(0, close).includes("(postgres")) return;
        const title = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
        if (!title.includes(` ${database} `)) return;
        const fields = stat.slice(close + 2).split(" ");
        byPid.set(pid, (Number(fields[11]) + Number(fields[12])) * tick);
      }),
  );
  return byPid;
}

/**
 * The backends' CPU between two readings: of the backends alive at the second, what they used since the first (all
 * of it for new ones). A backend that ended in between (an idle connection a pool closed) is left out rather than
 * subtracted.
 */
function postgresCpuSince(before: Map<string, number>, after: Map<string, number>): number {
  let us = 0;
  for (const [pid, t] of after) us += t - (before.get(pid) ?? 0);
  return us;
}

/** The tables sign-in flows grow: svc's and the persisting peer's. */
const GROWING_TABLES = ["Session", "SessionParticipant", "AuthRequest", "SamlRequest", "RefreshToken", "OAuthToken", "Event", "Delivery", PEER_TABLE];

/**
 * ANALYZE of the tables a flow run grows, once its warm-up is over, on a connection of its own that is closed again
 * before the run ends (so its CPU is not counted as the server's PostgreSQL's). A database in service gets this from
 * autovacuum as a table grows (after 50 rows, then every 10 %); this machine's cluster runs with autovacuum off, and
 * with statistics sampled when a table held one row PostgreSQL takes "instanceId" for a unique column and plans a
 * lookup by id through an index led by it (svc's sessions: every session of the instance read at each step).
 */
async function analyzeAfterWarmUp(warmupSeconds: number): Promise<void> {
  const url = process.env.SVC_BENCH_DATABASE_URL;
  if (!url) return;
  await new Promise((r) => setTimeout(r, warmupSeconds * 1000));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: string }>(
      "SELECT quote_ident(relname) AS t FROM pg_class WHERE relkind = 'r' AND relname = ANY($1) AND pg_table_is_visible(oid)",
      [GROWING_TABLES],
    );
    if (rows.length > 0) await client.query(`ANALYZE ${rows.map((r) => r.t).join(", ")}`);
  } finally {
    await client.end();
  }
}

/** The PostgreSQL database the bench runs on, if it does. */
function benchDatabase(): string | undefined {
  const url = process.env.SVC_BENCH_DATABASE_URL;
  if (!url) return undefined;
  // pg's and libpq's form for a Unix-domain socket, postgresql://user@/db?host=/dir, has no host for WHATWG URLs.
  const parsed = URL.canParse(url) ? new URL(url) : new URL(url.replace(/^([a-z]+:\/\/[^/@?#]*)@\//i, "$1@localhost/"));
  return decodeURIComponent(parsed.pathname.slice(1));
}

/** A flow run's result with the CPU each flow cost: of the server under test, its PostgreSQL backends, the client. */
export interface FlowResult extends LoadResult {
  serverCpuMsPerFlow: number;
  dbCpuMsPerFlow: number;
  clientCpuMsPerFlow: number;
  /** Statements svc sent per flow (counted in its driver: bench/statements.ts), when it is the server under test. */
  statementsPerFlow?: number;
  /** Of those, writes (INSERT, UPDATE, DELETE) and transactions that wrote (one commit each). */
  writesPerFlow?: number;
  commitsPerFlow?: number;
}

/**
 * A flow scenario: bench/flow-client.ts in its own process, pinned to the loader core like wrk. `serverCpuMs` is the
 * CPU time the server under test has used so far (svc: this process; a peer: its process, from /proc).
 */
export async function runFlow(spec: FlowSpec, serverCpuMs: () => number = ownCpuMs): Promise<FlowResult> {
  const analyzed = analyzeAfterWarmUp(spec.warmupSeconds);
  const server0 = serverCpuMs();
  const threads0 = serverCpuMs === ownCpuMs ? threadCpuMs() : undefined;
  const pgCpu0 = await postgresCpuUs(benchDatabase());
  const sql0 = statementCounts();
  const tally0 = statementTally();
  const nodeArgs = ["--import", "tsx", FLOW_CLIENT];
  const core = loaderCore();
  const [command, args] = core === undefined ? [process.execPath, nodeArgs] : ["taskset", ["-c", String(core), process.execPath, ...nodeArgs]];
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(command, args, { env: { ...process.env, SVC_BENCH_FLOW: JSON.stringify(spec) }, maxBuffer: 1 << 20 }, (err, out, errOut) => {
      if (errOut) process.stderr.write(errOut);
      return err ? reject(new Error(`flow client: ${err.message}`)) : resolve(out);
    }),
  );
  await analyzed;
  const t = JSON.parse(stdout.trim().split("\n").pop() ?? "") as Totals & { non2xx: number; errors: number; warmRequests: number; clientCpuUs: number };
  const flows = t.requests + t.non2xx + t.warmRequests;
  const sql = statementCounts();
  const own = serverCpuMs === ownCpuMs && sql.statements > sql0.statements;
  const r: FlowResult = {
    ...loadResult(t, t.non2xx, t.errors),
    serverCpuMsPerFlow: (serverCpuMs() - server0) / flows,
    dbCpuMsPerFlow: postgresCpuSince(pgCpu0, await postgresCpuUs(benchDatabase())) / 1000 / flows,
    clientCpuMsPerFlow: t.clientCpuUs / 1000 / flows,
    ...(own
      ? {
          statementsPerFlow: (sql.statements - sql0.statements) / flows,
          writesPerFlow: (sql.writes - sql0.writes) / flows,
          commitsPerFlow: (sql.commits - sql0.commits) / flows,
        }
      : {}),
  };
  process.stderr.write(
    `  CPU per flow: server ${r.serverCpuMsPerFlow.toFixed(2)} ms, PostgreSQL ${r.dbCpuMsPerFlow.toFixed(2)} ms, client ${r.clientCpuMsPerFlow.toFixed(2)} ms` +
      (own ? `; statements ${r.statementsPerFlow?.toFixed(1)}, writes ${r.writesPerFlow?.toFixed(1)}, commits ${r.commitsPerFlow?.toFixed(1)} per flow` : "") +
      "\n",
  );
  if (own && process.env.SVC_BENCH_SQL_LOG === "1") process.stderr.write(`${tallySince(tally0, flows).join("\n")}\n`);
  const threads1 = threads0 && threadCpuMs();
  if (threads0 && threads1) process.stderr.write(`  svc's threads per flow: ${threadsLine(threads0, threads1, flows)}\n`);
  return r;
}

/**
 * This process's CPU time (ms) by kind of thread (Linux: /proc/self/task; else undefined): the main thread ("main"),
 * libuv's pool ("libuv-worker": argon2, RSA signatures, async crypto), V8's helpers ("V8Worker": GC, compilation), and
 * the rest. Threads that ended in between are left out of the difference.
 */
export function threadCpuMs(): Map<string, Map<string, number>> | undefined {
  try {
    const byKind = new Map<string, Map<string, number>>();
    for (const tid of readdirSync("/proc/self/task")) {
      try {
        const comm = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
        const fields = readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
        const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
        const kind = tid === String(process.pid) ? "main" : comm === "libuv-worker" || comm === "V8Worker" ? comm : "other";
        const threads = byKind.get(kind) ?? new Map<string, number>();
        threads.set(tid, ms);
        byKind.set(kind, threads);
      } catch {
        // The thread ended meanwhile.
      }
    }
    return byKind;
  } catch {
    return undefined;
  }
}

/** "main 1.20 ms, libuv-worker 8.40 ms, …" per unit between two threadCpuMs() readings. */
export function threadsLine(before: Map<string, Map<string, number>>, after: Map<string, Map<string, number>>, units: number): string {
  const parts: string[] = [];
  for (const [kind, threads] of after) {
    let ms = 0;
    for (const [tid, t] of threads) ms += t - (before.get(kind)?.get(tid) ?? 0);
    parts.push(`${kind} ${(ms / units).toFixed(2)} ms`);
  }
  return parts.join(", ");
}

/** This process's CPU time in ms (svc runs in it). */
export const ownCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export async function runScenario(ctx: BenchContext, scenario: Scenario, seconds: number, connections: number, loader: Loader): Promise<ScenarioResult> {
  const { name, local, flow, connections: own } = scenario;
  connections = own ?? connections;
  if (local) return { name, ...(await local(ctx, seconds, connections, loader)) };
  if (flow) {
    const spec = { ...(await flow(ctx)), connections, warmupSeconds: WARMUP_SECONDS, seconds };
    // A flow's profile spans its warm-up too: the flow client runs both in one process.
    return { name, ...(await (profileDir ? profiled(name, () => runFlow(spec)) : runFlow(spec))) };
  }
  // svc's and the database backends' CPU per request over the measured run (not the warm-up), profiled if asked.
  const around = async (run: () => Promise<LoadResult>): Promise<LoadResult> => {
    const cpu = await cpuMeter(ctx, loader);
    const r = await (profileDir ? profiled(name, run) : run());
    return { ...r, ...(await cpu.perRequest(r.requests)) };
  };
  return { name, ...(await measure(await resolveRequest(ctx, scenario), { name, connections, seconds, loader, around })) };
}

/** `--profile <dir>`: a V8 CPU profile of this process (svc) over each request scenario's measured run. */
let profileDir: string | undefined;

async function profiled<R extends LoadResult>(name: string, run: () => Promise<R>): Promise<R> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.start");
    const result = await run();
    const { profile } = await session.post("Profiler.stop");
    const file = path.join(profileDir as string, `${name.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-|-$/g, "")}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    process.stderr.write(`  profile: ${file}\n`);
    return result;
  } finally {
    session.disconnect();
  }
}

/** A request scenario's request against `ctx`'s server, set up (once: a setup may create what must not exist twice). */
export async function resolveRequest(ctx: BenchContext, scenario: Scenario): Promise<TargetRequest> {
  const { anonymous, setup, uniqueIds, name: _n, connections: _c, flow: _f, local: _l, ...base } = scenario;
  const request: ScenarioRequest = { ...base, ...(await setup?.(ctx)) };
  const headers = { ...(anonymous ? {} : { authorization: `Bearer ${ctx.pat}` }), ...request.headers };
  return { ...request, url: ctx.url + request.path, headers, uniqueIds: uniqueIds ?? false };
}

/** One request, repeated, against any server (svc or a peer): the full URL and every header. */
export interface TargetRequest extends ScenarioRequest {
  url: string;
  headers: Record<string, string>;
  uniqueIds: boolean;
}

/** A warm-up, then the measured run, of one request with the chosen load generator. */
export async function measure(
  request: TargetRequest,
  opts: {
    name: string;
    connections: number;
    seconds: number;
    loader: Loader;
    cpuMs?: () => number;
    /** Also the CPU of the bench database's PostgreSQL backends over the measured run (all of them: svc's and a peer's). */
    db?: boolean;
    /** svc is the server: its commits' round trips are timed in its driver (bench/statements.ts). */
    svc?: boolean;
    /** Wraps the measured run (not the warm-up), e.g. to profile it. */
    around?: (run: () => Promise<LoadResult>) => Promise<LoadResult>;
  },
): Promise<Measured> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), "svc-bench-load-"));
  try {
    const run: LoadRun = {
      url: request.url,
      method: request.method,
      headers: request.headers,
      body: request.body,
      bodiesFile: request.bodiesFile,
      offset: 0,
      uniqueIds: request.uniqueIds,
      connections: opts.connections,
      seconds: WARMUP_SECONDS,
    };
    const load = (r: LoadRun) => (opts.loader === "wrk" ? runWrk(r, tmp) : runAutocannon(r));
    const warm = await load(run);
    // Requests still in flight when the warm-up stopped were sent too: skip past them as well.
    const cpuBefore = opts.cpuMs?.();
    const dbBefore = opts.db && benchDatabase() ? await postgresCpuUs(benchDatabase()) : undefined;
    const commits = commitMark();
    const measured = () => load({ ...run, seconds: opts.seconds, offset: warm.requests + 2 * opts.connections });
    const r: Measured = await (opts.around ? opts.around(measured) : measured());
    if (opts.cpuMs && cpuBefore !== undefined && r.requests > 0) r.cpuMsPerRequest = (opts.cpuMs() - cpuBefore) / r.requests;
    if (dbBefore && r.requests > 0) r.dbCpuMsPerRequest = postgresCpuSince(dbBefore, await postgresCpuUs(benchDatabase())) / 1000 / r.requests;
    const commitTimes = opts.svc ? commitTimesSince(commits) : undefined;
    // Only where svc commits per request (batched: up to one commit per group of requests), not the odd background write.
    if (commitTimes && commitTimes.commits >= r.requests / 100) r.commitMs = commitTimes;
    if (r.non2xx > 0) {
      const body = request.bodiesFile ? undefined : request.body?.split("[<id>]").join(randomBytes(4).toString("hex"));
      const sample = await fetch(run.url, { method: request.method, headers: request.headers, body });
      process.stderr.write(`  ${opts.name}: ${r.non2xx} error responses, for example HTTP ${sample.status} ${(await sample.text()).slice(0, 300)}\n`);
    }
    return r;
  } finally {
    await rm(tmp, { recursive: true, force: true });
    if (request.bodiesFile) await rm(request.bodiesFile, { force: true });
  }
}

/**
 * Measures CPU time across one load run: this process's (svc's; with wrk the load is elsewhere, with autocannon it is
 * not, so then only the database's is kept) and the database backends'.
 */
async function cpuMeter(ctx: BenchContext, loader: Loader) {
  const svc0 = process.cpuUsage();
  const machine0 = machineCpuMs();
  // The backends by pid (what each used since the first reading: a backend that ended in between is left out rather
  // than subtracted, which made the sum of the live ones go negative); the sum of the live ones without /proc's names.
  const byPid0 = benchDatabase() ? await postgresCpuUs(benchDatabase()) : undefined;
  const db0 = byPid0?.size ? undefined : await ctx.databaseCpuMs();
  return {
    async perRequest(requests: number): Promise<Pick<ScenarioResult, "svcCpuMsPerRequest" | "dbCpuMsPerRequest">> {
      if (requests <= 0) return {};
      const svc = process.cpuUsage(svc0);
      const machine1 = machineCpuMs();
      if (machine0 && machine1) {
        // Every process's CPU (svc, PostgreSQL, the load generator, a receiver, anything else running): on a machine
        // whose cores are all busy, the rates of two scenarios are in the inverse ratio of these.
        const busy = machine1.busy - machine0.busy;
        const all = machine1.total - machine0.total;
        process.stderr.write(
          `  machine: ${(busy / requests).toFixed(2)} ms of CPU per request (every process), the cores ${Math.round((100 * busy) / all)} % busy\n`,
        );
      }
      const db = byPid0?.size
        ? postgresCpuSince(byPid0, await postgresCpuUs(benchDatabase())) / 1000
        : db0 === undefined
          ? undefined
          : ((await ctx.databaseCpuMs()) ?? Number.NaN) - db0;
      return {
        ...(loader === "wrk" ? { svcCpuMsPerRequest: (svc.user + svc.system) / 1000 / requests } : {}),
        ...(db !== undefined && Number.isFinite(db) ? { dbCpuMsPerRequest: db / requests } : {}),
      };
    },
  };
}

const CLOCK_TICKS_PER_SECOND = 100;

/** The machine's CPU time (ms) since boot, busy and in all (/proc/stat; Linux only, else undefined). */
export function machineCpuMs(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
    // cpu user nice system idle iowait irq softirq steal …
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    // Idle, waiting for I/O, and stolen by the hypervisor: not this machine's work.
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0) + (ticks[7] ?? 0);
    return { busy: ((total - idle) * 1000) / CLOCK_TICKS_PER_SECOND, total: (total * 1000) / CLOCK_TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/**
 * The CPU time (ms) of the PostgreSQL backends connected to the bench database, read from /proc: only for a server
 * on this machine (the backends are its processes) and Linux; undefined otherwise. Backends that ended are not
 * counted, which is why the pool is warm (the warm-up) before the first reading.
 */
async function backendsCpuMs(db: Server["db"]): Promise<number | undefined> {
  if (db.kind !== "postgres" || process.platform !== "linux") return undefined;
  const rows = await db.prisma.$queryRawUnsafe<{ pid: number }[]>("SELECT pid FROM pg_stat_activity WHERE datname = current_database()");
  let ticks = 0;
  for (const { pid } of rows) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
    if (stat === undefined) return undefined;
    // Fields after the command name (which may hold spaces): utime and stime are the 14th and 15th of the line.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** Padded so that it reads well in a terminal and is already in the layout the formatter (biome) wants. */
function markdownTable(results: ScenarioResult[]): string {
  const fmt = (n: number, digits: number) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const header = ["scenario", "req/s (mean)", "p50 ms", "p99 ms", "non-2xx", "errors", "svc CPU ms/req", "db CPU ms/req"];
  const opt = (n: number | undefined) => (n === undefined ? "" : fmt(n, 2));
  const rows = results.map((r) => [
    r.name,
    fmt(r.requestsPerSecond, 0),
    fmt(r.latencyP50Ms, 1),
    fmt(r.latencyP99Ms, 1),
    String(r.non2xx),
    String(r.errors),
    opt(r.svcCpuMsPerRequest),
    opt(r.dbCpuMsPerRequest),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

const RESULTS_FILE = fileURLToPath(new URL("./results.md", import.meta.url));
const RESULTS_TITLE = "# svc bench results\n\nWritten by `npm run bench`; one section per database, each from its latest full run.\n";

/** Keeps one "## <database>" section per database kind in bench/results.md. */
async function recordResults(section: string): Promise<void> {
  const existing = await readFile(RESULTS_FILE, "utf8").catch(() => "");
  const sections = existing
    .split(/^(?=## )/m)
    .filter((s) => s.startsWith("## "))
    .map((s) => s.trimEnd());
  const heading = section.slice(0, section.indexOf("\n"));
  const i = sections.findIndex((s) => s.startsWith(`${heading}\n`));
  if (i >= 0) sections[i] = section.trimEnd();
  else sections.push(section.trimEnd());
  await writeFile(RESULTS_FILE, `${RESULTS_TITLE}\n${sections.join("\n\n")}\n`);
}

/** Where the figures come from: the machine, the load generator and where it runs, the load before the run. */
function machineLine(loader: Loader, dbKind: string, loadBefore: number): string {
  const cpus = os.cpus();
  const core = loader === "wrk" ? loaderCore() : undefined;
  const generator =
    loader === "wrk"
      ? `the load generator is wrk ${wrkVersion()}, one thread in its own process${core === undefined ? "" : `, pinned to core ${core} (taskset)`}; ${dbKind === "postgres" ? "svc (this one process) and PostgreSQL run" : "svc (this one process, with its embedded database) runs"} unpinned on the machine's cores, beside it`
      : "the load generator is autocannon in a worker thread of the server's own process, competing with it for the CPU (install wrk for figures closer to capacity)";
  return (
    `${os.availableParallelism()} CPU cores (${cpus[0]?.model.trim() ?? "unknown CPU"}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; ${generator}. ` +
    `Load average (1 min) before the run: ${loadBefore.toFixed(2)}.`
  );
}

interface SideBySideOptions {
  loader: Loader;
  seconds: number;
  connections: number;
  rounds: number;
  json: boolean;
  loadBefore: number;
  config: Config;
  dbKind: string;
  log: (msg: string) => void;
}

/** `--peer oidc-provider`: the token scenarios on svc and on oidc-provider, with ratios (never recorded in results.md). */
async function sideBySide(ctx: BenchContext, o: SideBySideOptions): Promise<void> {
  const rows = await runPeerComparison(
    ctx,
    {
      resolveRequest,
      measure: (request, name, cpuMs, svc) =>
        measure(request, { name, connections: o.connections, seconds: o.seconds, loader: o.loader, cpuMs, svc, db: true }),
      log: o.log,
    },
    { rounds: o.rounds, databaseUrl: o.config.databaseUrl, poolSize: o.config.databasePoolSize, ttlSeconds: o.config.accessTokenLifetimeClientCredentials },
  );
  const machine = `${machineLine(o.loader, o.dbKind, o.loadBefore)} The peer runs in a process of its own, unpinned as well, idle while svc is measured and the other way round.`;
  if (o.json) {
    process.stdout.write(
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, seconds: o.seconds, connections: o.connections, machine, rows }, null, 2)}\n`,
    );
    return;
  }
  const report = [
    `## svc beside oidc-provider ${PEER_VERSION}`,
    "",
    `- ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, svc on ${o.dbKind === "postgres" ? "PostgreSQL" : "the embedded database (PGlite)"}`,
    `- ${o.seconds} s per measurement after a ${WARMUP_SECONDS} s warm-up, ${o.connections} connections, HTTP/1.1 keep-alive; per round svc, then each peer`,
    `- ${machine}`,
    "",
    peerTable(rows),
    "",
  ].join("\n");
  process.stdout.write(report);
}

/** `--targets`: issue 28's targets side by side in one run (bench/targets.ts); printed, never recorded in results.md. */
async function targetsRun(ctx: BenchContext, o: Omit<SideBySideOptions, "rounds">): Promise<void> {
  const measureOn = (request: TargetRequest, name: string, cpuMs?: () => number, svc?: boolean) =>
    measure(request, { name, connections: o.connections, seconds: o.seconds, loader: o.loader, cpuMs, svc, db: true });
  const report = await runTargets(
    ctx,
    {
      // --profile: a V8 CPU profile of svc over each of its flow runs (the peers' runs are not svc's work).
      runFlow: (spec, serverCpuMs) => (profileDir && !serverCpuMs ? profiled(`targets ${spec.kind}`, () => runFlow(spec)) : runFlow(spec, serverCpuMs)),
      runScenario: (scenario) => runScenario(ctx, scenario, o.seconds, o.connections, o.loader),
      peer: { resolveRequest, measure: measureOn, log: o.log },
      log: o.log,
    },
    {
      seconds: o.seconds,
      connections: o.connections,
      warmupSeconds: WARMUP_SECONDS,
      databaseUrl: o.config.databaseUrl,
      poolSize: o.config.databasePoolSize,
      ttlSeconds: o.config.accessTokenLifetimeClientCredentials,
    },
  );
  if (o.json) {
    process.stdout.write(
      `${JSON.stringify({ date: new Date().toISOString(), node: process.version, machine: machineLine(o.loader, o.dbKind, o.loadBefore), ...report }, null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(
    [
      `## Issue 28 targets, side by side (${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC)`,
      "",
      `- Node ${process.version}, svc on ${o.dbKind === "postgres" ? "PostgreSQL" : "the embedded database (PGlite)"}; ${o.seconds} s per measurement after a ${WARMUP_SECONDS} s warm-up, ${o.connections} connections (flows: ${o.connections} loops of whole flows in one client process pinned to the loader core)`,
      `- ${machineLine(o.loader, o.dbKind, o.loadBefore)} The peers run in processes of their own, idle while svc is measured and the other way round.`,
      "",
      targetReport(report),
    ].join("\n"),
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: "string", multiple: true },
      json: { type: "boolean", default: false },
      loader: { type: "string" },
      peer: { type: "string" },
      rounds: { type: "string" },
      profile: { type: "string" },
      targets: { type: "boolean", default: false },
    },
  });
  countStatements();
  if (values.profile) {
    profileDir = path.resolve(values.profile);
    await mkdir(profileDir, { recursive: true });
  }
  if (values.peer !== undefined && values.peer !== "oidc-provider") throw new Error(`--peer must be oidc-provider, got "${values.peer}"`);
  const loader = (values.loader ?? (onPath("wrk") ? "wrk" : "autocannon")) as Loader;
  if (loader !== "wrk" && loader !== "autocannon") throw new Error(`--loader must be wrk or autocannon, got "${values.loader}"`);
  const wanted = (values.scenario ?? []).flatMap((s) => s.split(",")).map((s) => s.trim().toLowerCase());
  const scenarios = wanted.length ? SCENARIOS.filter((s) => wanted.some((w) => s.name.toLowerCase().includes(w))) : SCENARIOS;
  if (!scenarios.length) throw new Error(`no scenario matches ${wanted.join(", ")}; known: ${SCENARIOS.map((s) => s.name).join(", ")}`);

  // 10,000 users: the scale at which ListUsers with a filter and sort must answer in under 50 ms.
  const users = envInt("SVC_BENCH_USERS", 10_000, 1);
  const seconds = envInt("SVC_BENCH_SECONDS", 10, 1);
  const connections = envInt("SVC_BENCH_CONNECTIONS", 10, 1);
  const databaseUrl = process.env.SVC_BENCH_DATABASE_URL;
  const log = (msg: string) => process.stderr.write(`${msg}\n`);

  // Other work on the machine skews every figure; the load average before the run shows how much there was.
  const loadBefore = os.loadavg()[0] ?? 0;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "svc-bench-"));
  let server: Server | undefined;
  try {
    const config = loadConfig({
      SVC_PORT: "0",
      SVC_HOST: "127.0.0.1",
      SVC_DATA_DIR: dataDir,
      // Errors show up as non-2xx counts with a sample response below; a log line per failed request would drown the table.
      SVC_LOG_LEVEL: "silent",
      // The events scenarios' receiver is on loopback.
      SVC_ACTIONS_ALLOW_PRIVATE: "true",
      // A fresh database: any master key will do (PostgreSQL requires one).
      ...(databaseUrl ? { SVC_DATABASE_URL: databaseUrl, SVC_MASTER_KEY: process.env.SVC_MASTER_KEY || randomBytes(32).toString("base64") } : {}),
    });
    server = await startServer(config);
    const pat = await readFile(path.join(dataDir, "admin.pat"), "utf8").then(
      (s) => s.trim(),
      () => {
        throw new Error("no admin.pat was written: the bench needs a fresh, empty database to bootstrap");
      },
    );
    const base = { url: server.url, pat };
    const { instance } = await api<{ instance: { defaultOrganizationId: string } }>(base, "GET", "/v2/instance");
    const seedStarted = Date.now();
    const userIds = await seedUsers({ ...base, orgId: instance.defaultOrganizationId }, users);
    log(`seeded ${users} users in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s on the ${server.db.kind} database`);
    // A database in service has planner statistics (autovacuum's ANALYZE); a freshly seeded one has none, and
    // without them PostgreSQL picks wrong indexes. This machine's cluster runs with autovacuum off, so do it here.
    await server.db.prisma.$executeRawUnsafe("ANALYZE");
    const db = server.db;
    const ctx: BenchContext = {
      ...base,
      orgId: instance.defaultOrganizationId,
      userIds,
      analyze: async () => {
        await db.prisma.$executeRawUnsafe("ANALYZE");
      },
      databaseCpuMs: () => backendsCpuMs(db),
    };

    if (values.targets) {
      await targetsRun(ctx, { loader, seconds, connections, json: values.json, loadBefore, config, dbKind: server.db.kind, log });
      return;
    }
    if (values.peer) {
      const rounds = values.rounds === undefined ? 1 : Number(values.rounds);
      if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a positive integer, got "${values.rounds}"`);
      await sideBySide(ctx, { loader, seconds, connections, rounds, json: values.json, loadBefore, config, dbKind: server.db.kind, log });
      return;
    }
    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      log(`running ${scenario.name} (${WARMUP_SECONDS} s warm-up, ${seconds} s measured, ${scenario.connections ?? connections} connections)`);
      results.push(await runScenario(ctx, scenario, seconds, connections, loader));
    }

    const machine = machineLine(loader, server.db.kind, loadBefore);
    const meta = {
      date: new Date().toISOString(),
      node: process.version,
      database: server.db.kind === "postgres" ? "PostgreSQL" : "embedded (PGlite)",
      users: users + 2,
      seconds,
      connections,
      machine,
    };
    const table = markdownTable(results);
    const report = [
      `## ${meta.database}`,
      "",
      `- ${meta.date.slice(0, 16).replace("T", " ")} UTC, Node ${meta.node}, database: ${meta.database}, ${meta.users} users (${users} seeded, half machine users, half humans without a password, plus the two bootstrap users)`,
      "- the SCIM scenarios first top the organization up to 10,000 human users through SCIM Bulk (SCIM does not see machine users); the creates come on top",
      "- planner statistics refreshed (ANALYZE) after seeding, as autovacuum does on a database in service",
      `- ${seconds} s per scenario after a ${WARMUP_SECONDS} s warm-up, ${connections} connections (1 for the latency scenarios), HTTP/1.1 keep-alive`,
      `- ${machine}`,
      "- svc CPU ms/req and db CPU ms/req: CPU time of svc's process and of the PostgreSQL backends of the bench database per request during the measured run (from /proc; PostgreSQL on this machine only); other work on the machine moves them far less than it moves req/s",
      "",
      table,
      "",
    ].join("\n");
    // Only a full run replaces the recorded figures, and only those of the same database.
    if (!wanted.length) await recordResults(report);
    process.stdout.write(values.json ? `${JSON.stringify({ ...meta, results }, null, 2)}\n` : `${report}`);
  } finally {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// Importing this module (for its types or scenarios) must not start a run.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
