// Calling the targets of a function. The executions and their targets (signing keys opened) are cached per process
// until a write drops them (on every replica: the signing-key invalidation) or ENTRY_TTL_MS passes, so a function
// without an execution costs a map lookup. Each call: POST of a JSON body with the header
//   Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the target's signing key>
// no redirects followed, within the target's timeout; the answer must be a 200 with a JSON object of at most 64 KiB.
// A target that fails refuses what was being issued when it is interrupt_on_error (Errors.Action.Target.Failed,
// Unavailable), else it is logged and skipped.
import { createHmac } from "node:crypto";
import type { Logger } from "pino";
import { actionTargetAad } from "../crypto/sealer.js";
import { unseal } from "../crypto/secretbox.js";
import type { ActionFunction, TargetAnswer } from "../domain/actions/functions.js";
import { type ActionTargets, targetFailed } from "../domain/actions/ports.js";
import type { SignInSignals } from "../domain/signals.js";
import { ENTRY_TTL_MS } from "../store/auth-cache.js";
import type { Store } from "../store/index.js";

const MAX_ANSWER_BYTES = 64 * 1024;

interface LoadedTarget {
  id: string;
  name: string;
  endpoint: string;
  timeoutMs: number;
  interruptOnError: boolean;
  key: Buffer;
}

/** The Svc-Signature header of `body` at `t` (unix seconds) under `key`. */
export function signatureHeader(key: Buffer, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", key).update(`${t}.${body}`).digest("hex")}`;
}

async function readAnswer(res: Response): Promise<Record<string, unknown>> {
  if (res.status !== 200) throw new Error(`answered ${res.status}`);
  const declared = Number(res.headers.get("content-length") ?? 0);
  if (declared > MAX_ANSWER_BYTES) throw new Error("answer too large");
  const reader = res.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw new Error("answer too large");
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  const body: unknown = text.trim() === "" ? {} : JSON.parse(text);
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new Error("answer is not a JSON object");
  return body as Record<string, unknown>;
}

export class ActionRunner implements ActionTargets {
  private cache: { until: number; byFunction: Map<string, LoadedTarget[]> } | undefined;
  private loading: Promise<Map<string, LoadedTarget[]>> | undefined;
  private generation = 0;

  constructor(private readonly o: { store: Store; instanceId: string; masterKey: Buffer; log: Logger; clock: () => Date; signals?: SignInSignals }) {}

  /** Drops the cached executions (a write changed them, here or on another replica). */
  invalidate(): void {
    this.generation++;
    this.cache = undefined;
    this.loading = undefined;
  }

  private async load(): Promise<Map<string, LoadedTarget[]>> {
    const generation = this.generation;
    const { store, instanceId, masterKey } = this.o;
    const executions = await store.actions.executions(instanceId);
    const ids = [...new Set(executions.flatMap((e) => e.targetIds))];
    const rows = ids.length ? await store.actions.targetsOfExecutions(instanceId, ids) : [];
    const targets = new Map(
      rows.map((r) => [
        r.id,
        {
          id: r.id,
          name: r.name,
          endpoint: r.endpoint,
          timeoutMs: r.timeoutMs,
          interruptOnError: r.interruptOnError,
          key: unseal(masterKey, r.signingKeyEnc, actionTargetAad(instanceId, r.id)),
        },
      ]),
    );
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
      const started = performance.now();
      try {
        const t0 = Math.floor(this.o.clock().getTime() / 1000);
        const res = await fetch(t.endpoint, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json", "svc-signature": signatureHeader(t.key, t0, body) },
          body,
          redirect: "manual",
          signal: AbortSignal.timeout(t.timeoutMs),
        });
        const answer = { targetName: t.name, body: await readAnswer(res) };
        this.o.signals?.action?.(fn, "success", (performance.now() - started) / 1000);
        answers.push(answer);
        if (next) current = next(current, answer);
      } catch (err) {
        // By name: the DOMException fetch rejects with may come from another realm than this module's Error.
        const timedOut = (err as { name?: unknown } | null)?.name === "TimeoutError";
        this.o.signals?.action?.(fn, timedOut ? "timeout" : "error", (performance.now() - started) / 1000);
        const reason = timedOut ? `no answer within ${t.timeoutMs} ms` : err instanceof Error ? err.message : String(err);
        this.o.log.warn({ target: t.id, targetName: t.name, function: fn, ms: Math.round(performance.now() - started), reason }, "action target failed");
        if (t.interruptOnError) throw targetFailed(t.name);
      }
    }
    return answers;
  }
}
