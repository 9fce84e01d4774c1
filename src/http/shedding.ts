// Load shedding (SVC_MAX_INFLIGHT_REQUESTS). Past the limit a request is answered 503 with Retry-After at once, at the
// cheapest point there is: the outermost handler, before the request log, tracing, routing or reading the body. A
// shed request must cost next to nothing, or shedding eats the capacity it exists to protect (issue 25: with a log
// line and the whole handler chain per rejection, goodput fell to 3–37 % of an unlimited server's). So no log line
// per rejection, a counter instead (svc_requests_shed_total), and an answer prepared once. The probes and the scrape
// are never shed: a shedding replica is alive and may well be ready, and an orchestrator must be able to tell.
import type { NodeHandler } from "../app.js";

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

export function shedding(next: NodeHandler, max: number, onShed: () => void): NodeHandler {
  if (max === 0) return next;
  let inflight = 0;
  const done = () => {
    inflight--;
  };
  return (req, res) => {
    if (inflight >= max && !isProbe(req.url)) {
      onShed();
      res.writeHead(503, HEADERS);
      res.end(BODY);
      return;
    }
    inflight++;
    res.once("close", done);
    next(req, res);
  };
}
