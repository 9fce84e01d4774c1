// One process per embedded database. PGlite runs inside svc's process: two processes on one data directory each
// write their own view of the files and acknowledged writes are lost. The lock is a Unix-domain socket bound in the
// data directory (`svc.lock`), held for the process's lifetime:
// - binding a path is atomic (one process gets it, the others EADDRINUSE), and the kernel stops accepting on the
//   socket the moment its holder dies, kill -9 included, so a socket file nobody listens on is stale for certain:
//   connecting to it is refused. No pid is involved: a pid reused since, or a holder in another PID namespace (two
//   containers on one volume), cannot fool it.
// - a live holder accepts a connection (the kernel does, even while its event loop is busy) and writes its
//   description, so the refusal names it;
// - a stale socket is removed by one process at a time: the one that binds `svc.lock.takeover`. It connects once more,
//   removes the file only if that is refused again, then binds it like any start. While it holds the takeover no one
//   else may remove the file, and a file that is there cannot be bound over, so no start removes a live holder's
//   socket. (Its own stale leftover, from a takeover cut short by a kill, is moved aside under a name of its own and
//   put back unless it is the very file found stale.)
import { randomBytes } from "node:crypto";
import { closeSync, openSync } from "node:fs";
import { link, lstat, rename, unlink } from "node:fs/promises";
import net from "node:net";
import { hostname } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";

export const LOCK_NAME = "svc.lock";
/** A file older svc versions locked with; it locks nothing now and is removed once this lock is held. */
const LEGACY_PID_FILE = "svc.pid";
/** How long a holder that accepted a connection may take to describe itself (its event loop may be busy). */
const DESCRIBE_MS = 5_000;
/** How long a start keeps trying while other starts take the lock over (each takeover takes milliseconds). */
const ACQUIRE_MS = 10_000;
/** Room for a socket path in sockaddr_un (108 bytes on Linux, 104 on the BSDs, with the terminating NUL). */
const SUN_PATH_MAX = 103;

export interface Holder {
  pid: number;
  hostname: string;
  startedAt: string;
}

export class DataDirInUse extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: Holder | undefined,
  ) {
    const who = holder
      ? `process ${holder.pid} on host ${holder.hostname} (started ${holder.startedAt})`
      : `a live process that did not say which within ${DESCRIBE_MS} ms`;
    super(`the embedded database in ${dataDir} is in use by ${who}; stop that one first, or use PostgreSQL (SVC_DATABASE_URL) to run several replicas`);
  }
}

/** `refused`: a socket file nobody listens on (its holder died); otherwise the file is not there (any more). */
type Probe = { live: true; holder?: Holder } | { live: false; refused: boolean };

/**
 * Takes the data directory's lock or throws DataDirInUse naming the holder. Resolves with the function that releases
 * it (a clean stop); a process that dies releases it with its socket.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const addr = socketAddresses(dataDir);
  try {
    const description = `${JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString() } satisfies Holder)}\n`;
    const lock = await acquire(dataDir, addr, description);
    await unlink(path.join(dataDir, LEGACY_PID_FILE)).catch(() => {});
    return async () => {
      // libuv removes the socket file when the server closes.
      await lock.close();
      addr.close();
    };
  } catch (err) {
    addr.close();
    throw err;
  }
}

async function acquire(dataDir: string, addr: SocketAddresses, description: string): Promise<Bound> {
  const file = path.join(dataDir, LOCK_NAME);
  const until = Date.now() + ACQUIRE_MS;
  for (;;) {
    const server = await bind(addr.lock, description).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") return undefined;
      throw new Error(`cannot lock the data directory ${dataDir} (binding ${file}: ${err.message})`);
    });
    if (server) return server;
    const found = await probe(addr.lock);
    if (found.live) throw new DataDirInUse(dataDir, found.holder);
    if (Date.now() > until) throw new Error(`cannot lock the data directory ${dataDir}: ${file} stays in the way`);
    await removeStale(dataDir, addr, description);
  }
}

/**
 * Removes `svc.lock` if nobody listens on it, under the takeover lock. Another process holding the takeover is
 * waited for (it takes milliseconds); the caller then tries again from the start.
 */
async function removeStale(dataDir: string, addr: SocketAddresses, description: string): Promise<void> {
  const file = path.join(dataDir, LOCK_NAME);
  const takeoverFile = path.join(dataDir, `${LOCK_NAME}.takeover`);
  const takeover = await bind(addr.takeover, description).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "EADDRINUSE") return undefined;
    throw err;
  });
  if (!takeover) {
    if ((await probe(addr.takeover)).live) await sleep(20);
    else await removeDeadTakeover(takeoverFile);
    return;
  }
  try {
    // Nobody else removes svc.lock now, and a file that is there cannot be bound over: if it is still refused, it
    // is the stale one. (One that is gone may be bound again by now: left alone.)
    const found = await probe(addr.lock);
    if (!found.live && found.refused) await unlink(file).catch(() => {});
  } finally {
    await takeover.close();
  }
}

