// Delivering the outbox (src/store/outbox.ts): each replica claims due deliveries, a few at a time, and POSTs each to
// its target, signed like a function's call (Svc-Signature), with `Idempotency-Key: <delivery id>` so that a receiver
// can drop the duplicates at-least-once delivery allows. The body is the event as ListEvents returns it, with
// `instanceId` and `deliveryId`.
//  - A 2xx delivers it; anything else (or no answer within the target's timeout) fails the attempt: it is retried after
//    an exponential backoff with jitter, until the row's maxAttempts (async targets: 1), then it is dead (logged,
//    counted, retryable through the API).
//  - Nothing here runs in a request: svc's own requests never wait for a target. At most `concurrency` deliveries are
//    in flight per replica and at most `perTarget` to one target (one with half of that in flight is left out of the
//    next claims, and a claim takes no more than the others have room for), so a slow or dead receiver holds its own
//    share only.
//  - A claimed row is leased (its leaseUntil set past the longest timeout): if this replica dies meanwhile, another
//    one claims it when the lease ends.
import type { Logger } from "pino";
import type { Store } from "../store/index.js";
import { BACKCHANNEL_LOGOUT_KIND, type LogoutTokenPayload, SAML_SOAP_LOGOUT_KIND } from "../store/logout-deliveries.js";
import type { DeliveryRow } from "../store/outbox.js";
import { CallFailure, postToTarget, signatureHeader } from "./http.js";
import { type LogoutTokenSigner, postLogoutToken } from "./logout-tokens.js";
import type { ActionRunner } from "./runner.js";
import { sendSamlLogout } from "./saml-logout-delivery.js";

/** Longer than any target's timeout (at most 30 s): a row claimed by a replica that died is claimed again after it. */
const LEASE_MS = 45_000;
const MAX_BACKOFF_MS = 3600_000;
const PURGE_EVERY_MS = 60_000;
const PURGE_BATCH = 10_000;
/** How often a replica with nothing to deliver looks at the outbox, at the longest. */
const IDLE_POLL_MS = 1_000;
/**
 * How long the first delivery to end waits for others before the "delivered" statement runs (at most), and how many
 * make it run at once. Each statement is a commit: one per delivery cost about as much again as the delivery's own
 * writes when events come one by one.
 */
const MARK_LINGER_MS = 10;
const MARK_BATCH = 256;

export type DeliveryOutcome = "delivered" | "failed" | "dead";

export interface DeliveryWorkerOptions {
  store: Store;
  instanceId: string;
  runner: ActionRunner;
  log: Logger;
  clock: () => Date;
  allowPrivate: boolean;
  /** The first retry's delay; each further one doubles it (up to an hour), jittered. */
  backoffMs: number;
  /** Delivered and dead rows are deleted this long after they ended. */
  retentionMs: number;
  /** Counts each attempt's outcome (the metrics). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
  concurrency?: number;
  perTarget?: number;
  /** Signs the OIDC back-channel logout tokens the outbox holds (the token runtime's keys). */
  logoutTokens?: LogoutTokenSigner;
  /** How often an idle replica looks for due deliveries. */
  pollMs?: number;
}

/** The delay before retry number `attempt` (1 for the first): base·2^(attempt−1), capped, between half and all of it. */
export function backoff(baseMs: number, attempt: number, random = Math.random): number {
  const full = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.min(30, attempt - 1));
  return Math.round(full / 2 + (random() * full) / 2);
}

/** A claim's outcome: rows claimed of `limit`; `open`: some went to a target still under half its share. */
interface Claimed {
  rows: number;
  limit: number;
  open: boolean;
}

export class DeliveryWorker {
  private stopped = false;
  private inflight = 0;
  private readonly perTargetCount = new Map<string, number>();
  private wakeUp: (() => void) | undefined;
  /** While the loop waits for room: whether the end of a delivery to this target makes enough of it to claim again. */
  private roomFor: ((targetId: string) => boolean) | undefined;
  private running: Promise<void> | undefined;
  private readonly pending = new Set<Promise<void>>();
  /** Delivered ids for the next "delivered" statement (while `marking`, one is running). */
  private toMark: { ids: string[]; done: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  private marking = false;
  private markTimer: NodeJS.Timeout | undefined;
  private purgeTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: DeliveryWorkerOptions) {}

  private get concurrency() {
    return this.o.concurrency ?? 64;
  }
  /** A target's share of this replica's deliveries in flight (no more than all of them). */
  private get perTarget() {
    return Math.max(1, Math.min(this.o.perTarget ?? 32, this.concurrency));
  }
  /** A target with this many in flight is left out of the claims (so that a claim never takes it past perTarget). */
  private get half() {
    return Math.ceil(this.perTarget / 2);
  }
  /** The room worth a claim: a quarter of a target's share, freed by a target that was left out, or by the replica. */
  private get quantum() {
    return Math.max(1, Math.floor(this.perTarget / 4));
  }

