// The sign-in policy, in one place: which factors exist, what completes a sign-in for a user under the effective
// login settings, when a second factor is required, what a sensitive change (binding or removing an authenticator,
// a new e-mail address) needs, and the next step of a sign-in that every login UI follows (the hosted pages,
// prompt=none, a custom UI through SessionService). Pure: the callers read the session, the user's factors and the
// settings; nothing here reads or writes.
//
// A proof counts only from the session that presents it (NIST SP 800-63B §6.1.2.1 binds a new authenticator to a
// session that already authenticated at the level the account requires; ASVS V3.7.1 asks for a recent proof before
// sensitive changes).
import type { Login } from "../settings/values.js";

/** Every factor svc knows: one entry each in FACTORS. */
export type Factor = "password" | "passkey" | "u2f" | "totp" | "otpEmail" | "idp";

/** The first factors (they name and authenticate the user alone) and the second ones (after a first). */
export type FirstFactor = Extract<Factor, "password" | "passkey" | "idp">;
export type SecondFactor = Extract<Factor, "u2f" | "totp" | "otpEmail">;

/** When each factor was last verified in one session (undefined: never in it). */
export interface Proofs {
  password?: Date;
  totp?: Date;
  otpEmail?: Date;
  /** A WebAuthn assertion; `webauthnUserVerified` says whether the authenticator verified the user (a passkey). */
  webauthn?: Date;
  webauthnUserVerified: boolean;
  /** A succeeded intent at an external identity provider. */
  intent?: Date;
}

/** What the policy needs to know of the session's user. */
export interface AccountFacts {
  /** The second factors the user has set up (ready, not merely started). */
  ready: { totp: boolean; otpEmail: boolean; passkeys: number };
  /** An administrator asked for a new password, or the password is older than the expiry settings allow. */
  passwordChangeRequired: boolean;
}

interface FactorEntry {
  /** The SessionService check that proves it (SessionChecks key). */
  check: "password" | "webAuthN" | "totp" | "otpEmail" | "idpIntent";
  /** RFC 8176 amr values it contributes. */
  amr: readonly string[];
  /** Whether the login settings allow it. */
  allowed(login: Login): boolean;
  /** How long a proof of it counts, by the login settings (seconds). */
  lifetime(login: Login, as: "first" | "second"): number;
  /** When the session proved it. */
  provenAt(p: Proofs): Date | undefined;
  /** Whether the user has it set up (second factors only: first factors are not looked up, see nextStep). */
  setUp?(a: AccountFacts): boolean;
  /** The hosted login's page for it. */
  page: string;
}

/** The factor catalogue. Adding a factor is one entry here plus its check (registry.ts) and its page. */
export const FACTORS: Record<Factor, FactorEntry> = {
  password: {
    check: "password",
    amr: ["pwd"],
    allowed: (l) => l.allowUsernamePassword,
    lifetime: (l) => l.passwordCheckLifetimeSeconds,
    provenAt: (p) => p.password,
    page: "/password",
  },
  passkey: {
    check: "webAuthN",
    amr: ["hwk", "user"],
    allowed: (l) => l.passkeysAllowed,
    lifetime: (l) => l.multiFactorCheckLifetimeSeconds,
    provenAt: (p) => (p.webauthnUserVerified ? p.webauthn : undefined),
    page: "/passkey",
  },
  idp: {
    check: "idpIntent",
    amr: ["fed"],
    allowed: (l) => l.allowExternalIdp,
    lifetime: (l) => l.externalLoginCheckLifetimeSeconds,
    provenAt: (p) => p.intent,
    page: "/login",
  },
  u2f: {
    check: "webAuthN",
    amr: ["hwk"],
    allowed: (l) => l.secondFactors.includes("u2f"),
    lifetime: (l) => l.secondFactorCheckLifetimeSeconds,
    provenAt: (p) => p.webauthn,
    setUp: (a) => a.ready.passkeys > 0,
    page: "/mfa/u2f",
  },
  totp: {
    check: "totp",
    amr: ["otp"],
    allowed: (l) => l.secondFactors.includes("otp"),
    lifetime: (l) => l.secondFactorCheckLifetimeSeconds,
    provenAt: (p) => p.totp,
    setUp: (a) => a.ready.totp,
    page: "/mfa/totp",
  },
  otpEmail: {
    check: "otpEmail",
    amr: ["otp"],
    allowed: (l) => l.secondFactors.includes("otp_email"),
    lifetime: (l) => l.secondFactorCheckLifetimeSeconds,
    provenAt: (p) => p.otpEmail,
    setUp: (a) => a.ready.otpEmail,
    page: "/mfa/email",
  },
};

export const FIRST_FACTORS: readonly FirstFactor[] = ["password", "passkey", "idp"];
/** In the order a login UI offers them. */
export const SECOND_FACTORS: readonly SecondFactor[] = ["totp", "u2f", "otpEmail"];
/** The second factors a user can set up during a sign-in (an e-mail code is set up by an administrator or the API). */
export const SET_UP_DURING_SIGN_IN: readonly SecondFactor[] = ["totp", "u2f"];

