// Short-lived in-memory caches of what authentication needs (resolved bearer
// tokens, OAuth clients, signing keys), and their invalidation across
// replicas.
//
// Every write that can make a cached answer wrong (user state, profile,
// credentials, memberships, organization state, token revocation, key
// rotation, the role claims of grants and of the projects, project grants and
// organizations they depend on: see grant-holders.ts) calls
// `invalidateAuth(tx, target)` inside its transaction. That does two things:
//  - `pg_notify('svc_auth', target)` in the transaction: PostgreSQL delivers
//    it to every replica's dedicated LISTEN connection when (and only if) the
//    transaction commits;
//  - drops the matching entries of this process's caches at once and bumps
//    their generation, so a lookup that started before the write cannot store
//    its stale answer.
// On the embedded database there is one process and one connection
// (transactions are serialised), so the in-process part is exact.
//
// Why this keeps "refused at once" on other replicas: the notification leaves
// PostgreSQL at commit, before the writer's caller gets its answer, so by the
// time anyone can act on "the user is deactivated" the other replicas' LISTEN
// sockets have it (same host/LAN latency: well under a millisecond). As a
// safety net, entries expire after ENTRY_TTL_MS, and while a replica's LISTEN
// connection is down it caches nothing (every request goes to the database)
// until it has reconnected and flushed.
import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Logger } from "pino";
import type { Prisma } from "../../gen/prisma/client.js";

export type AuthTarget = { userId: string } | { orgId: string } | { all: true } | { keys: true };

export const AUTH_CHANNEL = "svc_auth";
/** Upper bound on how long a cached answer is used without a re-check. */
export const ENTRY_TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;

/** What a cache's read found: the value and what it depends on (its tags), and how long it may be kept. */
export interface Loaded<V> {
  value: V;
  tags: { userId?: string; orgId?: string };
  ttlMs?: number;
}

interface Entry<V> {
  value: V;
  userId?: string;
  orgId?: string;
  until: number;
}

/** A cache whose entries are tagged with the user and organization they depend on. */
export class TaggedCache<V> {
  private readonly map = new Map<string, Entry<V>>();
  /** The reads in flight (see load), with the generation each started in. */
  private readonly reading = new Map<string, { gen: number; value: Promise<V | undefined> }>();
  private gen = 0;
  enabled = true;
  /** Lookups answered from the cache and lookups that had to go to the database, for the metrics. */
  hits = 0;
  misses = 0;

  generation(): number {
    return this.gen;
  }

  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (!e) {
      this.misses++;
      return undefined;
    }
    if (e.until <= performance.now()) {
      this.map.delete(key);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return e.value;
  }

  /**
   * The cached value of `key`, or what `read` finds (stored with its tags): concurrent misses of one key share one
   * read. Without that, every request that comes while an entry is being read again after it expired goes to the
   * database itself (under load, a stampede of as many reads as there are requests in flight). A request joins a
   * read only if no invalidation came since the read started, and never while caching is off. A read that finds
   * nothing to keep (undefined) answers undefined and stores nothing.
   */
  load(key: string, read: () => Promise<Loaded<V> | undefined>): Promise<V | undefined> {
    const cached = this.get(key);
    if (cached !== undefined) return Promise.resolve(cached);
    const gen = this.gen;
    const flight = this.reading.get(key);
    if (this.enabled && flight && flight.gen === gen) return flight.value;
    const value = read().then((r) => {
      if (r) this.set(key, r.value, gen, r.tags, r.ttlMs);
      return r?.value;
    });
    const entry = { gen, value };
    this.reading.set(key, entry);
    const done = () => {
      if (this.reading.get(key) === entry) this.reading.delete(key);
    };
    value.then(done, done);
    return value;
  }

  /** Stores unless an invalidation happened since `generation` was read. */
  set(key: string, value: V, generation: number, tags: { userId?: string; orgId?: string }, ttlMs = ENTRY_TTL_MS): void {
    if (!this.enabled || generation !== this.gen) return;
    if (this.map.size >= MAX_ENTRIES) this.map.clear();
    this.map.set(key, { value, ...tags, until: performance.now() + ttlMs });
  }

  invalidate(target: AuthTarget): void {
    this.gen++;
    if ("all" in target) {
      this.map.clear();
      return;
    }
    if ("keys" in target) return;
    for (const [k, e] of this.map) {
      if (("userId" in target && e.userId === target.userId) || ("orgId" in target && e.orgId === target.orgId)) this.map.delete(k);
    }
  }

