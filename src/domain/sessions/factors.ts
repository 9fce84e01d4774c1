// The factor checks and challenges a session request runs, by name: each module of a factor (password here; TOTP,
// e-mail OTP and WebAuthn in identity/authn) registers what it does with a session. A check that succeeds sets its
// factor's verification time in the patch; one that fails throws, and the request changes nothing but the lockout
// counters the check itself keeps.
import type { SessionPatch, SessionRow, SessionUserRow } from "../../store/sessions.js";
import type { UserChecks } from "../../store/sign-in-sql.js";
import type { Ctx } from "../context.js";
import type { Effective } from "../settings/values.js";
import type { ChallengeAnswers, ChallengeRequests, SessionChecks } from "./model.js";

/** One request's step on one session, after its user is known. */
export interface FactorStep {
  ctx: Ctx;
  now: Date;
  /** The session as stored before this request (for CreateSession: as it is being created). */
  session: SessionRow;
  user: SessionUserRow;
  /** What the checks read about the user (its password state, the settings), read with the user. */
  checks: UserChecks;
  /** The effective login settings of the user's organization. */
  login: Effective<"login">;
  /** What the request writes to the session. */
  patch: SessionPatch;
  /**
   * A right password was checked: the user's count of wrong ones starts again, with the session's write, or on its
   * own when the request fails after the check.
   */
  clearFailedPasswords?: boolean;
}

export type FactorName = Exclude<keyof SessionChecks, "user">;

export type FactorCheck<K extends FactorName> = (step: FactorStep, input: NonNullable<SessionChecks[K]>) => Promise<void>;
export type FactorChallenge<K extends keyof ChallengeRequests> = (step: FactorStep, input: NonNullable<ChallengeRequests[K]>) => Promise<ChallengeAnswers>;

/** The order checks run in: the first factor, then the second ones. */
export const FACTOR_ORDER: readonly FactorName[] = ["idpIntent", "password", "webAuthN", "totp", "otpEmail"];
