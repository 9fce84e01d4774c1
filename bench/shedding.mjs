// Load shedding, measured (issue 25, finding 2): goodput (2xx answers per second) of svc without a limit and with
// SVC_MAX_INFLIGHT_REQUESTS, under more concurrent requests than it can serve, and the latency of /healthz meanwhile.
//   node bench/shedding.mjs [seconds=10] [connections=64] [limit=16]
// Each configuration is a fresh child svc on a fresh database: on PostgreSQL when SVC_BENCH_DATABASE_URL names a server
// (a database is created there for each run and dropped after), else on the embedded one. The load is ListUsers over
// REST with the instance admin's PAT (autocannon, a separate process); /healthz is probed every 100 ms from here, each
// probe on a new connection as kubelet's are, on the main port and on the probe port (SVC_PROBE_PORT), and the event
// loop's delay is read from svc's own metrics at the end of each run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

const [seconds = 10, connections = 64, limit = 16] = process.argv.slice(2).map(Number);
const ROOT = path.resolve(import.meta.dirname, "..");

const SERVER = process.env.SVC_BENCH_DATABASE_URL;

async function admin(sql) {
  const c = new pg.Client({ connectionString: SERVER });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function start(env) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "svc-bench-shed-"));
  const db = `svc_bench_shed_${randomBytes(4).toString("hex")}`;
  if (SERVER) {
    await admin(`CREATE DATABASE ${db}`);
    const url = new URL(SERVER);
    url.pathname = `/${db}`;
    env = { ...env, SVC_DATABASE_URL: url.href, SVC_MASTER_KEY: randomBytes(32).toString("base64") };
  }
  const proc = spawn(process.execPath, ["bin/svc.js", "start"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_PORT: "0", SVC_HOST: "127.0.0.1", SVC_DATA_DIR: dataDir, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // The port from the "svc listening" line; the request log lines after it are read and dropped.
  const [port, probePort] = await new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (c) => {
      out += c;
      const m = /"port":(\d+),(?:"probePort":(\d+),)?.*svc listening/.exec(out);
      if (m) resolve([Number(m[1]), Number(m[2])]);
    });
    proc.once("exit", (code) => reject(new Error(`svc exited with ${code}: ${out}`)));
  });
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    probePort,
    pat,
    async stop() {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      await rm(dataDir, { recursive: true, force: true });
      if (SERVER) await admin(`DROP DATABASE ${db} WITH (FORCE)`);
    },
  };
}

function autocannon(url, pat) {
  return new Promise((resolve, reject) => {
    const args = ["autocannon", "-j", "-d", String(seconds), "-c", String(connections), "-m", "POST", "-H", `authorization=Bearer ${pat}`];
    args.push("-H", "content-type=application/json", "-b", "{}", `${url}/v2/users`);
    const p = spawn("npx", args, { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    p.stdout.on("data", (c) => {
      out += c;
    });
    p.once("exit", () => {
      try {
        resolve(JSON.parse(out));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** One GET /healthz on a new connection (no keep-alive, as kubelet probes): milliseconds, or Infinity on failure. */
function probeOnce(port) {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/healthz", agent: false, timeout: 20_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode === 200 ? performance.now() - t0 : Number.POSITIVE_INFINITY));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(Number.POSITIVE_INFINITY));
  });
}

async function probeWhile(port, running) {
  const ms = [];
  while (!running.done) {
    ms.push(await probeOnce(port));
    await new Promise((r) => setTimeout(r, 100));
  }
  ms.sort((a, b) => a - b);
  return { n: ms.length, p50: ms[Math.floor(ms.length * 0.5)], p99: ms[Math.floor(ms.length * 0.99)], max: ms.at(-1) };
}

async function measure(label, env) {
  const svc = await start(env);
  try {
    // Warm-up: the first requests compile the query plans and fill the caches.
    await autocannon(svc.url, svc.pat).catch(() => undefined);
    const running = { done: false };
    const probes = probeWhile(svc.port, running);
    const probesOwn = svc.probePort ? probeWhile(svc.probePort, running) : undefined;
    const r = await autocannon(svc.url, svc.pat);
    running.done = true;
    const healthz = await probes;
    const own = await probesOwn;
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    const lag = (q) => Number(new RegExp(`^svc_nodejs_eventloop_lag_${q}_seconds (\\S+)`, "m").exec(metrics)?.[1] ?? Number.NaN) * 1000;
    const ok = r["2xx"] / seconds;
    const shed = r.non2xx / seconds;
    console.log(
      `${label.padEnd(22)} goodput ${ok.toFixed(0).padStart(6)} 2xx/s  shed ${shed.toFixed(0).padStart(6)}/s  ` +
        `2xx latency p50 ${r.latency.p50} ms p99 ${r.latency.p99} ms  /healthz p50 ${healthz.p50.toFixed(1)} ms p99 ${healthz.p99.toFixed(1)} ms max ${healthz.max.toFixed(1)} ms (${healthz.n} probes)` +
        (own ? `  probe port p50 ${own.p50.toFixed(1)} ms p99 ${own.p99.toFixed(1)} ms max ${own.max.toFixed(1)} ms` : "") +
        `  event loop delay p50 ${lag("p50").toFixed(1)} ms p99 ${lag("p99").toFixed(1)} ms max ${lag("max").toFixed(1)} ms  load ${loadavg()[0].toFixed(1)}`,
    );
    return ok;
  } finally {
    await svc.stop();
  }
}

console.log(`ListUsers over REST, ${connections} connections, ${seconds} s per run, ${SERVER ? "PostgreSQL" : "embedded database"}`);
const unlimited = await measure("unlimited", {});
const limited = await measure(`limit ${limit}`, { SVC_MAX_INFLIGHT_REQUESTS: String(limit), SVC_PROBE_PORT: "0" });
console.log(`goodput with the limit: ${((100 * limited) / unlimited).toFixed(0)} % of the unlimited server's`);
