// The one bearer-token resolution path: any token (PAT, opaque or JWT access
// token) → what it stands for, cached. Management-API authentication,
// introspection, revocation and userinfo all come through here.
import type { StoredPatRow, StoredTokenRow, TokenActor, TokenUserRow } from "../../store/tokens.js";
import type { ProjectRoleClaim as RoleClaim } from "../access/user-grants.js";
import type { Principal } from "../context.js";
import { findClient, usable } from "./client-auth.js";
import type { OAuthRuntime } from "./runtime.js";
import { MANAGEMENT_AUDIENCE, SCOPE_MANAGEMENT } from "./scopes.js";
import { formatOf } from "./token-formats.js";

/** JWT access tokens with role claims can be a few kilobytes. */
export const MAX_TOKEN_BYTES = 8 * 1024;

export interface UserInfoSource {
  id: string;
  orgId: string;
  username: string;
  givenName: string | null;
  familyName: string | null;
  nickName: string | null;
  displayName: string | null;
  preferredLanguage: string | null;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
  updatedAt: Date;
}

interface TokenBase {
  kind: "pat" | "opaque" | "jwt";
  id: string;
  clientId: string;
  appId: string | null;
  scopes: string[];
  audience: string[];
  /** ms since epoch; null for a PAT without expiry. */
  expiresAt: number | null;
  issuedAt: number;
  management: boolean;
}

/** A token standing for a user (PATs, machine users' grants). */
export interface UserToken extends TokenBase {
  subject: "user";
  principal: Principal;
  user: UserInfoSource;
  /** Filled lazily for userinfo/introspection. */
  roles?: Record<string, RoleClaim>;
  /** Filled lazily when the metadata scope was granted; null when the user has none. */
  metadata?: Record<string, string> | null;
  /** RFC 8693 §4.1: who acts for the user (a token exchange's delegation), nested to the earliest actor. */
  act?: TokenActor;
}

/**
 * An API application's own token (client_credentials): no user behind it, so
 * no principal. Never carries the management audience; valid while the app,
 * its project and its organization are active.
 */
export interface AppToken extends TokenBase {
  subject: "app";
  orgId: string;
  projectId: string;
}

export type ResolvedToken = UserToken | AppToken;

function principalOf(u: TokenUserRow, instanceId: string, credentialId: string, sessionId?: string | null): Principal {
  return {
    ...(sessionId ? { sessionId } : {}),
    userId: u.id,
    instanceId,
    orgId: u.orgId,
    userType: u.type,
    instanceRoles: u.instanceMemberships.flatMap((m) => m.roles),
    orgRoles: new Map(u.orgMemberships.map((m) => [m.orgId, m.roles])),
    credentialId,
  };
}

const expired = (t: ResolvedToken, nowMs: number) => t.expiresAt !== null && t.expiresAt <= nowMs;

/**
 * Any bearer token (PAT, opaque or JWT access token) → what it stands for, or
 * undefined when it is unknown, expired, revoked, or its user/org is not active.
 */
export async function resolveToken(rt: OAuthRuntime, token: string, now: Date): Promise<ResolvedToken | undefined> {
  if (token.length > MAX_TOKEN_BYTES) return undefined;
  const nowMs = now.getTime();
  const presented = await formatOf(token).identify(rt, token, now);
  if (!presented) return undefined;
  // Concurrent requests with one token (a login UI's or a service's) share one read when its entry has expired.
  const resolved = await rt.tokens.load(presented.key, async () => {
    const { pat, oauth } = await presented.lookup(rt.store);
    const found = pat && patUsable(rt, pat) ? fromPat(rt, pat) : oauth ? await fromOAuthRow(rt, oauth) : undefined;
    if (!found) return undefined;
    // App tokens are tagged with their org: every change to an app, its project or its org invalidates by org.
    return { value: found, tags: found.subject === "user" ? { userId: found.principal.userId, orgId: found.principal.orgId } : { orgId: found.orgId } };
  });
  return resolved && !expired(resolved, nowMs) ? resolved : undefined;
}

const patUsable = (rt: OAuthRuntime, pat: StoredPatRow) => pat.instanceId === rt.instanceId && pat.user.instanceId === rt.instanceId && usable(pat.user);

function fromPat(rt: OAuthRuntime, pat: StoredPatRow): UserToken {
  return {
    subject: "user",
    kind: "pat",
    id: pat.id,
    clientId: pat.user.id,
    appId: null,
    scopes: ["openid", SCOPE_MANAGEMENT],
    audience: [MANAGEMENT_AUDIENCE],
    expiresAt: pat.expiresAt?.getTime() ?? null,
    issuedAt: pat.createdAt.getTime(),
    management: true,
    principal: principalOf(pat.user, rt.instanceId, pat.id),
    user: pat.user,
  };
}

async function fromOAuthRow(rt: OAuthRuntime, row: StoredTokenRow): Promise<ResolvedToken | undefined> {
  if (row.instanceId !== rt.instanceId || row.revokedAt) return undefined;
  const base = {
    kind: row.format as "opaque" | "jwt",
    id: row.id,
    clientId: row.clientId,
    appId: row.appId,
    scopes: row.scopes,
    audience: row.audience,
    expiresAt: row.expiresAt.getTime(),
    issuedAt: row.createdAt.getTime(),
  };
  if (row.user) {
    if (row.user.instanceId !== rt.instanceId || !usable(row.user)) return undefined;
    return {
      ...base,
      subject: "user",
      management: row.audience.includes(MANAGEMENT_AUDIENCE) && row.scopes.includes(SCOPE_MANAGEMENT),
      principal: principalOf(row.user, rt.instanceId, row.id, row.sessionId),
      user: row.user,
      ...(row.act ? { act: row.act as unknown as TokenActor } : {}),
    };
  }
  if (!row.appId) return undefined;
  // An API application's own token lives exactly as long as the client may authenticate: deactivating
  // or deleting the app, its project or its org ends it at once (the client record is read fresh, or
  // from the client cache that those changes invalidate by org). Regenerating the secret or removing
  // a key does not: as in Keycloak, Okta or Auth0, a credential rotation leaves issued tokens alone
  // (RFC 6749 ties a token to its grant, not to the credential used), so rotating never causes an outage;
  // a token known to be leaked is revoked (RFC 7009) or the app deactivated.
  const app = await findClient(rt, row.clientId);
  if (app?.kind !== "app" || app.appId !== row.appId || app.appType !== "API" || !app.active || !app.projectId) return undefined;
  return { ...base, subject: "app", management: false, orgId: app.orgId, projectId: app.projectId };
}
