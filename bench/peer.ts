// `npm run bench -- --peer oidc-provider`: the OAuth token service beside panva's oidc-provider, in the same run,
// with the same load generator, connections and durations. The peer runs in a process of its own (bench/peer/
// oidc-provider.ts), once with its in-memory adapter and, when svc runs on PostgreSQL, once with tokens persisted in
// the same PostgreSQL (bench/peer/pg-adapter.ts). Each round measures every scenario on svc and on each peer back to
// back, so that the machine's drift touches all of them alike; the ratios are svc's requests per second over the
// peer's.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { PeerSettings } from "./peer/oidc-provider.js";
import type { BenchContext, LoadResult, Scenario, TargetRequest } from "./run.js";
import { OAUTH_SCENARIOS } from "./scenarios/oauth.js";

/**
 * A load run's result, with the server's CPU per request when it could be read, the bench database's PostgreSQL
 * backends' CPU per request (svc's, or the persisting peer's: the other server is idle meanwhile), and for svc the
 * round trip of its commits (bench/statements.ts).
 */
export type Measured = LoadResult & { cpuMsPerRequest?: number; dbCpuMsPerRequest?: number; commitMs?: { p50: number; p90: number; commits: number } };

/** This process's CPU time (svc runs in it; the bench's own work waits while wrk runs), in ms. */
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** A child's CPU time in ms from /proc (Linux; utime + stime in clock ticks, 100 a second), or NaN elsewhere. */
function childCpuMs(pid: number | undefined): () => number {
  return () => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return Number.NaN;
    }
  };
}

export interface PeerDeps {
  resolveRequest(ctx: BenchContext, scenario: Scenario): Promise<TargetRequest>;
  /** `cpuMs`: the CPU time the server under test has used so far, for its CPU per request over the measured run. */
  measure(request: TargetRequest, name: string, cpuMs?: () => number, svc?: boolean): Promise<Measured>;
  log(msg: string): void;
}

export interface Peer {
  label: string;
  url: string;
  child: ChildProcess;
}

/** The peer's version, as installed. */
export const PEER_VERSION = (createRequire(import.meta.url)("oidc-provider/package.json") as { version: string }).version;

const PEER_SCRIPT = fileURLToPath(new URL("./peer/oidc-provider.ts", import.meta.url));
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const CLIENT_ID = "bench-peer";
const CLIENT_SECRET = randomBytes(32).toString("base64url");
const RESOURCE = "urn:svc:bench:api";
const SCOPE = "api";
const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;

