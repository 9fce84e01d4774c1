// A request's database budget (SVC_DATABASE_REQUEST_TIMEOUT_MS): every wait of one request on the database — for a
// pool connection, for a transaction to start, for each statement's answer — draws on one budget, counted from the
// request's first database call. Per-statement bounds alone let a request that runs several statements or
// transactions one after another (a SCIM Bulk, a write after reads) wait for the sum of them on a frozen or stalled
// server (issue 25: 12.1 s where 7 s was documented). The budget travels with the request's asynchronous work
// (AsyncLocalStorage), so the store applies it without every repository passing it along; once the response is
// closed it no longer applies (work the request left running in the background keeps the per-statement bounds).
import { AsyncLocalStorage } from "node:async_hooks";

interface Budget {
  readonly ms: number;
  /** performance.now() past which the request may not wait on the database; set at its first database call. */
  until?: number;
  /** False once the response is closed. */
  open: boolean;
  /** A COMMIT of this request got no answer (the connection dropped, or no reply in time): it may have been kept. */
  commitUnanswered?: boolean;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * Runs `fn` (a request's handling) under a database budget of `ms`; `close` ends it (the response closed). The budget
 * starts at the first database call, not here: reading a slow client's body is not the database's time.
 */
export function withDatabaseBudget<T>(ms: number, fn: () => T): { result: T; close(): void } {
  const budget: Budget = { ms, open: true };
  return {
    result: budgets.run(budget, fn),
    close() {
      budget.open = false;
    },
  };
}

/** Milliseconds the current request may still wait on the database (≤ 0: none), or undefined outside a request. */
export function databaseTimeLeft(): number | undefined {
  const b = budgets.getStore();
  if (!b?.open) return undefined;
  const now = performance.now();
  b.until ??= now + b.ms;
  return b.until - now;
}

/**
 * The error of a wait cut short by the budget: shaped as a socket read timeout (code ETIMEDOUT), which the store's
 * error translation and Prisma's pg adapter both read as "the database did not answer in time" (503, Retry-After).
 */
export function databaseTimeUp(what: string): Error {
  return Object.assign(new Error(`${what}: the request's database time (SVC_DATABASE_REQUEST_TIMEOUT_MS) is up`), {
    code: "ETIMEDOUT",
    syscall: "read",
    errno: -110,
  });
}

/** Called when a COMMIT of the current request got no answer: whether it was kept is unknown. */
export function noteCommitUnanswered(): void {
  const b = budgets.getStore();
  if (b) b.commitUnanswered = true;
}

/** Whether a COMMIT of the current request went unanswered since the last call (the mark is cleared). */
export function takeCommitUnanswered(): boolean {
  const b = budgets.getStore();
  if (!b?.commitUnanswered) return false;
  b.commitUnanswered = false;
  return true;
}
