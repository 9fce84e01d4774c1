// auth_time and amr of a session: what OIDC tokens say about how the user signed in.
import { describe, expect, it } from "@jest/globals";
import { authMethods, authTime, type LinkedSession } from "../../src/domain/sessions/link.js";

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
const session = (factors: Partial<LinkedSession["factors"]>): LinkedSession => ({
  id: "s",
  userId: "u",
  orgId: "o",
  factors: { user: at(0), webauthnUserVerified: false, ...factors },
  passwordChangeRequired: false,
  expiresAt: null,
});

describe("authTime", () => {
  it("is the latest check of a factor that authenticates, not the user check", () => {
    expect(authTime(session({ password: at(5), totp: at(9) }))).toEqual(at(9));
    expect(authTime(session({ user: at(30), password: at(5) }))).toEqual(at(5));
    expect(authTime(session({ webauthn: at(7), webauthnUserVerified: true }))).toEqual(at(7));
  });

  it("falls back to the user check for a session without factors", () => {
    expect(authTime(session({ user: at(3) }))).toEqual(at(3));
  });
});

describe("authMethods (RFC 8176)", () => {
  it("names each factor and mfa for two or more", () => {
    expect(authMethods(session({ password: at(1) }))).toEqual(["pwd"]);
    expect(authMethods(session({ password: at(1), totp: at(2) }))).toEqual(["pwd", "otp", "mfa"]);
    expect(authMethods(session({ password: at(1), otpEmail: at(2) }))).toEqual(["pwd", "otp", "mfa"]);
    expect(authMethods(session({ password: at(1), webauthn: at(2) }))).toEqual(["pwd", "hwk", "mfa"]);
  });

  it("counts a passkey that verified the user as two factors", () => {
    expect(authMethods(session({ webauthn: at(2), webauthnUserVerified: true }))).toEqual(["hwk", "user", "mfa"]);
    expect(authMethods(session({ webauthn: at(2) }))).toEqual(["hwk"]);
  });

  it("counts TOTP and e-mail codes as one kind of factor", () => {
    expect(authMethods(session({ totp: at(1), otpEmail: at(2) }))).toEqual(["otp"]);
  });
});
