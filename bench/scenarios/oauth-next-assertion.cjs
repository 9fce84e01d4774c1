// autocannon setupRequest for the JWT-profile scenario (runs in autocannon's
// worker thread, which can only `require` a file): each request carries the
// next pre-signed assertion from the file named by SVC_BENCH_ASSERTIONS_FILE,
// so that none is a replay. Signing happens before the run, not in the load.
// The position is saved next to the file, so the measured run (a new worker)
// does not resend what the warm-up already used.
const { readFileSync, writeFileSync } = require("node:fs");

let bodies;
let next = 0;
let posFile;
module.exports = function setupRequest(req) {
  if (!bodies) {
    const file = process.env.SVC_BENCH_ASSERTIONS_FILE;
    bodies = readFileSync(file, "utf8").split("\n").filter(Boolean);
    posFile = `${file}.pos`;
    try {
      next = Number(readFileSync(posFile, "utf8")) + 100;
    } catch {
      next = 0;
    }
  }
  if (next % 50 === 0) writeFileSync(posFile, String(next));
  return { ...req, body: bodies[next++ % bodies.length] };
};
