// Whether the database answers, as the requests see it: one warning when it stops answering and one line when it
// answers again, instead of a stack trace per failed request (thousands a second under load).
import type { Logger } from "pino";

class Outage {
  #log: Logger | undefined;
  #down = false;
  #since = 0;

  /** The logger of this process (the composition root sets it; tests may run without one). */
  setLogger(log: Logger): void {
    this.#log = log;
  }

  get isDown(): boolean {
    return this.#down;
  }

  down(err: unknown): void {
    if (this.#down) return;
    this.#down = true;
    this.#since = Date.now();
    const e = err as { code?: unknown; message?: unknown };
    this.#log?.warn(
      { code: e?.code, reason: typeof e?.message === "string" ? e.message.split("\n").at(-1) : undefined },
      "database unavailable: answering 503 until it is back",
    );
  }

  up(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#log?.info({ downForMs: Date.now() - this.#since }, "database available again");
  }

  #refusing = false;
  #refusingSince = 0;
  #lastRefusal = 0;

  /**
   * The database answers but refuses writes: read-only (a failover to a standby, SQLSTATE 25006) or out of
   * resources (class 53: disk full, out of memory). Logged when it starts; ends with the first write that succeeds.
   */
  refusesWrites(err: unknown): void {
    this.#lastRefusal = Date.now();
    if (this.#refusing) return;
    this.#refusing = true;
    this.#refusingSince = this.#lastRefusal;
    const e = err as { code?: unknown; message?: unknown };
    this.#log?.warn({ code: e?.code, reason: typeof e?.message === "string" ? e.message.split("\n").at(-1) : undefined }, REFUSING);
  }

  tookWrite(): void {
    if (!this.#refusing) return;
    this.#refusing = false;
    this.#log?.info({ refusedForMs: Date.now() - this.#refusingSince }, "database takes writes again");
  }

  /** Whether a write was refused within the last `ms`: readiness stays off that long after the last refusal. */
  refusedWritesWithin(ms: number): boolean {
    return this.#refusing && Date.now() - this.#lastRefusal < ms;
  }
}

const REFUSING = "database refuses writes: answering 503 to them until it takes them again";

/** One per process: every pool and adapter of the process reports to it. */
export const outage = new Outage();
