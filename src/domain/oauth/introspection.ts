// RFC 7662 introspection and OIDC userinfo: what a token may tell, and to whom.
import { metadataOf, rolesOf, userClaims } from "./claims.js";
import type { ClientRecord } from "./client-auth.js";
import { invalidRequest } from "./errors.js";
import { actionUser, withActions } from "./issue.js";
import { type ResolvedToken, resolveToken, type UserToken } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";
import { MANAGEMENT_AUDIENCE, scopeValue } from "./scopes.js";

/**
 * Whether the token was issued to this client, by identity rather than by client id string: a machine
 * user's tokens (client credentials or JWT profile) are its own, an app's own tokens and the tokens of its
 * users' sign-ins are the app's.
 */
export function issuedTo(t: ResolvedToken, caller: ClientRecord): boolean {
  // A user's token from an application's sign-in (authorization code, refresh) is that application's.
  if (t.subject === "user" && t.appId !== null) return caller.kind === "app" && caller.appId === t.appId;
  if (t.subject === "user") return caller.kind === "user" && caller.userId === t.principal.userId && t.appId === null;
  return caller.kind === "app" && caller.appId !== undefined && t.appId === caller.appId;
}

/** RFC 7662: what an authenticated client may learn about a token. */
export async function introspect(rt: OAuthRuntime, caller: ClientRecord, token: string | undefined, now: Date): Promise<Record<string, unknown>> {
  // RFC 7662 §2.1: the token is required; a request without one is malformed (RFC 6749 §5.2 invalid_request).
  if (!token) throw invalidRequest("token is required");
  const t = await resolveToken(rt, token, now);
  if (!t || t.kind === "pat") return { active: false };
  // A client sees its own tokens and (an application) tokens meant for its project. Client ids are not
  // matched against the audience: a machine user's id or username is chosen by its creator and may
  // spell a project id or the management audience.
  const mine = issuedTo(t, caller) || (caller.kind === "app" && caller.projectId !== undefined && t.audience.includes(caller.projectId));
  if (!mine) return { active: false };
  // A user who lost access to a project of the token (a gate turned on, its grant removed) holds no token for it any
  // more: the gates the issuance applied, applied again.
  if (t.subject === "user" && !(await stillPassesGates(rt, t))) return { active: false };
  const common = {
    active: true,
    scope: scopeValue(t.scopes),
    client_id: t.clientId,
    token_type: "Bearer",
    exp: t.expiresAt === null ? undefined : Math.floor(t.expiresAt / 1000),
    iat: Math.floor(t.issuedAt / 1000),
    nbf: Math.floor(t.issuedAt / 1000),
  };
  // An app's own token: the app is the subject, there are no user claims.
  if (t.subject === "app") return { ...common, sub: t.clientId, aud: t.audience, iss: rt.issuer, jti: t.id };
  const [roles, metadata] = await Promise.all([rolesOf(rt, t, caller.projectId), metadataOf(rt, t)]);
  const protocol = {
    ...common,
    sub: t.principal.userId,
    aud: t.audience,
    iss: rt.issuer,
    jti: t.id,
    username: t.user.username,
    // RFC 8693 §4.1: who acts for the user, as the token itself says.
    ...(t.act ? { act: t.act } : {}),
  };
  const user = await actionUser(rt, "preuserinfo", async () => t.user);
  return { ...protocol, ...(await withActions(rt, "preuserinfo", { ...userClaims(t.user, t.scopes), ...roles, ...metadata }, protocol, user, t.clientId)) };
}

/**
 * Whether the token's user still passes the gates (authorizationRequired, projectAccessRequired) of every project the
 * token is for — its application's project and the projects of its audience — as its issuance required.
 */
export async function stillPassesGates(rt: OAuthRuntime, t: UserToken): Promise<boolean> {
  const projects = t.audience.filter((a) => a !== MANAGEMENT_AUDIENCE);
  if (!projects.length) return true;
  // Cached as the role claims are (rt.roleClaims, at most 5 s): what changes a gate's answer (a grant, a project grant,
  // a project's gate settings) invalidates the organizations concerned on every replica, so a user who loses access
  // loses it at once; the read it saves was a round trip per introspection and userinfo.
  const key = `gates\n${t.user.id}\n${projects.join(" ")}`;
  const hit = rt.roleClaims.get(key);
  if (hit) return hit.allowed === true;
  const generation = rt.roleClaims.generation();
  const gates = await rt.store.tokens.projectGates(rt.instanceId, projects, t.user);
  const allowed = gates.every((g) => g.allowed);
  rt.roleClaims.set(key, { allowed }, generation, { userId: t.user.id, orgId: t.user.orgId });
  return allowed;
}

/**
 * OIDC userinfo: needs `openid` and a user; claims by scope plus role and metadata claims. Null when the user lost
 * access to a project of the token (the token is no longer good for it: RFC 6750 invalid_token).
 */
export async function userinfo(rt: OAuthRuntime, t: UserToken): Promise<Record<string, unknown> | null> {
  if (!(await stillPassesGates(rt, t))) return null;
  const [roles, metadata] = await Promise.all([rolesOf(rt, t), metadataOf(rt, t)]);
  const user = await actionUser(rt, "preuserinfo", async () => t.user);
  return withActions(rt, "preuserinfo", { ...userClaims(t.user, t.scopes), ...roles, ...metadata }, { sub: t.principal.userId }, user, t.clientId);
}
