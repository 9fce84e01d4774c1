// grpc.health.v1.Health for load balancers and orchestrators (Kubernetes gRPC
// probes, Envoy, grpc-health-probe). Every name shares one probe: the service
// is a single process, so its parts are healthy or not together.
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";

export type HealthProbe = () => Promise<boolean>;

/** grpc.health.v1.Health: Check and Watch. "" (overall) and each registered service name report SERVING when probe() is true, NOT_SERVING otherwise; an unknown service name is NOT_FOUND for Check and SERVICE_UNKNOWN for Watch. Watch sends the current status, then a new message whenever it changes (poll the probe every `intervalMs`, default 5000) until the client cancels or the server shuts down (ctx.signal). */
export function registerHealth(router: ConnectRouter, serviceNames: string[], probe: HealthProbe, intervalMs = 5000): { setShuttingDown(): void } {
  const known = new Set(["", ...serviceNames]);
  const state = { shuttingDown: false };
  // Watchers sleeping between polls; woken at once on shutdown so that load
  // balancers start draining without waiting for the next poll.
  const sleepers = new Set<() => void>();
  const currentStatus = sharedStatus(probe, state);

  router.service(Health, {
    async check(req) {
      if (!known.has(req.service)) {
        throw new ConnectError(`unknown service ${JSON.stringify(req.service)}`, Code.NotFound);
      }
      return { status: await currentStatus() };
    },
    async *watch(req, ctx) {
      // The spec keeps a Watch on an unknown name open: the service might
      // appear later, and the client must not be made to reconnect in a loop.
      if (!known.has(req.service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        // Not among the sleepers: shutdown does not change an unknown name.
        await sleep(Number.POSITIVE_INFINITY, ctx.signal);
        return;
      }
      let last: Status | undefined;
      while (!ctx.signal.aborted) {
        const status = await currentStatus();
        if (status !== last && !ctx.signal.aborted) {
          last = status;
          yield { status };
        }
        await sleep(intervalMs, ctx.signal, sleepers);
      }
    },
  });

  return {
    setShuttingDown() {
      state.shuttingDown = true;
      for (const wake of [...sleepers]) {
        wake();
      }
    },
  };
}

/**
 * The status right now. Concurrent callers (many Watch streams, Checks from
 * several balancers) share one in-flight probe instead of each running it.
 * A probe that throws counts as not serving: a failing dependency check must
 * not turn into an INTERNAL error or end a Watch.
 */
function sharedStatus(probe: HealthProbe, state: { shuttingDown: boolean }): () => Promise<Status> {
  let inFlight: Promise<boolean> | undefined;
  return async () => {
    if (state.shuttingDown) {
      return Status.NOT_SERVING;
    }
    inFlight ??= probe()
      .catch(() => false)
      .finally(() => {
        inFlight = undefined;
      });
    const healthy = await inFlight;
    // Shutdown may have begun while the probe ran.
    return healthy && !state.shuttingDown ? Status.SERVING : Status.NOT_SERVING;
  };
}

/** Resolves after `ms`, on abort, or when woken through `sleepers`, whichever comes first. */
function sleep(ms: number, signal: AbortSignal, sleepers = new Set<() => void>()): Promise<void> {
  if (signal.aborted) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      sleepers.delete(done);
      resolve();
    };
    // setTimeout cannot take Infinity (it would fire at once); no timer means wait for abort.
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    signal.addEventListener("abort", done, { once: true });
    sleepers.add(done);
  });
}
