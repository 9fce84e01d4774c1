// autocannon setupRequest module for `npm run bench` when wrk is not on the
// PATH (it runs in autocannon's worker thread, which can only `require` a
// file). It does what bench/wrk.lua does for wrk:
//   SVC_BENCH_VARY=unique  every "[<id>]" in the body becomes an id unique to the request
//   SVC_BENCH_VARY=bodies  each request carries the next line of SVC_BENCH_BODIES_FILE,
//                          starting at line SVC_BENCH_OFFSET (the warm-up used the ones before)
const { randomBytes } = require("node:crypto");
const { readFileSync } = require("node:fs");

const run = randomBytes(4).toString("hex");
let sent = 0;
let bodies;
let next = 0;

module.exports = function setupRequest(req) {
  // autocannon writes Content-Length from the body itself; a second header would make the request malformed.
  const headers = Object.fromEntries(Object.entries(req.headers ?? {}).filter(([k]) => k.toLowerCase() !== "content-length"));
  if (process.env.SVC_BENCH_VARY === "bodies") {
    if (!bodies) {
      bodies = readFileSync(process.env.SVC_BENCH_BODIES_FILE, "utf8").split("\n").filter(Boolean);
      next = Number(process.env.SVC_BENCH_OFFSET || 0);
    }
    return { ...req, headers, body: bodies[next++ % bodies.length] };
  }
  return { ...req, headers, body: String(req.body).split("[<id>]").join(`${run}-${sent++}`) };
};