/**
 * The takeover lock of a process killed in the middle of a takeover (a window of milliseconds). Moved aside under a
 * name of this process's own first, so that only the very file found dead is removed: if another process replaced
 * it in between, that one is put back.
 */
async function removeDeadTakeover(takeoverFile: string): Promise<void> {
  const seen = await lstat(takeoverFile).catch(() => undefined);
  if (!seen) return;
  const aside = `${takeoverFile}.${process.pid}.${randomBytes(4).toString("hex")}`;
  if (
    !(await rename(takeoverFile, aside).then(
      () => true,
      () => false,
    ))
  )
    return;
  const moved = await lstat(aside).catch(() => undefined);
  if (moved && (moved.ino !== seen.ino || moved.dev !== seen.dev)) await link(aside, takeoverFile).catch(() => {});
  await unlink(aside).catch(() => {});
}

/** What a lock held by `bind` is closed with. */
interface Bound {
  close(): Promise<void>;
}

/**
 * The lock's socket lives in a worker thread of its own: its event loop answers a prober with this process's
 * description at once, also while the main thread is busy for seconds (copying the snapshot, PGlite starting).
 */
const HOLDER = `
const { parentPort, workerData } = require("node:worker_threads");
const net = require("node:net");
const server = net.createServer((socket) => {
  socket.on("error", () => {});
  socket.end(workerData.description);
});
server.once("error", (err) => parentPort.postMessage({ code: err.code, message: err.message }));
server.listen(workerData.address, () => {
  server.on("error", () => {});
  parentPort.postMessage({ ok: true });
});
parentPort.on("message", () => server.close(() => parentPort.postMessage({ closed: true })));
`;

function bind(address: string, description: string): Promise<Bound> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(HOLDER, { eval: true, workerData: { address, description } });
    worker.once("error", reject);
    worker.once("message", (m: { ok?: true; code?: string; message?: string }) => {
      if (!m.ok) {
        void worker.terminate();
        reject(Object.assign(new Error(m.message ?? "bind failed"), { code: m.code }));
        return;
      }
      // Held for the process's lifetime, without keeping an otherwise finished process alive.
      worker.off("error", reject);
      worker.on("error", () => {});
      worker.unref();
      resolve({
        close: () =>
          new Promise<void>((done) => {
            worker.once("message", () => {
              void worker.terminate().finally(done);
            });
            worker.postMessage("close");
          }),
      });
    });
  });
}

/** Whether a process listens on the socket at `address`, and what it says it is. */
function probe(address: string): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = net.connect(address);
    let said = "";
    let connected = false;
    const done = (answer: Probe) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done({ live: true }), DESCRIBE_MS);
    socket.on("connect", () => {
      connected = true;
    });
    socket.on("data", (chunk) => {
      said += chunk.toString("utf8");
      if (said.includes("\n")) done({ live: true, holder: parseHolder(said) });
    });
    socket.on("end", () => done({ live: true, holder: parseHolder(said) }));
    socket.on("error", (err: NodeJS.ErrnoException) => {
      if (connected) return done({ live: true, holder: parseHolder(said) });
      // Refused: bound by nobody (its holder died). Gone: removed meanwhile. A full backlog (EAGAIN) is a live holder.
      if (err.code === "ECONNREFUSED" || err.code === "ENOENT") done({ live: false, refused: err.code === "ECONNREFUSED" });
      else done({ live: true });
    });
  });
}

function parseHolder(said: string): Holder | undefined {
  try {
    const h = JSON.parse(said.split("\n")[0] ?? "") as Partial<Holder>;
    if (typeof h.pid === "number" && typeof h.hostname === "string" && typeof h.startedAt === "string") {
      return { pid: h.pid, hostname: h.hostname, startedAt: h.startedAt };
    }
  } catch {
    // not a description: someone else's socket, or a holder cut off mid-write
  }
  return undefined;
}

interface SocketAddresses {
  lock: string;
  takeover: string;
  close(): void;
}

/**
 * The addresses to bind and connect to. A socket path longer than sockaddr_un allows is reached through this
 * process's descriptor of the data directory (/proc/self/fd/N/svc.lock, Linux), which names the same file.
 */
function socketAddresses(dataDir: string): SocketAddresses {
  const lock = path.join(dataDir, LOCK_NAME);
  const takeover = `${lock}.takeover`;
  if (Buffer.byteLength(takeover) <= SUN_PATH_MAX) return { lock, takeover, close() {} };
  const fd = openSync(dataDir, "r");
  const via = `/proc/self/fd/${fd}`;
  return {
    lock: path.join(via, LOCK_NAME),
    takeover: path.join(via, `${LOCK_NAME}.takeover`),
    close: () => closeSync(fd),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
