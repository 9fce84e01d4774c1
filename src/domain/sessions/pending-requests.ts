// One lifecycle for the sign-in requests a login UI answers (OIDC auth requests, SAML AuthnRequests): a request is
// open until it expires or is answered, is answered at most once (the write is conditional on it being open, so of
// two concurrent answers one wins and the other learns why), and asks for a new authentication when its client says
// so (prompt=login, max_age, ForceAuthn). Each kind names its errors; the rules are the same.
import { type DomainError, failedPrecondition, notFound } from "../errors.js";

export interface RequestKind {
  /** "auth request", "SAML request": in the messages. */
  name: string;
  errors: { NotFound: string; Expired: string; AlreadyFinished: string; ReauthenticationRequired: string };
  /** Who must start again when it expired ("the client", "the SP"). */
  starter: string;
}

export interface PendingRequest {
  finishedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
}

export const alreadyFinished = (k: RequestKind) => failedPrecondition(k.errors.AlreadyFinished, `the ${k.name} was already answered`);

/** Why a request cannot be answered (any more) at `now`; undefined while it is open. */
export function closedReason(k: RequestKind, r: Pick<PendingRequest, "finishedAt" | "expiresAt">, now: Date): DomainError | undefined {
  if (r.finishedAt) return alreadyFinished(k);
  if (r.expiresAt.getTime() <= now.getTime()) return failedPrecondition(k.errors.Expired, `the ${k.name} has expired: ${k.starter} must start a new one`);
  return undefined;
}

/** The request if it is open: NotFound (none), FailedPrecondition (answered or expired). */
export function stillOpenRequest<R extends Pick<PendingRequest, "finishedAt" | "expiresAt">>(k: RequestKind, r: R | null | undefined, now: Date): R {
  if (!r) throw notFound(k.errors.NotFound, `no such ${k.name}`);
  const problem = closedReason(k, r, now);
  if (problem) throw problem;
  return r;
}

/**
 * Answers the request once: `write` is the conditional write (false when it was no longer open); then `reread` tells
 * why (answered meanwhile, or expired).
 */
export async function answerOnce(
  k: RequestKind,
  write: () => Promise<boolean>,
  reread: () => Promise<Pick<PendingRequest, "finishedAt" | "expiresAt"> | null>,
  now: Date,
): Promise<void> {
  if (await write()) return;
  const again = await reread();
  throw (again && closedReason(k, again, now)) ?? alreadyFinished(k);
}

/**
 * Whether the sign-in (its latest factor at `authTime`) is fresh enough for the request: `fresh` (prompt=login,
 * max_age=0, ForceAuthn) needs a factor verified after the request was made; `maxAge` seconds at most otherwise.
 */
export function reauthenticationProblem(
  k: RequestKind,
  r: { createdAt: Date; fresh: boolean; maxAge: number | null },
  authTime: Date,
  now: Date,
): DomainError | undefined {
  if (r.fresh && authTime.getTime() < r.createdAt.getTime()) {
    return failedPrecondition(k.errors.ReauthenticationRequired, `${k.starter} asked for a new authentication: check a factor again in the session`);
  }
  if (r.maxAge !== null && r.maxAge > 0 && now.getTime() - authTime.getTime() > r.maxAge * 1000) {
    return failedPrecondition(
      k.errors.ReauthenticationRequired,
      `${k.starter} accepts an authentication at most ${r.maxAge} s old: check a factor again in the session`,
    );
  }
  return undefined;
}
