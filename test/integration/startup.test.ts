// svc as `npm start` runs it: first start bootstraps once, the PAT file is
// private, a restart keeps the data and changes nothing, SIGTERM drains.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type ChildServer, freshDatabase, rest, spawnServer, type TestDatabase } from "../support/server.js";

let db: TestDatabase;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  db = await freshDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-start-"));
  env = { SVC_DATA_DIR: dataDir, ...(db.url ? { SVC_DATABASE_URL: db.url } : {}) };
});
afterAll(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const messages = (s: ChildServer) => s.logs.map((l) => String(l.msg));

describe("first start, restart and shutdown", () => {
  let pat: string;
  let createdId: string;
  let usersAfterFirstStart: string[];

  it("bootstraps the instance and writes the admin PAT with mode 0600", async () => {
    const s = await spawnServer(env);
    try {
      const patPath = path.join(dataDir, "admin.pat");
      expect((await stat(patPath)).mode & 0o777).toBe(0o600);
      pat = (await readFile(patPath, "utf8")).trim();
      expect(pat).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const first = s.logs.find((l) => String(l.msg).startsWith("first start"));
      expect(first?.patPath).toBe(patPath);
      expect(String(first?.msg)).toContain(`Authorization: Bearer $(cat ${patPath})`);
      // The generated admin password is printed exactly once.
      expect(messages(s).filter((m) => m.includes("generated password")).length).toBe(1);
      expect(s.output()).not.toContain(pat);

      const list = await rest(s.url, pat, "POST", "/v2/users", {});
      expect(list.status).toBe(200);
      const body = (await list.json()) as { result: { userId: string; username: string }[] };
      expect(body.result.map((u) => u.username).sort()).toEqual(["admin", "svc-admin"]);

      const instance = (await (await rest(s.url, pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
      const created = await rest(s.url, pat, "POST", "/v2/users/new", {
        organizationId: instance.instance.defaultOrganizationId,
        username: "persisted",
        human: {
          profile: { givenName: "Per", familyName: "Sisted" },
          email: { email: "per@example.com", isVerified: true },
          password: { password: "Sup3r-secret!" },
        },
      });
      expect(created.status).toBe(200);
      createdId = ((await created.json()) as { id: string }).id;
      usersAfterFirstStart = [...body.result.map((u) => u.userId), createdId].sort();
    } finally {
      const code = await s.stop();
      expect(code).toBe(0);
      expect(messages(s)).toContain("svc stopped");
    }
  });

  it("restarts with the same data and bootstraps nothing again", async () => {
    const before = await stat(path.join(dataDir, "admin.pat"));
    const s = await spawnServer(env);
    try {
      expect(messages(s).some((m) => m.startsWith("first start"))).toBe(false);
      expect(messages(s).some((m) => m.includes("generated password"))).toBe(false);
      const after = await stat(path.join(dataDir, "admin.pat"));
      expect(after.mtimeMs).toBe(before.mtimeMs);
      const res = await rest(s.url, pat, "POST", "/v2/users", {});
      expect(res.status).toBe(200);
      const body = (await res.json()) as { result: { userId: string }[] };
      expect(body.result.map((u) => u.userId).sort()).toEqual(usersAfterFirstStart);
      const one = await rest(s.url, pat, "GET", `/v2/users/${createdId}`);
      expect(((await one.json()) as { user: { human: { email: { email: string } } } }).user.human.email.email).toBe("per@example.com");
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });

  it("serves 50 concurrent API calls without Node warning about abort listeners", async () => {
    const s = await spawnServer(env);
    try {
      const calls = await Promise.all(Array.from({ length: 50 }, () => rest(s.url, pat, "POST", "/v2/users", {})));
      expect(calls.map((r) => r.status)).toEqual(Array(50).fill(200));
    } finally {
      expect(await s.stop()).toBe(0);
    }
    // connect-node links each call in flight to the server's shutdown signal; Node warns past 10 listeners. On
    // PostgreSQL (as in CI) the calls overlap that much; the embedded database answers them nearly one by one.
    expect(s.output()).not.toContain("MaxListenersExceededWarning");
  });

  it("takes the admin password from SVC_ADMIN_PASSWORD and refuses a weak one", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "svc-weak-"));
    const weakDb = await freshDatabase();
    try {
      await expect(spawnServer({ SVC_DATA_DIR: dir, SVC_ADMIN_PASSWORD: "weak", ...(weakDb.url ? { SVC_DATABASE_URL: weakDb.url } : {}) })).rejects.toThrow(
        /SVC_ADMIN_PASSWORD/,
      );
    } finally {
      await weakDb.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("stops before creating anything when its port is in use, naming the variable", async () => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const port = (squatter.address() as net.AddressInfo).port;
    const dir = await mkdtemp(path.join(tmpdir(), "svc-port-"));
    const portDb = await freshDatabase();
    try {
      const start = spawnServer({ SVC_DATA_DIR: dir, SVC_PORT: String(port), ...(portDb.url ? { SVC_DATABASE_URL: portDb.url } : {}) });
      await expect(start).rejects.toThrow(new RegExp(`port ${port} on 127.0.0.1 is in use by another process: .*SVC_PORT; nothing was created`));
      await expect(start).rejects.not.toThrow(/password/i);
      // No instance, no admin token: the next start on a free port is a first start.
      await expect(stat(path.join(dir, "admin.pat"))).rejects.toThrow();
    } finally {
      squatter.close();
      await portDb.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses invalid configuration with a message naming the variable", async () => {
    await expect(spawnServer({ SVC_DATA_DIR: dataDir, SVC_PORT: "http" })).rejects.toThrow(/SVC_PORT must be an integer/);
    await expect(spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: "mysql://x" })).rejects.toThrow(/SVC_DATABASE_URL must use postgres/);
  });
});

describe("graceful shutdown", () => {
  it("finishes a request in flight at SIGTERM, refuses new connections, then exits 0", async () => {
    const s = await spawnServer(env);
    const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    const body = JSON.stringify({ query: { limit: 5 } });
    const socket = net.connect(s.port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    let answer = "";
    socket.on("data", (c) => {
      answer += c.toString();
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    // Headers and half of the body now: the request is in flight when SIGTERM arrives.
    socket.write(
      `POST /v2/users HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${pat}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    const exited = s.stop();
    await new Promise((r) => setTimeout(r, 300));
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
    // No FIN from our side: Node treats a half-closed request as aborted. The
    // draining server answers with Connection: close and closes the socket.
    socket.write(body.slice(5));
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toContain('"totalResult":"');
    expect(answer.toLowerCase()).toContain("connection: close");
    expect(await exited).toBe(0);
    expect(messages(s)).toContain("shutting down: finishing in-flight requests");
    // One structured line per request, with its request id.
    const line = s.logs.find((l) => l.msg === "request" && l.path === "/v2/users");
    expect(line?.status).toBe(200);
    expect(String(line?.requestId)).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("embedded database", () => {
  const embedded = !db?.url && !process.env.SVC_TEST_DATABASE_URL;
  (embedded ? it : it.skip)("refuses a second process on the same data directory", async () => {
    const s = await spawnServer(env);
    try {
      await expect(spawnServer(env)).rejects.toThrow(/in use by process/);
    } finally {
      expect(await s.stop()).toBe(0);
    }
  });
});
