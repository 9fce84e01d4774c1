// Calling the targets of a function. The executions and their targets (signing keys opened) are cached per process
// until a write drops them (on every replica: the signing-key invalidation) or ENTRY_TTL_MS passes, so a function
// without an execution costs a map lookup. Each call: POST of a JSON body with the header
//   Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the target's signing key>
// no redirects followed, within the target's timeout; the answer must be a 200 with a JSON object of at most 64 KiB.
// A target that fails refuses what was being issued when it is interrupt_on_error (Errors.Action.Target.Failed,
// Unavailable), else it is logged and skipped.
import type { Logger } from "pino";
import { actionTargetAad } from "../crypto/sealer.js";
import { unseal } from "../crypto/secretbox.js";
import { conditionMatches } from "../domain/actions/executions.js";
import type { ActionFunction, TargetAnswer } from "../domain/actions/functions.js";
import { type ActionTargets, targetFailed } from "../domain/actions/ports.js";
import type { SignInSignals } from "../domain/signals.js";
import type { ActionRepo } from "../store/actions.js";
import { ENTRY_TTL_MS } from "../store/auth-cache.js";
import type { Store } from "../store/index.js";
import type { OutboxRoute, OutboxRouter } from "../store/outbox.js";
import { CallFailure, postToTarget, signatureHeader } from "./http.js";

export { signatureHeader };

const MAX_ANSWER_BYTES = 64 * 1024;

export interface LoadedTarget {
  id: string;
  name: string;
  endpoint: string;
  timeoutMs: number;
  interruptOnError: boolean;
  kind: string;
  orgId: string | null;
  key: Buffer;
}

/** An event execution as the event writer needs it: what it matches and where it sends. */
interface EventRoute {
  orgId: string;
  condition: string;
  routes: OutboxRoute[];
}

function answerOf(status: number, body: Buffer): Record<string, unknown> {
  if (status !== 200) throw new CallFailure(`answered ${status}`);
  const text = body.toString("utf8");
  const parsed: unknown = text.trim() === "" ? {} : JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new CallFailure("answer is not a JSON object");
  return parsed as Record<string, unknown>;
}

export class ActionRunner implements ActionTargets, OutboxRouter {
  private cache: { until: number; byFunction: Map<string, LoadedTarget[]> } | undefined;
  private loading: Promise<Map<string, LoadedTarget[]>> | undefined;
  private events: { until: number; generation: number; routes: EventRoute[] } | undefined;
  private byId = new Map<string, { until: number; target: LoadedTarget | undefined }>();
  private generation = 0;
  /** Deliveries before a webhook or call target's event is dead (SVC_ACTIONS_DELIVERY_ATTEMPTS). */
  maxAttempts = 10;

  constructor(
    private readonly o: {
      store: Store;
      instanceId: string;
      masterKey: Buffer;
      log: Logger;
      clock: () => Date;
      signals?: SignInSignals;
      /** SVC_ACTIONS_ALLOW_PRIVATE: targets on private, loopback and link-local addresses may be called. */
      allowPrivate?: boolean;
    },
  ) {}

  /** Drops the cached executions (a write changed them, here or on another replica). */
  invalidate(): void {
    this.generation++;
    this.cache = undefined;
    this.loading = undefined;
    this.events = undefined;
    this.byId.clear();
  }

  private loaded(r: Awaited<ReturnType<ActionRepo["targetsOfExecutions"]>>[number]): LoadedTarget {
    const { instanceId, masterKey } = this.o;
    return {
      id: r.id,
      name: r.name,
      endpoint: r.endpoint,
      timeoutMs: r.timeoutMs,
      interruptOnError: r.interruptOnError,
      kind: r.kind,
      orgId: r.orgId,
      key: unseal(masterKey, r.signingKeyEnc, actionTargetAad(instanceId, r.id)),
    };
  }

  /**
   * Where an event goes (the event writer asks, inside the event's transaction, through `actions`, that transaction's
   * repository: on the embedded database nothing else could read while it is open). The instance's executions match
   * every organization's events, an organization's its own; each target once, in the order of the executions.
   */
  async routes(e: { instanceId: string; orgId: string | null; type: string }, actions?: ActionRepo): Promise<OutboxRoute[]> {
    if (e.instanceId !== this.o.instanceId) return [];
    let cached = this.events;
    if (!cached || cached.until <= performance.now()) {
      const generation = this.generation;
      const repo = actions ?? this.o.store.actions;
      const executions = await repo.eventExecutions(e.instanceId);
      const ids = [...new Set(executions.flatMap((x) => x.targetIds))];
      const targets = new Map((ids.length ? await repo.targetsOfExecutions(e.instanceId, ids) : []).map((t) => [t.id, t]));
      const routes = executions.map((x) => ({
        orgId: x.orgId,
        condition: x.condition,
        routes: x.targetIds.flatMap((id) => {
          const t = targets.get(id);
          return t ? [{ targetId: t.id, targetOrgId: t.orgId, maxAttempts: t.kind === "async" ? 1 : this.maxAttempts }] : [];
        }),
      }));
      cached = { until: performance.now() + ENTRY_TTL_MS, generation, routes };
      if (generation === this.generation) this.events = cached;
    }
    const out = new Map<string, OutboxRoute>();
    for (const x of cached.routes) {
      if (x.orgId !== "" && x.orgId !== e.orgId) continue;
      if (!conditionMatches(x.condition, e.type)) continue;
      for (const r of x.routes) if (!out.has(r.targetId)) out.set(r.targetId, r);
    }
    return [...out.values()];
  }