/** Starts the peer process and waits for the URL it serves on. */
export async function startPeer(label: string, settings: PeerSettings): Promise<Peer> {
  const child = spawn(process.execPath, ["--import", "tsx", PEER_SCRIPT], {
    env: { ...process.env, SVC_PEER: JSON.stringify(settings) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.on("exit", (code) => reject(new Error(`the ${label} peer exited (${code}) before it served`)));
  });
  return { label, url, child };
}

export async function stopPeer(peer: Peer): Promise<void> {
  if (peer.child.exitCode !== null) return;
  const exited = new Promise((resolve) => peer.child.once("exit", resolve));
  peer.child.kill("SIGTERM");
  await exited;
}

/** A token from the peer, for the introspection scenario. */
async function peerToken(url: string): Promise<string> {
  const res = await fetch(`${url}/token`, {
    method: "POST",
    headers: { ...FORM, authorization: basic },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: SCOPE }),
  });
  if (!res.ok) throw new Error(`peer token: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** The scenarios compared: svc's own (from bench/scenarios/oauth.ts) and the same request to oidc-provider. */
const COMPARED: { svc: string; peer(url: string): Promise<TargetRequest> }[] = [
  {
    svc: "OAuth client credentials, opaque",
    peer: async (url) => ({
      method: "POST",
      path: "/token",
      url: `${url}/token`,
      headers: { ...FORM, authorization: basic },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: SCOPE }).toString(),
      uniqueIds: false,
    }),
  },
  {
    svc: "OAuth introspection of an opaque token",
    peer: async (url) => ({
      method: "POST",
      path: "/token/introspection",
      url: `${url}/token/introspection`,
      headers: { ...FORM, authorization: basic },
      body: new URLSearchParams({ token: await peerToken(url) }).toString(),
      uniqueIds: false,
    }),
  },
];

export interface PeerRow {
  scenario: string;
  round: number;
  svc: Measured;
  peers: { label: string; result: Measured }[];
}

export interface PeerOptions {
  rounds: number;
  /** svc's PostgreSQL database (the persisted peer keeps its table there); undefined on the embedded database. */
  databaseUrl?: string;
  poolSize: number;
  ttlSeconds: number;
}

/** Every compared scenario, `rounds` times: svc, then each peer. */
export async function runPeerComparison(ctx: BenchContext, deps: PeerDeps, opts: PeerOptions): Promise<PeerRow[]> {
  const base = { poolSize: opts.poolSize, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, ttlSeconds: opts.ttlSeconds, resource: RESOURCE, scope: SCOPE };
  const peers: Peer[] = [];
  try {
    peers.push(await startPeer("oidc-provider, in memory", { ...base, adapter: "memory" }));
    if (opts.databaseUrl) peers.push(await startPeer("oidc-provider, PostgreSQL", { ...base, adapter: "postgres", databaseUrl: opts.databaseUrl }));
    else deps.log("svc runs on the embedded database: the peer with tokens in PostgreSQL needs SVC_BENCH_DATABASE_URL, skipped");
    const requests = [];
    for (const c of COMPARED) {
      const scenario = OAUTH_SCENARIOS.find((s) => s.name === c.svc);
      if (!scenario) throw new Error(`no svc scenario named ${c.svc}`);
      requests.push({ name: c.svc, svc: await deps.resolveRequest(ctx, scenario), peers: await Promise.all(peers.map((p) => c.peer(p.url))) });
    }
    const rows: PeerRow[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      for (const r of requests) {
        deps.log(`round ${round}: ${r.name} on svc`);
        const svc = await deps.measure(r.svc, `${r.name} (svc)`, ownCpuMs, true);
        const results = [];
        for (const [i, peer] of peers.entries()) {
          deps.log(`round ${round}: ${r.name} on ${peer.label}`);
          const result = await deps.measure(r.peers[i] as TargetRequest, `${r.name} (${peer.label})`, childCpuMs(peer.child.pid));
          results.push({ label: peer.label, result });
        }
        rows.push({ scenario: r.name, round, svc, peers: results });
      }
    }
    return rows;
  } finally {
    await Promise.all(peers.map(stopPeer));
  }
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A Markdown table: req/s, p99 and CPU per request on svc and on each peer, and svc's throughput ratio to each. */
export function peerTable(rows: PeerRow[]): string {
  const labels = rows[0]?.peers.map((p) => p.label) ?? [];
  const header = ["scenario", "round", "svc", ...labels.flatMap((l) => [l, `svc ÷ ${l}`])];
  const cell = (r: Measured) =>
    `${fmt(r.requestsPerSecond)}/s, p99 ${fmt(r.latencyP99Ms, 1)} ms${Number.isFinite(r.cpuMsPerRequest) ? `, ${fmt(r.cpuMsPerRequest as number, 3)} ms CPU` : ""}` +
    (r.dbCpuMsPerRequest !== undefined && r.dbCpuMsPerRequest >= 0.005 ? ` + ${fmt(r.dbCpuMsPerRequest, 3)} ms PostgreSQL` : "") +
    (r.commitMs ? `, ${fmt(r.commitMs.commits / r.requests, 2)} commits/req of p50 ${fmt(r.commitMs.p50, 1)} ms` : "") +
    (r.non2xx + r.errors > 0 ? `, ${r.non2xx + r.errors} FAILED` : "");
  const body = rows.map((row) => [
    row.scenario,
    String(row.round),
    cell(row.svc),
    ...row.peers.flatMap((p) => [cell(p.result), `${fmt(row.svc.requestsPerSecond / p.result.requestsPerSecond, 2)}×`]),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...body.map(line)].join("\n");
}
