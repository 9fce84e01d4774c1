// Issue 25, finding 2 (the /healthz tails): under overload a probe's new connection waited seconds. Node's default
// listen backlog (511) overflowed when hundreds of connections arrived while the event loop was busy, and the kernel
// dropped the SYNs past it, which a client retries after 1, 3, 7 s. svc now listens with a backlog of 4096 (capped by
// net.core.somaxconn), and SVC_PROBE_PORT gives the probes a port of their own, served by a worker thread: its own
// accept queue and event loop, no request log, no shedding. Here svc is stopped (SIGSTOP: nothing is accepted) while 800 connections arrive: all of them complete
// their handshake in the kernel's queue (before: 512), and a probe sent meanwhile is answered as soon as svc runs again.
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ChildServer, spawnServer } from "../support/server.js";

let s: ChildServer;
let dataDir: string;
let probePort: number;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-probe-port-"));
  s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_PROBE_PORT: "0", SVC_MAX_INFLIGHT_REQUESTS: "1" });
  probePort = s.logs.find((l) => typeof l.probePort === "number")?.probePort as number;
}, 90_000);
afterAll(async () => {
  await s?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Opens `n` connections at once and counts those whose handshake completed within `ms`. */
async function handshakes(port: number, n: number, ms: number): Promise<{ connected: number; sockets: net.Socket[] }> {
  let connected = 0;
  const sockets = Array.from({ length: n }, () => {
    const c = net.connect(port, "127.0.0.1");
    c.on("connect", () => connected++);
    c.on("error", () => {});
    return c;
  });
  await new Promise((r) => setTimeout(r, ms));
  return { connected, sockets };
}

describe("the probe port and the listen backlog", () => {
  it("serves /healthz and /readyz on the probe port, nothing else, without a request log line", async () => {
    expect(probePort).toBeGreaterThan(0);
    const base = `http://127.0.0.1:${probePort}`;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: "ready" });
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect((await fetch(`${base}/v2/users`, { method: "POST", body: "{}" })).status).toBe(404);
    // The main port serves the probes and the metrics as before.
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${s.url}/metrics`)).text()).toMatch(/^svc_requests_shed_total /m);
    await new Promise((r) => setTimeout(r, 100));
    const logged = s.logs.filter((l) => l.msg === "request").map((l) => l.path);
    expect(logged).toEqual(["/healthz", "/metrics"]);
  });

  it("queues 800 connections that arrive while svc accepts nothing (the default backlog kept 512), and answers a probe after", async () => {
    const pid = s.proc.pid as number;
    process.kill(pid, "SIGSTOP");
    let load: net.Socket[] = [];
    let probe: Promise<number> | undefined;
    try {
      const { connected, sockets } = await handshakes(s.port, 800, 1_000);
      load = sockets;
      expect(connected).toBe(800);
      probe = (async () => {
        const t0 = Date.now();
        await fetch(`http://127.0.0.1:${probePort}/healthz`, { headers: { connection: "close" }, signal: AbortSignal.timeout(20_000) });
        return Date.now() - t0;
      })();
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      process.kill(pid, "SIGCONT");
    }
    // Answered right after svc runs again: no SYN of the probe was dropped (that would cost a second at least).
    expect(await probe).toBeLessThan(1_000);
    for (const c of load) c.destroy();
  }, 30_000);

  it("says not ready from the moment shutdown begins", async () => {
    const stopped = s.stop();
    const until = Date.now() + 2_000;
    let status = 200;
    while (status === 200 && Date.now() < until) {
      status = await fetch(`http://127.0.0.1:${probePort}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => r.status,
        () => 0,
      );
    }
    expect([503, 0]).toContain(status);
    expect(await stopped).toBe(0);
  });
});
