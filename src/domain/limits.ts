// Brute-force limits: failed authentications are counted per key (a client id, a user, a source address) in a store
// every replica shares, and a key past its limit is refused for the rest of the window before anything is checked.
import { DomainError } from "./errors.js";

export interface FailureLimits {
  /**
   * Seconds until the first of `keys` that this process knows to be blocked is free again, 0 when none is: no
   * database round trip, so successful requests pay nothing. (Another replica learns of a block at its first failure.)
   */
  blockedFor(keys: readonly string[]): number;
  /** Counts one failure for each key; the seconds to wait when that passed a limit, else 0. */
  failed(keys: readonly string[]): Promise<number>;
}

/** No limits (turned off, or where nothing is counted). */
export const NO_LIMITS: FailureLimits = { blockedFor: () => 0, failed: async () => 0 };

/** The answer while a key is blocked: the same whether the credential would have been right. */
export const rateLimited = (seconds: number) =>
  new DomainError("ResourceExhausted", "Errors.RateLimited", `too many failed attempts: try again in ${seconds} s`, { retryAfter: String(seconds) });

/** Keys of a request: the client or user it names (when it names one) and where it came from (when known). */
export function failureKeys(named: { client?: string; user?: string }, peer: string | undefined): string[] {
  const keys: string[] = [];
  if (named.client) keys.push(`client:${named.client.toLowerCase()}`);
  if (named.user) keys.push(`user:${named.user}`);
  if (peer) keys.push(`ip:${peer}`);
  return keys;
}