  clear(): void {
    this.gen++;
    this.map.clear();
  }
}

type Listener = (target: AuthTarget) => void;
const localListeners = new Set<Listener>();

/** Subscribes this process to invalidations (local ones at once, other replicas' via LISTEN). */
export function onAuthInvalidation(fn: Listener): () => void {
  localListeners.add(fn);
  return () => localListeners.delete(fn);
}

function dispatch(target: AuthTarget): void {
  for (const fn of localListeners) fn(target);
}

/** The one call every auth-relevant write makes inside its transaction. */
export async function invalidateAuth(tx: Prisma.TransactionClient, target: AuthTarget): Promise<void> {
  await tx.$executeRaw`SELECT pg_notify(${AUTH_CHANNEL}, ${JSON.stringify(target)})`;
  dispatch(target);
}

function parseTarget(payload: string | undefined): AuthTarget {
  try {
    const t = JSON.parse(payload ?? "") as Record<string, unknown>;
    if (typeof t.userId === "string") return { userId: t.userId };
    if (typeof t.orgId === "string") return { orgId: t.orgId };
    if (t.keys === true) return { keys: true };
  } catch {
    // fall through: anything unreadable flushes everything
  }
  return { all: true };
}

/** How often a replica sends itself a heartbeat on the channel, and how long without any notification means stalled. */
export const HEARTBEAT_MS = 1_000;
export const STALLED_AFTER_MS = 2_500;

/**
 * A dedicated PostgreSQL connection LISTENing on the invalidation channel.
 * While it is down, `setConnected(false)` tells the caches to stop caching;
 * after reconnecting everything is flushed (notifications may have been missed).
 * A connection can also stall without failing (a network path that drops
 * packets, a server process stopped): `heartbeat` sends a notification every
 * HEARTBEAT_MS through another connection, and a listener that hears nothing
 * for STALLED_AFTER_MS (well under a cache entry's life) is taken for lost.
 */
export function listenForInvalidations(
  url: string,
  log: Logger,
  onTarget: Listener,
  setConnected: (up: boolean) => void,
  heartbeat?: (payload: string) => Promise<void>,
): { ready: Promise<void>; close(): Promise<void> } {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let firstResolve: () => void = () => {};
  const ready = new Promise<void>((r) => {
    firstResolve = r;
  });
  // Logged once per outage (when it goes down and when it is back), not at every retry.
  let down = false;
  let lastHeard = performance.now();
  let beats = 0;
  const me = randomUUID();
  const beat = heartbeat
    ? setInterval(() => {
        heartbeat(JSON.stringify({ heartbeat: me, n: ++beats })).catch(() => {});
        if (client && !down && performance.now() - lastHeard > STALLED_AFTER_MS)
          client.emit("error", new Error("no notification (not even its own heartbeat) for too long: the listener has stalled"));
      }, HEARTBEAT_MS)
    : undefined;
  beat?.unref();
  const connect = async (delay: number) => {
    if (closed) return;
    const c = new pg.Client({ connectionString: url });
    client = c;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed || closed) return;
      failed = true;
      setConnected(false);
      if (!down) log.warn({ err }, "auth cache invalidation listener lost; caching disabled until it reconnects");
      down = true;
      // A stalled connection would never finish a polite end: drop the socket.
      (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      c.end().catch(() => {});
      const next = Math.min(delay * 2, 5_000);
      retry = setTimeout(() => void connect(next), delay);
      retry.unref();
    };
    c.on("error", fail);
    c.on("end", () => fail(new Error("connection ended")));
    c.on("notification", (msg) => {
      if (msg.channel !== AUTH_CHANNEL) return;
      lastHeard = performance.now();
      // Heartbeats (ours and other replicas') only prove the connection is alive.
      if (msg.payload?.startsWith('{"heartbeat"')) return;
      onTarget(parseTarget(msg.payload));
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${AUTH_CHANNEL}`);
      lastHeard = performance.now();
      onTarget({ all: true });
      setConnected(true);
      if (down) log.info("auth cache invalidation listener reconnected; caches flushed");
      down = false;
      firstResolve();
    } catch (err) {
      fail(err);
      firstResolve();
    }
  };
  setConnected(false);
  void connect(100);
  return {
    ready,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      if (beat) clearInterval(beat);
      await client?.end().catch(() => {});
    },
  };
}

export const __test = { dispatch, parseTarget };