  start(): void {
    this.running = this.loop();
    this.purgeTimer = setInterval(() => {
      const before = new Date(this.o.clock().getTime() - this.o.retentionMs);
      this.o.store.outbox
        .purge(before, PURGE_BATCH, this.o.instanceId)
        .catch((err: unknown) => this.o.log.warn({ err }, "could not purge delivered action deliveries"));
    }, PURGE_EVERY_MS);
    this.purgeTimer.unref();
  }

  /** Stops claiming; waits (a little) for the deliveries in flight. What is left is claimed again after its lease. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.purgeTimer);
    this.wake();
    this.flushMarks();
    await this.running;
    await Promise.race([Promise.allSettled([...this.pending]), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
  }

  /** Looks for due deliveries now. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Claims again at once while claims come back full with room left for what they found (a backlog over several
   * targets). A claim whose rows all went to targets now at half their share waits for room instead: when one of them
   * is down to a quarter of its share, or this replica has a quarter of a share free again, it claims the next batch
   * (a backlog for one target: a claim per 3/4 of a share delivered, none in between; claiming again at once would
   * walk that target's whole due backlog only to leave it out). Not after every delivery that ends: under a trickle of
   * events that would be a claim per event; after pollMs then. A replica that found nothing to do for a while looks
   * less often, up to IDLE_POLL_MS (one cheap statement a second when nothing is ever delivered), and at pollMs again
   * as soon as a claim finds something.
   */
  private async loop(): Promise<void> {
    let idle = 0;
    while (!this.stopped) {
      let claimed: Claimed;
      try {
        claimed = await this.claim();
      } catch (err) {
        this.o.log.warn({ err }, "could not claim action deliveries");
        await this.sleep(1_000, undefined);
        continue;
      }
      if (this.stopped) break;
      const full = claimed.limit > 0 && claimed.rows === claimed.limit;
      if (full && claimed.open && this.inflight < this.concurrency) continue;
      idle = claimed.rows > 0 || this.inflight > 0 ? 0 : idle + 1;
      const poll = this.o.pollMs ?? 100;
      await this.sleep(Math.min(IDLE_POLL_MS, poll * 2 ** Math.min(idle, 4)), this.roomPredicate());
    }
  }

  /**
   * What room ends a wait: a quarter of a share free on this replica when it is (nearly) at capacity, or a target left
   * out (at half its share) down to a quarter of it. Undefined when neither applies (nothing to wait for but pollMs).
   */
  private roomPredicate(): ((targetId: string) => boolean) | undefined {
    const q = this.quantum;
    const atCapacity = this.concurrency - this.inflight < q;
    const leftOut = new Set([...this.perTargetCount].filter(([, n]) => n >= this.half).map(([id]) => id));
    if (!atCapacity && leftOut.size === 0) return undefined;
    return (targetId) => (atCapacity && this.concurrency - this.inflight >= q) || (leftOut.has(targetId) && (this.perTargetCount.get(targetId) ?? 0) <= q);
  }

