// What a session is to the domain: its factors with their verification times, the checks and challenges a request
// may carry, and the errors every session command shares.
import type { SessionRow } from "../../store/sessions.js";
import { notFound, permissionDenied } from "../errors.js";
import type { Step } from "./policy.js";

export type { SessionRow, SessionUserRow } from "../../store/sessions.js";

/** When each factor was last verified in the session (undefined: never). */
export interface Factors {
  user?: { verifiedAt: Date; id: string; loginName: string; displayName: string; orgId: string };
  password?: { verifiedAt: Date; changeRequired: boolean };
  webAuthN?: { verifiedAt: Date; userVerified: boolean };
  intent?: { verifiedAt: Date };
  totp?: { verifiedAt: Date };
  otpEmail?: { verifiedAt: Date };
}

export interface SessionView {
  id: string;
  createdAt: Date;
  updatedAt: Date;
  sequence: number;
  factors: Factors;
  metadata: Record<string, Uint8Array<ArrayBuffer>>;
  userAgent: UserAgent | undefined;
  expiresAt: Date | null;
  /** The organization of its user (the instance for a session without one): the resource owner. */
  ownerId: string;
  /** The sign-in policy's next step for it, when asked for (GetSession). */
  nextStep?: Step;
}

export interface UserAgent {
  fingerprintId?: string;
  ip?: string;
  description?: string;
  header: Record<string, string[]>;
}

/** The checks a CreateSession or SetSession runs, in this order: the user first, then the factors. */
export interface SessionChecks {
  user?: { userId: string } | { loginName: string };
  password?: { password: string };
  webAuthN?: { credentialAssertionData: Record<string, unknown> };
  totp?: { code: string };
  otpEmail?: { code: string };
  /** A succeeded intent at an external identity provider: a first factor that names the user too. */
  idpIntent?: { idpIntentId: string; idpIntentToken: string };
}

export type UserVerification = "required" | "preferred" | "discouraged";

/** Challenges to start; their answers come back in the response. */
export interface ChallengeRequests {
  webAuthN?: { domain: string; userVerification: UserVerification };
  otpEmail?: { delivery: "send"; urlTemplate?: string } | { delivery: "return" };
}

export interface ChallengeAnswers {
  webAuthN?: { publicKeyCredentialRequestOptions: Record<string, unknown> };
  otpEmail?: string;
}

export const sessionNotFound = () => notFound("Errors.Session.NotFound", "session not found");
export const tokenInvalid = () => permissionDenied("Errors.Session.Token.Invalid", "the session token is not valid for this session");

/** Whether the session has ended by its lifetime at `now`. */
export const expired = (s: Pick<SessionRow, "expiresAt">, now: Date) => s.expiresAt !== null && s.expiresAt.getTime() <= now.getTime();
