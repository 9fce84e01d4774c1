// The sign-in policy's table (src/domain/sessions/policy.ts) on its own: every first factor × MFA forced or not × the
// user's second factors × which second factor the session proved, the lifetimes of the login settings, and what a
// sensitive change needs (a complete sign-in with a recent first factor, or the set-up step).
import { describe, expect, it } from "@jest/globals";
import {
  type AccountFacts,
  authMethods,
  evaluate,
  FACTORS,
  type FirstFactor,
  type Proofs,
  RECENT_PROOF_MS,
  SECOND_FACTORS,
  type SecondFactor,
  sensitiveChange,
} from "../../src/domain/sessions/policy.js";
import { DEFAULT_SETTINGS, type Login } from "../../src/domain/settings/values.js";

const NOW = new Date("2026-12-02T12:00:00Z");
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const login = (o: Partial<Login> = {}): Login => ({ ...DEFAULT_SETTINGS.login, ...o });
const account = (seconds: SecondFactor[] = [], passwordChangeRequired = false): AccountFacts => ({
  ready: { totp: seconds.includes("totp"), otpEmail: seconds.includes("otpEmail"), passkeys: seconds.includes("u2f") ? 1 : 0 },
  passwordChangeRequired,
});

/** A session that proved `first` and `second` at `at`. */
function proofs(first: FirstFactor | undefined, second: SecondFactor | undefined, at = NOW): Proofs {
  const p: Proofs = { webauthnUserVerified: false };
  if (first === "password") p.password = at;
  if (first === "idp") p.intent = at;
  if (first === "passkey") {
    p.webauthn = at;
    p.webauthnUserVerified = true;
  }
  if (second === "totp") p.totp = at;
  if (second === "otpEmail") p.otpEmail = at;
  if (second === "u2f") p.webauthn = at;
  return p;
}

describe("what completes a sign-in", () => {
  const firsts: (FirstFactor | undefined)[] = [undefined, "password", "passkey", "idp"];
  const seconds: (SecondFactor | undefined)[] = [undefined, ...SECOND_FACTORS];
  const owned: SecondFactor[][] = [[], ["totp"], ["otpEmail"], ["u2f"], ["totp", "u2f"]];
  const cases = firsts.flatMap((first) =>
    seconds.flatMap((second) => owned.flatMap((own) => [false, true].map((forceMfa) => ({ first, second, own, forceMfa })))),
  );

  it.each(cases)("first %#: %j", ({ first, second, own, forceMfa }) => {
    const state = evaluate(proofs(first, second), account(own), login({ forceMfa }), NOW);
    if (!first) {
      expect(state.step).toEqual({ kind: "firstFactor", options: ["password", "passkey", "idp"] });
      return;
    }
    expect(state.first).toBe(first);
    // A passkey (user verified) is two factors by itself; otherwise MFA applies when forced or the user has a factor.
    const mfa = first !== "passkey" && (forceMfa || own.length > 0);
    expect(state.mfaRequired).toBe(mfa);
    // Any second factor proven in the session counts, also one the user is setting up now (not yet "own").
    if (!mfa || second) expect(state.step).toEqual({ kind: "done" });
    else if (own.length) expect(state.step).toEqual({ kind: "secondFactor", options: SECOND_FACTORS.filter((f) => own.includes(f)) });
    else expect(state.step).toEqual({ kind: "setUpSecondFactor", options: ["totp", "u2f"] });
  });

  it("counts only the factors the login settings allow, within their lifetimes", () => {
    const p = proofs("password", "totp");
    expect(evaluate(p, account(), login({ allowUsernamePassword: false }), NOW).step.kind).toBe("firstFactor");
    expect(evaluate(proofs("idp", undefined), account(), login({ allowExternalIdp: false }), NOW).step.kind).toBe("firstFactor");
    expect(evaluate(proofs("passkey", undefined), account(), login({ passkeysAllowed: false }), NOW).step.kind).toBe("firstFactor");
    const lifetime = login().passwordCheckLifetimeSeconds * 1000;
    expect(evaluate(proofs("password", undefined, ago(lifetime + 1)), account(), login(), NOW).step.kind).toBe("firstFactor");
    expect(evaluate(proofs("password", undefined, ago(lifetime)), account(), login(), NOW).step.kind).toBe("done");
    // A second factor the settings no longer allow neither counts nor is asked for.
    expect(evaluate(p, account(["totp"]), login({ secondFactors: ["otp_email"] }), NOW).step).toEqual({ kind: "done" });
    expect(evaluate(proofs("password", "totp"), account(["totp", "otpEmail"]), login({ secondFactors: ["otp_email"] }), NOW).step).toEqual({
      kind: "secondFactor",
      options: ["otpEmail"],
    });
    const second = login().secondFactorCheckLifetimeSeconds * 1000;
    const oldTotp = { ...proofs("password", undefined), totp: ago(second + 1) };
    expect(evaluate(oldTotp, account(["totp"]), login(), NOW).step.kind).toBe("secondFactor");
  });

  it("asks for a new password last, and only after a password", () => {
    expect(evaluate(proofs("password", undefined), account([], true), login(), NOW).step).toEqual({ kind: "changePassword" });
    expect(evaluate(proofs("password", undefined), account(["totp"], true), login(), NOW).step.kind).toBe("secondFactor");
    expect(evaluate(proofs("idp", undefined), account([], true), login(), NOW).step).toEqual({ kind: "done" });
  });

  it("names the amr of what was proven", () => {
    expect(authMethods(proofs("password", undefined))).toEqual(["pwd"]);
    expect(authMethods(proofs("password", "totp"))).toEqual(["pwd", "otp", "mfa"]);
    expect(authMethods(proofs("password", "u2f"))).toEqual(["pwd", "hwk", "mfa"]);
    expect(authMethods(proofs("passkey", undefined))).toEqual(["hwk", "user", "mfa"]);
    expect(authMethods(proofs("idp", "otpEmail"))).toEqual(["otp", "fed", "mfa"]);
    expect(authMethods({ webauthnUserVerified: false, totp: NOW, otpEmail: NOW })).toEqual(["otp"]);
  });

  it("has one catalogue entry per factor, each with its check and page", () => {
    for (const [name, f] of Object.entries(FACTORS)) {
      expect({ name, check: typeof f.check, page: f.page.startsWith("/") }).toEqual({ name, check: "string", page: true });
    }
  });
});