  /** `roomFor`: a delivery that ends making that room ends the sleep too; stop() always does. */
  private sleep(ms: number, roomFor: ((targetId: string) => boolean) | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wakeUp = undefined;
        self.roomFor = undefined;
        resolve();
      }
      this.wakeUp = done;
      this.roomFor = roomFor;
    });
  }

  /**
   * Claims what this replica has room for and starts delivering it. Targets with half their share (perTarget) in flight
   * are left out, and a claim takes at most what keeps every other target within its share: no target ever has more
   * than perTarget in flight here, so a slow one holds that many of the replica's `concurrency` at most.
   */
  private async claim(): Promise<Claimed> {
    const leftOut: string[] = [];
    let most = 0;
    for (const [id, n] of this.perTargetCount) {
      if (n >= this.half) leftOut.push(id);
      else most = Math.max(most, n);
    }
    const limit = Math.min(this.concurrency - this.inflight, this.perTarget - most);
    if (limit <= 0) return { rows: 0, limit: 0, open: false };
    const now = this.o.clock();
    const rows = await this.o.store.outbox.claim(this.o.instanceId, now, new Date(now.getTime() + LEASE_MS), leftOut, limit);
    for (const row of rows) {
      this.inflight++;
      this.perTargetCount.set(row.targetId, (this.perTargetCount.get(row.targetId) ?? 0) + 1);
      const p: Promise<void> = this.deliver(row)
        .catch((err: unknown) => this.o.log.warn({ err, delivery: row.id }, "could not record an action delivery's outcome"))
        .finally(() => {
          this.inflight--;
          const n = (this.perTargetCount.get(row.targetId) ?? 1) - 1;
          if (n > 0) this.perTargetCount.set(row.targetId, n);
          else this.perTargetCount.delete(row.targetId);
          this.pending.delete(p);
          if (this.roomFor?.(row.targetId)) this.wake();
        });
      this.pending.add(p);
    }
    const open = rows.some((r) => (this.perTargetCount.get(r.targetId) ?? 0) < this.half);
    return { rows: rows.length, limit, open };
  }

  private async deliver(row: DeliveryRow): Promise<void> {
    if (row.kind === BACKCHANNEL_LOGOUT_KIND) return this.deliverLogoutToken(row);
    if (row.kind === SAML_SOAP_LOGOUT_KIND) {
      // A SAML LogoutRequest over SOAP to an SP's SingleLogoutService (saml-logout-delivery.ts).
      const failure = await sendSamlLogout(this.o, row);
      if (failure) return this.failed(row, failure.error, failure.final);
      this.o.onOutcome?.("delivered");
      return this.markDelivered(row.id);
    }
    const target = await this.o.runner.target(row.targetId);
    if (!target) return this.failed(row, "the target was deleted", true);
    const body = JSON.stringify({ ...row.payload, deliveryId: row.id });
    const t0 = Math.floor(this.o.clock().getTime() / 1000);
    try {
      const res = await postToTarget(target.endpoint, {
        headers: { "content-type": "application/json", "svc-signature": signatureHeader(target.key, t0, body), "idempotency-key": row.id },
        body,
        timeoutMs: target.timeoutMs,
        allowPrivate: this.o.allowPrivate,
        maxAnswerBytes: 0,
      });
      if (res.status < 200 || res.status > 299) return this.failed(row, `answered ${res.status}`);
    } catch (err) {
      return this.failed(row, err instanceof CallFailure ? err.message : String(err));
    }
    this.o.onOutcome?.("delivered");
    return this.markDelivered(row.id);
  }

  /** A back-channel logout token (logout-tokens.ts): to the application's URI, not to an action target. */
  private async deliverLogoutToken(row: DeliveryRow): Promise<void> {
    if (!this.o.logoutTokens) return this.failed(row, "no logout token signer", true);
    try {
      const status = await postLogoutToken(this.o.logoutTokens, row.payload as unknown as LogoutTokenPayload, this.o.clock(), this.o.allowPrivate);
      if (status < 200 || status > 299) return this.failed(row, `answered ${status}`);
    } catch (err) {
      return this.failed(row, err instanceof CallFailure ? err.message : String(err));
    }
    this.o.onOutcome?.("delivered");
    return this.markDelivered(row.id);
  }

  /**
   * Records a delivery as delivered. Its slot is free at once: the receiver has answered, and the row stays pending
   * (leased, so not claimed again; holding back its aggregate's next ones) until the statement has run. The rows are
   * recorded together: one "delivered" statement at a time, for every delivery that ended within MARK_LINGER_MS of the
   * first or while the previous statement ran (not one per delivery, under a backlog or a steady trickle alike). If it
   * fails the rows are delivered again after their lease (at least once); stop() runs it at once and waits for it like
   * for a delivery.
   */
  private markDelivered(id: string): Promise<void> {
    let batch = this.toMark;
    if (!batch) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = { ids: [], done, resolve, reject };
      this.toMark = batch;
      const p: Promise<void> = done
        .catch((err: unknown) => this.o.log.warn({ err, deliveries: batch?.ids.length }, "could not record action deliveries as delivered"))
        .finally(() => this.pending.delete(p));
      this.pending.add(p);
      if (!this.marking && !this.stopped) this.markTimer = setTimeout(() => this.flushMarks(), MARK_LINGER_MS);
    }
    batch.ids.push(id);
    if (this.stopped || batch.ids.length >= MARK_BATCH) this.flushMarks();
    return Promise.resolve();
  }

  /** Runs the "delivered" statement now (unless one runs: the batch waiting then goes when it ends). */
  private flushMarks(): void {
    clearTimeout(this.markTimer);
    this.markTimer = undefined;
    if (this.marking || !this.toMark) return;
    this.marking = true;
    void this.markBatch();
  }

  /** One "delivered" statement; the deliveries that ended while it ran wait their linger (or not, as above). */
  private async markBatch(): Promise<void> {
    const batch = this.toMark;
    this.toMark = undefined;
    if (batch) {
      try {
        await this.o.store.outbox.delivered(batch.ids, this.o.clock());
        batch.resolve();
      } catch (err) {
        batch.reject(err);
      }
    }
    this.marking = false;
    const next = this.toMark as typeof batch;
    if (!next) return;
    if (this.stopped || next.ids.length >= MARK_BATCH) this.flushMarks();
    else this.markTimer = setTimeout(() => this.flushMarks(), MARK_LINGER_MS);
  }

  private async failed(row: DeliveryRow, error: string, final = false): Promise<void> {
    const now = this.o.clock();
    const dead = final || row.attempts >= row.maxAttempts;
    const retryAt = dead ? null : new Date(now.getTime() + backoff(this.o.backoffMs, row.attempts));
    await this.o.store.outbox.failed(row.id, error, now, retryAt);
    this.o.onOutcome?.(dead ? "dead" : "failed");
    if (dead) {
      this.o.log.warn(
        { delivery: row.id, target: row.targetId, eventType: row.eventType, eventId: row.payload.id, attempts: row.attempts, error },
        "action delivery dead",
      );
    }
  }
}
