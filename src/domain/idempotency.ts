// Idempotency-Key (IETF draft-ietf-httpapi-idempotency-key-header) for creates: a client that did not get the answer
// to a create (a timeout, a dropped connection, an "outcome unknown" 503) sends it again with the same key and gets
// the first answer — status, headers and body — instead of a second create or a 409.
//
// - Scope: one key per instance and principal (the authenticated user), 1–255 visible ASCII characters; kept 24 h.
// - The first answer is recorded in the create's own transaction: the create and its recorded answer are committed
//   together or not at all, so a crash can neither leave a key without its effect nor an effect without its key. A
//   create that fails records nothing (a retry runs it again, and fails again the same way).
// - The same key with another request (another operation or another body) is refused (422, the draft's "Unprocessable
//   Content"); a retry while the first request is still running waits for it in the database and is then refused with
//   409 (the draft's "Conflict"); the retry after that gets the first answer.
// - Secrets shown once (a new PAT, a client secret, a private key) are replayed to whoever presents the same key as
//   the same principal within the 24 hours: the stored answer is sealed (AES-256-GCM) with a key derived from the
//   Idempotency-Key, the principal and the instance, and its row is found by a hash of the same: the database alone
//   (with or without the master key) shows neither the key nor the answer (as refresh-reuse.ts seals a rotation's
//   answer with the presented token). Keys must therefore be unguessable (a UUID, as the draft recommends).
import { createHash } from "node:crypto";
import { seal, unseal } from "../crypto/secretbox.js";
import type { Ctx } from "./context.js";
import { DomainError, invalidArgument } from "./errors.js";

/** How long an answer is given again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

/** The answer a create gave (and a retry gets again): status, the headers that matter, the body's bytes. */
export interface IdempotentAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

export const keyReused = () =>
  new DomainError(
    "FailedPrecondition",
    "Errors.Idempotency.KeyReused",
    "this Idempotency-Key was used with another request: a retry must send the same request, a new request a new key",
  );
export const keyInFlight = () =>
  new DomainError("AlreadyExists", "Errors.Idempotency.InFlight", "a request with this Idempotency-Key was being processed: retry it to get its answer");

/** The key as sent in the header: one value, 1–255 visible ASCII characters (a quoted string's quotes removed). */
export function parseIdempotencyKey(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
  // The draft defines the field as a Structured Header String ("..."); a bare token is accepted too.
  const key = header.length >= 2 && header.startsWith('"') && header.endsWith('"') ? header.slice(1, -1) : header;
  if (!KEY.test(key)) throw invalidArgument("Errors.Idempotency.Key", "Idempotency-Key must be 1–255 visible ASCII characters (a UUID, say)");
  return key;
}

const digest = (label: string, ctx: Ctx, key: string) =>
  createHash("sha256").update(`svc:${label}:v1\0${ctx.instanceId}\0${ctx.principal.userId}\0${key}`).digest();

/**
 * Runs `create` once per key: a first request runs it in one transaction together with the record of its answer; a
 * retry with the same key and request gets that answer (`replayed`) without running anything.
 * `operation` names what is created and `request` holds the request's content, which a retry must repeat.
 */
export async function idempotently(
  ctx: Ctx,
  key: string,
  operation: string,
  request: Uint8Array,
  create: (ctx: Ctx) => Promise<IdempotentAnswer>,
): Promise<{ answer: IdempotentAnswer; replayed: boolean }> {
  const id = digest("idempotency-id", ctx, key).toString("hex");
  const sealKey = digest("idempotency-answer", ctx, key);
  const aad = `svc:idempotency:${ctx.instanceId}:${id}`;
  const requestHash = createHash("sha256").update(operation).update("\0").update(request).digest("hex");
  const now = ctx.clock();
  const found = await ctx.store.idempotency.find(ctx.instanceId, id, now);
  if (found) {
    if (found.requestHash !== requestHash) throw keyReused();
    return { answer: decode(unseal(sealKey, found.answer, aad)), replayed: true };
  }
  const answer = await ctx.store.transaction(async (tx) => {
    const made = await create({ ...ctx, store: tx });
    const recorded = await tx.idempotency.record({
      id,
      instanceId: ctx.instanceId,
      requestHash,
      answer: seal(sealKey, encode(made), aad),
      createdAt: now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
    });
    // Another request with this key committed while this one ran: this one's create is rolled back.
    if (!recorded) throw keyInFlight();
    return made;
  });
  // Now and then, the expired answers go (never in the way of the answer).
  if (Math.random() < 1 / 64) ctx.store.idempotency.purge(now).catch(() => {});
  return { answer, replayed: false };
}

function encode(a: IdempotentAnswer): Buffer {
  return Buffer.from(JSON.stringify({ s: a.status, h: a.headers, b: Buffer.from(a.body).toString("base64") }), "utf8");
}

function decode(bytes: Buffer): IdempotentAnswer {
  const j = JSON.parse(bytes.toString("utf8")) as { s: number; h: Record<string, string>; b: string };
  return { status: j.s, headers: j.h, body: new Uint8Array(Buffer.from(j.b, "base64")) };
}
