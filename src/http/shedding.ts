// Load shedding (SVC_MAX_INFLIGHT_REQUESTS): at most that many requests run at once; more wait in a FIFO queue for
// up to SHED_WAIT_MS and are then answered 503 with Retry-After. It sits at the cheapest point there is: the outermost
// handler, before the request log, tracing, routing or reading the body. Why a short queue rather than a 503 at once:
// clients that retry at once (load generators, impatient SDKs) turn every immediate 503 into another request, so the
// server spends its time refusing and goodput collapses (issue 25: 3–37 % of an unlimited server's). Waiting keeps the
// admitted work at the limit, where the database and the CPU do best, and bounds the rate of refusals. A refusal costs
// next to nothing: no log line (counted in svc_requests_shed_total instead) and an answer prepared once. The probes and
// the scrape never wait and are never shed: a shedding replica is alive and may well be ready.
import type { NodeHandler } from "../app.js";

type NodeRequest = Parameters<NodeHandler>[0];
type NodeResponse = Parameters<NodeHandler>[1];

/** The longest a request waits for its turn before it is shed. */
export const SHED_WAIT_MS = 1_000;

const PROBES = new Set(["/healthz", "/readyz", "/metrics"]);
const BODY = Buffer.from(JSON.stringify({ code: 14, message: "the server is busy: try again shortly" }));
const HEADERS = {
  "retry-after": "1",
  "content-type": "application/json",
  "cache-control": "no-store",
  "content-length": String(BODY.length),
};

/** Whether the request target is a probe's (its query left out). */
function isProbe(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf("?");
  return PROBES.has(q < 0 ? url : url.slice(0, q));
}

interface Waiting {
  req: NodeRequest;
  res: NodeResponse;
  timer: NodeJS.Timeout;
  /** Shed, or its client went away: skipped when its turn comes. */
  done: boolean;
}

export function shedding(next: NodeHandler, max: number, onShed: () => void, waitMs = SHED_WAIT_MS): NodeHandler {
  if (max === 0) return next;
  let inflight = 0;
  let queue: (Waiting | undefined)[] = [];
  let head = 0;
  const admit = (req: NodeRequest, res: NodeResponse) => {
    inflight++;
    res.once("close", finished);
    next(req, res);
  };
  function finished() {
    inflight--;
    while (inflight < max && head < queue.length) {
      const w = queue[head];
      queue[head++] = undefined;
      if (!w || w.done) continue;
      w.done = true;
      clearTimeout(w.timer);
      admit(w.req, w.res);
    }
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
  }
  return (req, res) => {
    if (isProbe(req.url)) return next(req, res);
    if (inflight < max && head === queue.length) return admit(req, res);
    const w: Waiting = {
      req,
      res,
      done: false,
      timer: setTimeout(() => {
        w.done = true;
        onShed();
        res.writeHead(503, HEADERS);
        res.end(BODY);
      }, waitMs),
    };
    res.once("close", () => {
      if (w.done) return;
      w.done = true;
      clearTimeout(w.timer);
    });
    queue.push(w);
  };
}
