// `node bench/start-time.mjs [--runs N] [--rt] [-- command...]`: how long svc takes to become ready (its "svc listening"
// line) on the embedded database, on an empty data directory and on a restart of the same one, and how much CPU the
// process used until then (its own and its threads', from /proc: Linux). The command defaults to `node bin/svc.js
// start` (what `npm start` runs; build dist/ first: `npm run build`). --rt runs it at real-time priority
// (`chrt -f 20`, root only): on a machine busy with other work, the times of an otherwise idle one.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const dash = args.indexOf("--");
const command = dash >= 0 ? args.slice(dash + 1) : [process.execPath, "bin/svc.js", "start"];
const options = dash >= 0 ? args.slice(0, dash) : args;
const runs = Number(options[options.indexOf("--runs") + 1]) || 3;
const rt = options.includes("--rt");
const root = path.resolve(import.meta.dirname, "..");
const cacheDir = path.join(root, "node_modules", ".cache");

function cpuMs(stat) {
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU ms of a process so far: all of its threads together, and its main thread alone. */
function cpuOf(pid) {
  let all = 0;
  let main = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ms = cpuMs(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
      all += ms;
      if (tid === String(pid)) main = ms;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { all, main };
}

/** Starts the command on `dataDir`, stops it with SIGTERM once it listens; resolves with wall and CPU ms at that point. */
function start(dataDir) {
  const [file, ...rest] = rt ? ["chrt", "-f", "20", ...command] : command;
  const started = performance.now();
  const child = spawn(file, rest, {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_PORT: "0", SVC_HOST: "127.0.0.1", SVC_DATA_DIR: dataDir, SVC_LOG_FORMAT: "json" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    let result;
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (!result && out.includes('"svc listening')) {
        result = { wall: Math.round(performance.now() - started), cpu: cpuOf(child.pid) };
        child.kill("SIGTERM");
      }
    });
    child.once("exit", (code) => (result ? resolve(result) : reject(new Error(`exited with ${code} before listening:\n${out}`))));
  });
}

const rows = { first: [], restart: [] };
const dirs = [];
try {
  for (let i = 0; i < runs; i++) {
    // Not under /tmp, and none deleted before the end: ext4 creates files slowly next to many recently deleted ones
    // (see test/integration/start-time.test.ts), which the copy of the snapshot's 1,200 files would measure.
    mkdirSync(cacheDir, { recursive: true });
    const dir = mkdtempSync(path.join(cacheDir, "svc-start-time-"));
    dirs.push(dir);
    rows.first.push(await start(dir));
    rows.restart.push(await start(dir));
  }
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
const show = (list) => list.map((r) => `${r.wall} ms (CPU ${r.cpu.all} ms, main thread ${r.cpu.main} ms)`).join(", ");
console.log(`first start: ${show(rows.first)}\nrestart:     ${show(rows.restart)}\nload average: ${readFileSync("/proc/loadavg", "utf8").split(" ")[0]}`);
