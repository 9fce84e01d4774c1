// One-time codes: made from the CSPRNG, kept only as SHA-256, compared in constant time, never logged. A user's
// password reset, e-mail and phone verification and invitation codes live in UserCode (one per kind, a new one replaces the previous),
// expire, are spent by their one right use, and go after MAX_CODE_ATTEMPTS wrong guesses.
import { randomInt } from "node:crypto";
import { sameHash, sha256 } from "../../../crypto/tokens.js";
import type { Store } from "../../../store/index.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition, invalidArgument } from "../../errors.js";
import { failureKeys, rateLimited } from "../../limits.js";

export type CodeKind = "password_reset" | "email_verification" | "phone_verification" | "invite";

/** How long a code of each kind may be used. */
export const CODE_LIFETIME_MS: Record<CodeKind, number> = {
  password_reset: 60 * 60_000,
  email_verification: 60 * 60_000,
  phone_verification: 60 * 60_000,
  invite: 72 * 60 * 60_000,
};
/** Wrong guesses after which a code is gone (a new one must be requested). */
export const MAX_CODE_ATTEMPTS = 5;

// No 0/O, 1/I/L: codes are typed by people. 31 symbols, 8 of them: 39 bits, with five guesses per code.
const CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/** A code for a link or to type in: 8 characters of an unambiguous alphabet. */
export function newUserCode(): string {
  let code = "";
  for (let i = 0; i < 8; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** A six-digit code (e-mail OTP of a sign-in: the OTP lockout bounds the guesses). */
export function newDigitCode(): string {
  return String(randomInt(1_000_000)).padStart(6, "0");
}

/** Codes are compared by their hashes, in constant time; a code typed in lower case is the same code. */
export function codeHash(code: string): Uint8Array<ArrayBuffer> {
  return sha256(code.trim().toUpperCase());
}

/** Stores a new code of `kind` for the user (replacing any previous one) and returns it. */
export async function issueUserCode(tx: Store, user: { id: string }, kind: CodeKind, target: string | null, now: Date): Promise<string> {
  const code = newUserCode();
  await tx.authn.putCode({
    userId: user.id,
    kind,
    codeHash: codeHash(code),
    target,
    expiresAt: new Date(now.getTime() + CODE_LIFETIME_MS[kind]),
    createdAt: now,
  });
  return code;
}

const wrong = (field: string) => invalidArgument("Errors.User.Code.Invalid", "the code is wrong", { field });

/**
 * Checks a code of `kind` without spending it: the stored row (its target) when right. A wrong guess is counted
 * (and the code removed at the limit); an expired code, or none, is refused with its own reason, which tells the
 * caller no more than that a new code is needed. The caller spends the code with `spendUserCode`.
 */
export async function checkUserCode(
  ctx: Ctx,
  user: { id: string },
  kind: CodeKind,
  code: string,
  field: string,
): Promise<{ target: string | null; hash: Uint8Array<ArrayBuffer> }> {
  if (!code.trim()) throw invalidArgument("Errors.User.Code.Missing", `${field} is required`, { field });
  if (code.length > 64) throw wrong(field);
  const keys = failureKeys({ user: user.id }, ctx.peer);
  const wait = ctx.limits?.blockedFor(keys) ?? 0;
  if (wait > 0) throw rateLimited(wait);
  const row = await ctx.store.authn.code(user.id, kind);
  if (!row) throw failedPrecondition("Errors.User.Code.NotFound", "no code was requested, or it was used: request a new one");
  if (row.expiresAt.getTime() <= ctx.clock().getTime()) throw failedPrecondition("Errors.User.Code.Expired", "the code has expired: request a new one");
  const hash = codeHash(code);
  if (!sameHash(hash, row.codeHash)) {
    await ctx.limits?.failed(keys);
    const stored = new Uint8Array(row.codeHash);
    const attempts = await ctx.store.authn.countFailedCode(user.id, kind, stored);
    if (attempts >= MAX_CODE_ATTEMPTS) await ctx.store.authn.deleteCode(user.id, kind, stored);
    throw wrong(field);
  }
  return { target: row.target, hash };
}

/** Spends a checked code inside the transaction of what it allows; refused when a concurrent request spent it first. */
export async function spendUserCode(tx: Store, user: { id: string }, kind: CodeKind, hash: Uint8Array<ArrayBuffer>): Promise<void> {
  if (!(await tx.authn.deleteCode(user.id, kind, hash))) {
    throw failedPrecondition("Errors.User.Code.NotFound", "no code was requested, or it was used: request a new one");
  }
}