describe("sensitive changes", () => {
  const recent = ago(RECENT_PROOF_MS);
  const stale = ago(RECENT_PROOF_MS + 1);
  const changes = ["bindAuthenticator", "removeAuthenticator", "email"] as const;

  it.each(changes)("%s: a complete sign-in with a first factor in the last 10 minutes", (change) => {
    const check = (p: Proofs, own: SecondFactor[] = [], forceMfa = false) =>
      sensitiveChange(evaluate(p, account(own), login({ forceMfa }), NOW), p, change, NOW);
    expect(check(proofs("password", undefined, recent))).toBe("allowed");
    expect(check(proofs("passkey", undefined, recent))).toBe("allowed");
    expect(check(proofs("idp", undefined, recent))).toBe("allowed");
    expect(check(proofs("password", undefined, stale))).toBe("proveAgain");
    // A second factor alone, however recent, is no new proof of the user.
    expect(check({ ...proofs("password", undefined, stale), totp: NOW }, ["totp"])).toBe("proveAgain");
    // The account has a second factor the session did not prove: nothing, however recent the password.
    expect(check(proofs("password", undefined, recent), ["totp"])).toBe("signInFirst");
    expect(check(proofs("password", "totp", recent), ["totp"])).toBe("allowed");
    // No first factor at all.
    expect(check({ webauthnUserVerified: false, totp: NOW }, ["totp"])).toBe("signInFirst");
    // MFA forced, no second factor yet: only binding one is allowed (the set-up step), after a recent first factor.
    expect(check(proofs("password", undefined, recent), [], true)).toBe(change === "bindAuthenticator" ? "allowed" : "signInFirst");
    expect(check(proofs("password", undefined, stale), [], true)).toBe(change === "bindAuthenticator" ? "proveAgain" : "signInFirst");
  });

  it("refuses a session whose password must be changed first", () => {
    const p = proofs("password", undefined);
    expect(sensitiveChange(evaluate(p, account([], true), login(), NOW), p, "bindAuthenticator", NOW)).toBe("signInFirst");
  });
});