  /** A target with its signing key opened, for a delivery (cached like the executions); undefined once deleted. */
  async target(id: string): Promise<LoadedTarget | undefined> {
    const hit = this.byId.get(id);
    if (hit && hit.until > performance.now()) return hit.target;
    const generation = this.generation;
    const row = await this.o.store.actions.findTarget(this.o.instanceId, id);
    const target = row ? this.loaded(row) : undefined;
    if (generation === this.generation) this.byId.set(id, { until: performance.now() + ENTRY_TTL_MS, target });
    return target;
  }

  private async load(): Promise<Map<string, LoadedTarget[]>> {
    const generation = this.generation;
    const { store, instanceId } = this.o;
    const executions = await store.actions.executions(instanceId);
    const ids = [...new Set(executions.flatMap((e) => e.targetIds))];
    const rows = ids.length ? await store.actions.targetsOfExecutions(instanceId, ids) : [];
    const targets = new Map(rows.map((r) => [r.id, this.loaded(r)]));
    const byFunction = new Map(executions.map((e) => [e.function, e.targetIds.flatMap((id) => targets.get(id) ?? [])]));
    if (generation === this.generation) this.cache = { until: performance.now() + ENTRY_TTL_MS, byFunction };
    return byFunction;
  }

  private async targets(fn: ActionFunction): Promise<LoadedTarget[]> {
    if (this.cache && this.cache.until > performance.now()) return this.cache.byFunction.get(fn) ?? [];
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return (await this.loading).get(fn) ?? [];
  }

  /** Whether `fn` has targets (a cheap check before building what they would be sent). */
  async has(fn: ActionFunction): Promise<boolean> {
    return (await this.targets(fn)).length > 0;
  }

  /** One call of a function's target: its answer (a webhook's is ignored); a failure is counted, logged and thrown. */
  private async attempt(fn: ActionFunction, t: LoadedTarget, body: string): Promise<TargetAnswer | undefined> {
    const started = performance.now();
    try {
      const t0 = Math.floor(this.o.clock().getTime() / 1000);
      const res = await postToTarget(t.endpoint, {
        headers: { "content-type": "application/json", accept: "application/json", "svc-signature": signatureHeader(t.key, t0, body) },
        body,
        timeoutMs: t.timeoutMs,
        allowPrivate: this.o.allowPrivate ?? false,
        maxAnswerBytes: t.kind === "call" ? MAX_ANSWER_BYTES : 0,
      });
      if (t.kind !== "call" && (res.status < 200 || res.status > 299)) throw new CallFailure(`answered ${res.status}`);
      const answer = t.kind === "call" ? { targetName: t.name, body: answerOf(res.status, res.body) } : undefined;
      this.o.signals?.action?.(fn, "success", (performance.now() - started) / 1000);
      return answer;
    } catch (err) {
      const timedOut = err instanceof CallFailure && err.timeout;
      this.o.signals?.action?.(fn, timedOut ? "timeout" : "error", (performance.now() - started) / 1000);
      const reason = err instanceof Error ? err.message : String(err);
      this.o.log.warn({ target: t.id, targetName: t.name, function: fn, ms: Math.round(performance.now() - started), reason }, "action target failed");
      throw err;
    }
  }

  /**
   * Calls `fn`'s targets in order with `payload` (plus the function and the instance), each after the one before
   * answered; `next` turns an answer into the payload of the following target (what it sees includes its
   * predecessors' additions). Resolves with the answers of the targets that answered.
   */
  async call(
    fn: ActionFunction,
    payload: Record<string, unknown>,
    next?: (payload: Record<string, unknown>, answer: TargetAnswer) => Record<string, unknown>,
  ): Promise<TargetAnswer[]> {
    const targets = await this.targets(fn);
    const answers: TargetAnswer[] = [];
    let current = payload;
    for (const t of targets) {
      const body = JSON.stringify({ function: fn, instanceId: this.o.instanceId, ...current });
      // Fire and forget: nothing waits for it, and its failure (logged) refuses nothing.
      if (t.kind === "async") {
        this.attempt(fn, t, body).catch(() => {});
        continue;
      }
      try {
        const answer = await this.attempt(fn, t, body);
        if (!answer) continue;
        answers.push(answer);
        if (next) current = next(current, answer);
      } catch {
        if (t.interruptOnError) throw targetFailed(t.name);
      }
    }
    return answers;
  }
}
