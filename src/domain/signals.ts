// What the domain tells the operator's metrics about sign-ins: a port, implemented by src/http/metrics.ts. Labels come
// from small fixed sets only (factor names, outcomes, protocols), never from users or ids.
import { DomainError } from "./errors.js";

/** How one factor check of a session ended. */
export type CheckOutcome = "success" | "invalid" | "locked" | "refused" | "rate_limited" | "error";

export interface SignInSignals {
  /** One check of a session (CreateSession, SetSession, the hosted login): `user`, `password`, `totp`, … */
  check(factor: string, outcome: CheckOutcome): void;
  /** An OIDC auth request or a SAML request was answered: with a sign-in, or with an error for the client. */
  finished(protocol: "oidc" | "saml", outcome: "success" | "error"): void;
  /** One call of an action target during `fn` (preuserinfo, …): how it ended and how long it took. */
  action?(fn: string, outcome: "success" | "error" | "timeout", seconds: number): void;
  /** One attempt to deliver an event to an action target: delivered, failed (to be retried) or dead (given up). */
  delivery?(outcome: "delivered" | "failed" | "dead"): void;
}

/**
 * The outcome a check's error stands for: a wrong credential or an unknown user (invalid), a locked user or
 * password (locked), a user, organization or factor that may not sign in (refused), too many failures (rate_limited).
 */
export function checkOutcomeOf(err: unknown): CheckOutcome {
  if (!(err instanceof DomainError)) return "error";
  if (err.id === "Errors.User.Locked") return "locked";
  switch (err.kind) {
    case "InvalidArgument":
    case "NotFound":
    case "Unauthenticated":
      return "invalid";
    case "FailedPrecondition":
    case "PermissionDenied":
      return "refused";
    case "ResourceExhausted":
      return "rate_limited";
    default:
      return "error";
  }
}
