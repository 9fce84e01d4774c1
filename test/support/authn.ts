// Fixtures of the authentication-method tests: login clients, TOTP codes, lockout and login settings, and the
// sign-in sessions that let a login client register a factor of a user holding roles.
import { Secret, TOTP } from "otpauth";
import { newOpaqueToken, sha256 } from "../../src/crypto/tokens.js";
import { newId } from "../../src/domain/ids.js";
import { addMember, type Machine, machine } from "./fixtures.js";
import { admin, type Json } from "./rpc.js";
import type { TestServer } from "./server.js";

/** A machine user holding the instance role IAM_LOGIN_CLIENT (a login UI). */
export async function loginClient(t: TestServer, orgId: string, username: string): Promise<Machine> {
  const m = await machine(t, orgId, username);
  await admin(t, "AddInstanceMember", { userId: m.userId, roles: ["IAM_LOGIN_CLIENT"] });
  return m;
}

/** A human user holding `roles` in its own organization. */
export async function withRoles(t: TestServer, orgId: string, userId: string, roles: string[]): Promise<string> {
  await addMember(t, orgId, userId, roles);
  return userId;
}

/** The TOTP code of a base32 secret at `at` (ms), as an authenticator app shows it. */
export function totpCode(secret: string, at = Date.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp: at });
}

export async function setLockout(t: TestServer, orgId: string, maxOtpAttempts: number, maxPasswordAttempts = 10): Promise<void> {
  await admin(t, "SetLockoutSettings", { organizationId: orgId, settings: { maxPasswordAttempts, maxOtpAttempts } });
}

export async function setLogin(t: TestServer, orgId: string, settings: Json): Promise<void> {
  await admin(t, "SetLoginSettings", {
    organizationId: orgId,
    settings: { allowUsernamePassword: true, allowExternalIdp: true, passkeysAllowed: true, ...settings },
  });
}

/**
 * A session row as a login client's sign-in leaves it: the user checked with the given factors at `at`. Written
 * directly, so the registration rule is tested on exactly the factor times it reads.
 */
export async function signInSession(
  t: TestServer,
  s: { userId: string; orgId: string; creatorId: string; at: Date; factors: ("password" | "totp" | "webauthn")[] },
): Promise<void> {
  const at = (f: string) => (s.factors.includes(f as never) ? s.at : null);
  await t.server.db.prisma.session.create({
    data: {
      id: newId(),
      instanceId: t.server.instanceId,
      userId: s.userId,
      orgId: s.orgId,
      tokenHash: sha256(newOpaqueToken()),
      creatorId: s.creatorId,
      userCheckedAt: s.at,
      passwordCheckedAt: at("password"),
      totpCheckedAt: at("totp"),
      webauthnCheckedAt: at("webauthn"),
      webauthnUserVerified: s.factors.includes("webauthn"),
      createdAt: s.at,
    },
  });
}
