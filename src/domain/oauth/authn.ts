// Bearer token → principal. Shared by every adapter (Connect, REST, SCIM,
// OAuth); nothing else turns a token into an identity. PATs, opaque and JWT
// access tokens are all accepted; the management APIs (v2, SCIM) require the
// management audience (PATs always have it).
import { sha256 } from "../../crypto/tokens.js";
import type { PrismaClient } from "../../store/db.js";
import type { Principal } from "../context.js";
import { unauthenticated } from "../errors.js";
import { resolveToken, runtimeFor } from "./tokens.js";

export const MISSING_TOKEN = "Errors.Token.Missing";
export const INVALID_TOKEN = "Errors.Token.Invalid";

/** RFC 6750 §2.1: `Authorization: Bearer <b64token>`, scheme case-insensitive. */
export function bearerToken(authorization: string | null | undefined): string {
  if (!authorization) throw unauthenticated(MISSING_TOKEN, "no bearer token in the Authorization header");
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
  if (!m) throw unauthenticated(INVALID_TOKEN, "the Authorization header is not a bearer token");
  return m[1] as string;
}

// One generic answer for every failure: a caller learns nothing about why a token is refused.
const invalid = () => unauthenticated(INVALID_TOKEN, "the token is invalid, expired or revoked");

/**
 * The caller of a management API. Uses the server's token runtime (caches,
 * signing keys) when one is registered for `db`, else reads PATs directly.
 */
export async function authenticate(db: PrismaClient, instanceId: string, authorization: string | null | undefined, now: Date): Promise<Principal> {
  const token = bearerToken(authorization);
  // JWT access tokens with role claims can be a few kilobytes.
  if (token.length > 8192) throw invalid();
  const rt = runtimeFor(db);
  if (rt && rt.instanceId === instanceId) {
    const t = await resolveToken(rt, token, now);
    if (!t) throw invalid();
    // An API application's own token stands for no user: nothing on the management APIs is its to do.
    if (t.subject !== "user") throw unauthenticated(INVALID_TOKEN, "an application's own token cannot call the management API");
    if (!t.management)
      throw unauthenticated(INVALID_TOKEN, "the token's audience does not include the management API (scope urn:svc:iam:org:project:id:svc:aud)");
    return t.principal;
  }
  return authenticatePat(db, instanceId, token, now);
}

async function authenticatePat(db: PrismaClient, instanceId: string, token: string, now: Date): Promise<Principal> {
  const pat = await db.personalAccessToken.findUnique({
    where: { tokenHash: sha256(token) },
    include: {
      user: {
        select: {
          id: true,
          instanceId: true,
          orgId: true,
          type: true,
          state: true,
          org: { select: { state: true } },
          instanceMemberships: { select: { roles: true } },
          orgMemberships: { select: { orgId: true, roles: true } },
        },
      },
    },
  });
  if (!pat || pat.instanceId !== instanceId || pat.user.instanceId !== instanceId) throw invalid();
  if (pat.expiresAt && pat.expiresAt.getTime() <= now.getTime()) throw invalid();
  if (pat.user.state !== "ACTIVE" || pat.user.org.state !== "ACTIVE") throw invalid();
  return {
    userId: pat.user.id,
    instanceId,
    orgId: pat.user.orgId,
    userType: pat.user.type,
    instanceRoles: pat.user.instanceMemberships.flatMap((m) => m.roles),
    orgRoles: new Map(pat.user.orgMemberships.map((m) => [m.orgId, m.roles])),
    credentialId: pat.id,
  };
}
