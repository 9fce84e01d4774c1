// The probe port (SVC_PROBE_PORT): /healthz and /readyz answered by a worker thread with an event loop and an accept
// queue of its own, so that a probe is answered in milliseconds however busy the main thread is (issue 25, finding 2:
// under overload /healthz took seconds on the main port; the embedded database runs its queries on the main thread,
// and a saturated loop delays every callback behind them). The answers stay true: the main thread tells the worker
// that it runs (a heartbeat) and whether it is ready (the same check as /readyz, every READY_EVERY_MS); /healthz is 503
// when the heartbeat stopped for ALIVE_MS (a hung main thread is what a liveness probe must catch), /readyz is 503 when
// the last check said so or is older than READY_STALE_MS.
import { Worker } from "node:worker_threads";

/** How often the main thread checks readiness and reports (its report is the heartbeat too). */
const READY_EVERY_MS = 500;
/** A main thread silent this long is not alive: its event loop is stuck. */
export const ALIVE_MS = 10_000;
/** A readiness report older than this is not believed. */
const READY_STALE_MS = 5_000;
const BACKLOG = 4096;

// Plain JavaScript run with `eval` (no file to bundle or resolve): the worker's whole program.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
let beat = Date.now();
let ready = false;
let readyAt = 0;
const server = http.createServer({ keepAliveTimeout: 5000, headersTimeout: 10000, requestTimeout: 10000 }, (req, res) => {
  const path = (req.url || "").split("?", 1)[0];
  const now = Date.now();
  let status = 404;
  let body = '{"code":5,"message":"the probe port serves /healthz and /readyz only","details":[]}';
  if ((req.method === "GET" || req.method === "HEAD") && path === "/healthz") {
    const alive = now - beat < workerData.aliveMs;
    status = alive ? 200 : 503;
    body = alive ? '{"status":"ok"}' : '{"status":"unresponsive"}';
  } else if ((req.method === "GET" || req.method === "HEAD") && path === "/readyz") {
    const ok = ready && now - readyAt < workerData.readyStaleMs;
    status = ok ? 200 : 503;
    body = ok ? '{"status":"ready"}' : '{"status":"unavailable"}';
  }
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(req.method === "HEAD" ? undefined : body);
});
parentPort.on("message", (m) => {
  if (m.close) {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    return;
  }
  beat = Date.now();
  if (typeof m.ready === "boolean") {
    ready = m.ready;
    readyAt = beat;
  }
});
server.on("error", (err) => parentPort.postMessage({ error: String(err && err.message) }));
server.listen({ port: workerData.port, host: workerData.host, backlog: ${BACKLOG} }, () => parentPort.postMessage({ port: server.address().port }));
`;

export interface ProbePort {
  readonly port: number;
  /** Readiness is off from now on (shutdown began). */
  notReady(): void;
  close(): Promise<void>;
}

/** Starts the probe port's worker on `host:port`; `ready` is the readiness check the main thread runs for it. */
export async function startProbePort(host: string, port: number, ready: () => Promise<boolean>): Promise<ProbePort> {
  const worker = new Worker(WORKER, { eval: true, workerData: { host, port, aliveMs: ALIVE_MS, readyStaleMs: READY_STALE_MS } });
  const bound = await new Promise<number>((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (m: { port?: number; error?: string }) => (m.port ? resolve(m.port) : reject(new Error(`the probe port: ${m.error}`))));
  });
  let stopped = false;
  let off = false;
  let checking = false;
  const report = () => {
    if (stopped) return;
    // The heartbeat: the main thread's event loop ran this, whatever the readiness check is doing.
    if (checking) {
      worker.postMessage({});
      return;
    }
    if (off) {
      worker.postMessage({ ready: false });
      return;
    }
    checking = true;
    ready().then(
      (ok) => {
        checking = false;
        if (!stopped) worker.postMessage({ ready: ok && !off });
      },
      () => {
        checking = false;
        if (!stopped) worker.postMessage({ ready: false });
      },
    );
  };
  report();
  const timer = setInterval(report, READY_EVERY_MS);
  timer.unref();
  worker.unref();
  return {
    port: bound,
    notReady() {
      off = true;
      worker.postMessage({ ready: false });
    },
    async close() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
      worker.postMessage({ close: true });
      await Promise.race([exited, new Promise<void>((r) => setTimeout(r, 1_000).unref())]);
      await worker.terminate();
    },
  };
}
