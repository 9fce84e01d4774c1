// A private PostgreSQL cluster for fault tests: its own data directory and
// port, started and stopped by the test, and frozen (SIGSTOP: connections stay
// open, nothing answers) and thawed at will, without touching the machine's
// shared server. Needs the PostgreSQL server binaries (Debian's postgresql).
import { execFile, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The newest installed server's bin directory, or undefined. */
export function pgBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(path.join(root, v, "bin", "initdb"))) return path.join(root, v, "bin");
  return undefined;
}

export interface PgCluster {
  /** A database URL of the cluster's `postgres` database (trust authentication on 127.0.0.1). */
  url: string;
  port: number;
  /** The postmaster's pid. */
  pid(): number;
  /** Stops every process of the cluster in its tracks (SIGSTOP), or lets them go on (SIGCONT). */
  freeze(): Promise<void>;
  thaw(): Promise<void>;
  /** A fast shutdown, then the data directory goes. Safe to call twice, and on a frozen cluster. */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** initdb refuses root: as root, the cluster runs as the `postgres` user. */
function asOwner(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql");
  const base = await mkdtemp(path.join(tmpdir(), "svc-pgcluster-"));
  await chmod(base, 0o777);
  const data = path.join(base, "data");
  const port = await freePort();
  const [initCmd, initArgs] = asOwner(path.join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  await run(initCmd, initArgs);
  const [pgCmd, pgArgs] = asOwner(path.join(bin, "postgres"), [
    "-D",
    data,
    "-p",
    String(port),
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    `unix_socket_directories=${base}`,
    "-c",
    "fsync=off",
    "-c",
    "max_connections=50",
  ]);
  const proc = spawn(pgCmd, pgArgs, { stdio: "ignore", detached: true });
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await run(path.join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port), "-q"]).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error("the private PostgreSQL cluster did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  // The postmaster runs under runuser: its pid is the first line of postmaster.pid.
  const pm = Number((await readFile(path.join(data, "postmaster.pid"), "utf8")).split("\n")[0]);
  /** The postmaster and every backend and worker (its children). */
  const all = async () => {
    const kids = (await run("pgrep", ["-P", String(pm)]).catch(() => ({ stdout: "" }))).stdout.split("\n").filter(Boolean).map(Number);
    return [pm, ...kids];
  };
  let destroyed = false;
  return {
    url,
    port,
    pid: () => pm,
    async freeze() {
      for (const p of await all()) process.kill(p, "SIGSTOP");
    },
    async thaw() {
      for (const p of await all()) process.kill(p, "SIGCONT");
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const p of await all()) {
        try {
          process.kill(p, "SIGCONT");
        } catch {
          // gone already
        }
      }
      try {
        process.kill(pm, "SIGINT"); // fast shutdown
      } catch {
        // gone already
      }
      const until = Date.now() + 10_000;
      while (Date.now() < until) {
        try {
          process.kill(pm, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      try {
        if (proc.pid) process.kill(-proc.pid, "SIGKILL");
      } catch {
        // gone already
      }
      await rm(base, { recursive: true, force: true });
    },
  };
}
