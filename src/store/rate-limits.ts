// The failure counters behind FailureLimits: rate-limiter-flexible on PostgreSQL (the "RateLimit" table, shared by
// every replica) or in memory (the embedded database has one process). A key past its limit is also remembered in
// this process until its window ends, so that checking a request costs nothing.
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from "rate-limiter-flexible";
import type { FailureLimits } from "../domain/limits.js";

export interface LimitSettings {
  /** Failures allowed per client id or user in a window (0: not limited). */
  perClient: number;
  /** Failures allowed per source address in a window (0: not limited). */
  perAddress: number;
  windowSeconds: number;
}

/** Keys longer than the table's column (and than any sane client id) are hashed. */
const stored = (key: string) => (key.length <= 200 ? key : `${key.slice(0, key.indexOf(":") + 1)}sha256:${createHash("sha256").update(key).digest("hex")}`);

const MAX_REMEMBERED = 100_000;

export function failureLimits(settings: LimitSettings, pgPool: unknown | undefined, log: Logger): FailureLimits {
  const make = (points: number, prefix: string): RateLimiterAbstract | undefined => {
    if (points === 0) return undefined;
    const opts = { points, duration: settings.windowSeconds, keyPrefix: prefix };
    return pgPool
      ? new RateLimiterPostgres({ ...opts, storeClient: pgPool, storeType: "pool", tableName: "RateLimit", tableCreated: true, clearExpiredByTimeout: true })
      : new RateLimiterMemory(opts);
  };
  const perKey = make(settings.perClient, "k");
  const perAddress = make(settings.perAddress, "a");
  const blockedUntil = new Map<string, number>();
  let storeFailing = false;

  const limiterOf = (key: string) => (key.startsWith("ip:") ? perAddress : perKey);
  return {
    blockedFor(keys) {
      const now = Date.now();
      let wait = 0;
      for (const k of keys) {
        const until = blockedUntil.get(k);
        if (until === undefined) continue;
        if (until <= now) blockedUntil.delete(k);
        else wait = Math.max(wait, Math.ceil((until - now) / 1000));
      }
      return wait;
    },
    async failed(keys) {
      let wait = 0;
      await Promise.all(
        keys.map(async (k) => {
          const limiter = limiterOf(k);
          if (!limiter) return;
          try {
            await limiter.consume(stored(k));
            storeFailing = false;
          } catch (res) {
            if (!(res instanceof RateLimiterRes)) {
              // The counters' store failing must not turn authentication failures into 500s: count nothing (fail
              // open) and say so once; lockout and the credentials themselves still protect the accounts.
              if (!storeFailing) log.warn({ err: res }, "rate limit store unavailable: failures are not counted until it answers");
              storeFailing = true;
              return;
            }
            if (blockedUntil.size >= MAX_REMEMBERED) blockedUntil.clear();
            blockedUntil.set(k, Date.now() + res.msBeforeNext);
            wait = Math.max(wait, Math.ceil(res.msBeforeNext / 1000));
          }
        }),
      );
      return wait;
    },
  };
}
