// Issue 25, finding 2: load shedding (SVC_MAX_INFLIGHT_REQUESTS) must keep goodput. Past the limit a request waits
// its turn for up to a second, then is shed: 503 with Retry-After before anything else runs (no log line, no trace, no
// body read), counted in svc_requests_shed_total instead; the probes (/healthz, /readyz, /metrics) never wait.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ChildServer, spawnServer } from "../support/server.js";

let s: ChildServer;
let dataDir: string;
let pat: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-shed-"));
  s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MAX_INFLIGHT_REQUESTS: "2" });
  pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
}, 90_000);
afterAll(async () => {
  await s?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const shedTotal = async () => {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return Number(/^svc_requests_shed_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
};

/** A request whose headers arrived and whose body is still coming: in flight until `finish` sends the rest. */
async function slowRequest(): Promise<{ finish(): Promise<string> }> {
  const body = JSON.stringify({ queries: [] });
  const socket = net.connect(s.port, "127.0.0.1");
  await new Promise((r) => socket.once("connect", r));
  let answer = "";
  socket.on("data", (c: Buffer) => {
    answer += c.toString();
  });
  socket.write(
    `POST /v2/users HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${pat}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 3)}`,
  );
  return {
    finish: async () => {
      const closed = new Promise((r) => socket.once("close", r));
      socket.write(body.slice(3));
      await closed;
      return answer;
    },
  };
}

describe("load shedding (issue 25, finding 2)", () => {
  it("sheds past the limit with 503 and Retry-After, without a log line each, counted in svc_requests_shed_total; probes pass", async () => {
    const before = await shedTotal();
    // The limit (2) taken by two requests still receiving their bodies.
    const slow = [await slowRequest(), await slowRequest()];
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${s.url}/v2/users`, { method: "POST", headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" }, body: "{}" }).then(
          async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text(), ms: Date.now() - t0 }),
        ),
      ),
    );
    for (const a of answers) {
      expect(a.status).toBe(503);
      // Shed after waiting for a turn (1 s), not before.
      expect(a.ms).toBeGreaterThanOrEqual(900);
      expect(a.retryAfter).toBe("1");
      expect(JSON.parse(a.body)).toMatchObject({ code: 14 });
    }
    // The probes and the scrape pass at once.
    for (const p of ["/healthz", "/readyz", "/metrics", "/healthz?verbose=1"]) {
      const p0 = Date.now();
      expect((await fetch(`${s.url}${p}`)).status).toBe(200);
      expect(Date.now() - p0).toBeLessThan(900);
    }
    // Counted, not logged.
    expect((await shedTotal()) - before).toBe(20);
    // The admitted ones finish, and the next request is served.
    for (const r of slow) expect(await r.finish()).toMatch(/^HTTP\/1\.1 200/);
    const after = await fetch(`${s.url}/v2/users`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(after.status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(s.logs.filter((l) => l.msg === "request" && l.status === 503)).toEqual([]);
    expect(s.logs.filter((l) => l.msg === "request" && l.path === "/v2/users" && l.status === 200)).toHaveLength(3);
  }, 60_000);

  it("a request that waits for its turn is served when one ends within the wait", async () => {
    const slow = [await slowRequest(), await slowRequest()];
    await new Promise((r) => setTimeout(r, 200));
    const waiting = Array.from({ length: 2 }, () =>
      fetch(`${s.url}/v2/users`, { method: "POST", headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" }, body: "{}" }).then(
        (r) => r.status,
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    for (const r of slow) expect(await r.finish()).toMatch(/^HTTP\/1\.1 200/);
    expect(await Promise.all(waiting)).toEqual([200, 200]);
  }, 60_000);
});