/** The next step of a sign-in. */
export type Step =
  /** A first factor is missing (or no longer fresh): one of `options`, as the login settings allow. */
  | { kind: "firstFactor"; options: FirstFactor[] }
  /** A second factor is required: one of the user's own, as the settings allow. */
  | { kind: "secondFactor"; options: SecondFactor[] }
  /** MFA is forced and the user has no second factor yet: it sets one up now (the only time a sign-in binds one). */
  | { kind: "setUpSecondFactor"; options: SecondFactor[] }
  /** The password must be changed before the sign-in may finish. */
  | { kind: "changePassword" }
  | { kind: "done" };

export interface SignInState {
  step: Step;
  /** The fresh first factor the session proved, if any. */
  first: FirstFactor | undefined;
  /** Whether this sign-in needs a second factor (forced, or the user has one); false after a passkey. */
  mfaRequired: boolean;
}

const isFresh = (at: Date | undefined, seconds: number, now: Date): at is Date => at !== undefined && now.getTime() - at.getTime() <= seconds * 1000;

/** Where a session's sign-in stands: its fresh factors against what the account and the settings require. */
export function evaluate(p: Proofs, account: AccountFacts, login: Login, now: Date): SignInState {
  const fresh = (f: Factor, as: "first" | "second") => FACTORS[f].allowed(login) && isFresh(FACTORS[f].provenAt(p), FACTORS[f].lifetime(login, as), now);
  // A passkey (the authenticator verified the user) is two factors by itself.
  const first = (["passkey", "password", "idp"] as const).find((f) => fresh(f, "first"));
  if (!first) return { step: { kind: "firstFactor", options: FIRST_FACTORS.filter((f) => FACTORS[f].allowed(login)) }, first, mfaRequired: false };
  const own = SECOND_FACTORS.filter((f) => FACTORS[f].allowed(login) && FACTORS[f].setUp?.(account));
  const mfaRequired = first !== "passkey" && (login.forceMfa || own.length > 0);
  if (mfaRequired && !SECOND_FACTORS.some((f) => fresh(f, "second"))) {
    if (own.length) return { step: { kind: "secondFactor", options: own }, first, mfaRequired };
    return { step: { kind: "setUpSecondFactor", options: SET_UP_DURING_SIGN_IN.filter((f) => FACTORS[f].allowed(login)) }, first, mfaRequired };
  }
  if (account.passwordChangeRequired && p.password) return { step: { kind: "changePassword" }, first, mfaRequired };
  return { step: { kind: "done" }, first, mfaRequired };
}

/** auth_time: the latest verification of a factor in the session (the user's own check when none). */
export function authTime(p: Proofs, user: Date): Date {
  const times = [p.password, p.webauthn, p.intent, p.totp, p.otpEmail].filter((d): d is Date => d !== undefined);
  return times.length ? new Date(Math.max(...times.map((d) => d.getTime()))) : user;
}

/** RFC 8176 amr values of the factors the session proved; mfa for two or more factors or a passkey. */
export function authMethods(p: Proofs): string[] {
  const amr = new Set<string>();
  const proven = (Object.keys(FACTORS) as Factor[]).filter((f) => FACTORS[f].provenAt(p) !== undefined && !(f === "u2f" && p.webauthnUserVerified));
  for (const f of proven) for (const v of FACTORS[f].amr) amr.add(v);
  // One WebAuthn assertion is one factor whether used as a passkey or a security key; the two OTP kinds are one too.
  const kinds = new Set(proven.map((f) => (f === "passkey" || f === "u2f" ? "webauthn" : f === "totp" || f === "otpEmail" ? "otp" : f)));
  if (kinds.size >= 2 || (p.webauthn && p.webauthnUserVerified)) amr.add("mfa");
  return ORDER.filter((v) => amr.has(v));
}

const ORDER = ["pwd", "otp", "hwk", "user", "fed", "mfa"];

/** How recent a proof must be, in the presented session, for a sensitive change. */
export const RECENT_PROOF_MS = 10 * 60_000;

/** Changes that could hand the account to someone else. */
export type SensitiveChange = "bindAuthenticator" | "removeAuthenticator" | "email";

/**
 * Whether the presented session may make a sensitive change: its sign-in is complete and a first factor was proven in
 * it within RECENT_PROOF_MS; or (binding only) the sign-in is at its set-up step, MFA being forced on a user without a
 * second factor, after a recent first factor. "proveAgain": a first factor must be proven again in this session;
 * "signInFirst": the session has not satisfied what the account requires.
 */
export function sensitiveChange(state: SignInState, p: Proofs, change: SensitiveChange, now: Date): "allowed" | "proveAgain" | "signInFirst" {
  const recent = FIRST_FACTORS.some((f) => {
    const at = FACTORS[f].provenAt(p);
    return at !== undefined && now.getTime() - at.getTime() <= RECENT_PROOF_MS;
  });
  if (state.step.kind === "done") return recent ? "allowed" : "proveAgain";
  if (state.step.kind === "setUpSecondFactor" && change === "bindAuthenticator") return recent ? "allowed" : "proveAgain";
  return "signInFirst";
}
