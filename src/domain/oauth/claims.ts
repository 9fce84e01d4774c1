// Claims: OpenID Connect standard claims by scope, the project role claims of
// a token's audience, and the metadata claim.
import { type ProjectRoleClaim as RoleClaim, roleClaims } from "../access/user-grants.js";
import type { UserInfoSource, UserToken } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";
import { type GrantedScopes, MANAGEMENT_AUDIENCE, ROLE_SCOPE, SCOPE_ALL_ROLES, SCOPE_METADATA } from "./scopes.js";

const PRIMARY_ROLES_CLAIM = "urn:svc:iam:org:project:roles";
const projectRolesClaim = (projectId: string) => `urn:svc:iam:org:project:${projectId}:roles`;

/** OpenID Connect standard claims by scope. */
export function userClaims(user: UserInfoSource, scopes: readonly string[]): Record<string, unknown> {
  const c: Record<string, unknown> = { sub: user.id };
  if (scopes.includes("profile")) {
    const name = user.displayName ?? ([user.givenName, user.familyName].filter(Boolean).join(" ") || undefined);
    Object.assign(c, {
      name,
      given_name: user.givenName ?? undefined,
      family_name: user.familyName ?? undefined,
      nickname: user.nickName ?? undefined,
      preferred_username: user.username,
      locale: user.preferredLanguage ?? undefined,
      updated_at: Math.floor(user.updatedAt.getTime() / 1000),
    });
  }
  if (scopes.includes("email") && user.email) Object.assign(c, { email: user.email, email_verified: user.emailVerified });
  if (scopes.includes("phone") && user.phone) Object.assign(c, { phone_number: user.phone, phone_number_verified: user.phoneVerified });
  for (const k of Object.keys(c)) if (c[k] === undefined) delete c[k];
  return c;
}

/** The role claims a token with these scopes carries. */
export async function tokenRoleClaims(
  rt: OAuthRuntime,
  userId: string,
  scopes: readonly string[],
  audience: readonly string[],
  primaryProjectId?: string,
): Promise<Record<string, unknown>> {
  const projectIds = audience.filter((a) => a !== MANAGEMENT_AUDIENCE);
  if (projectIds.length === 0) return {};
  const projects = await rt.store.tokens.projectsOf(rt.instanceId, projectIds);
  const allRoles = scopes.includes(SCOPE_ALL_ROLES);
  const roleFilter = scopes.map((s) => ROLE_SCOPE.exec(s)?.[1]).filter((k): k is string => k !== undefined);
  const asserted = projects.filter((p) => p.projectRoleAssertion || allRoles || roleFilter.length > 0).map((p) => p.id);
  if (asserted.length === 0) return {};
  const claims = await roleClaims(rt.store, rt.instanceId, userId, asserted);
  const out: Record<string, unknown> = {};
  const primary = primaryProjectId ?? projectIds.find((id) => projects.some((p) => p.id === id));
  for (const id of asserted) {
    let claim = claims.get(id) ?? {};
    if (roleFilter.length && !allRoles) claim = Object.fromEntries(Object.entries(claim).filter(([k]) => roleFilter.includes(k)));
    if (Object.keys(claim).length === 0) continue;
    out[projectRolesClaim(id)] = claim;
    if (id === primary) out[PRIMARY_ROLES_CLAIM] = claim;
  }
  return out;
}

/** tokenRoleClaims for a token about to be issued, cached per user, scopes and audience (see OAuthRuntime.roleClaims). */
export async function issuanceRoleClaims(
  rt: OAuthRuntime,
  userId: string,
  orgId: string | undefined,
  granted: GrantedScopes,
): Promise<Record<string, unknown>> {
  if (!orgId) return tokenRoleClaims(rt, userId, granted.scopes, granted.audience);
  const key = `${userId}\n${granted.scopes.join(" ")}\n${granted.audience.join(" ")}`;
  const hit = rt.roleClaims.get(key);
  if (hit) return hit;
  const generation = rt.roleClaims.generation();
  const claims = await tokenRoleClaims(rt, userId, granted.scopes, granted.audience);
  rt.roleClaims.set(key, claims, generation, { userId, orgId });
  return claims;
}

/** What the metadata claim may hold at most (keys and base64 values): it travels in every token and answer. */
export const MAX_METADATA_CLAIM_BYTES = 16 * 1024;

/**
 * The `urn:svc:iam:user:metadata` claim: the user's metadata keys with their
 * values base64-encoded (ZITADEL's shape), whole entries in key order up to
 * MAX_METADATA_CLAIM_BYTES; null when the user has none.
 */
export async function metadataClaim(rt: OAuthRuntime, userId: string): Promise<Record<string, string> | null> {
  const rows = await rt.store.tokens.metadataOf(userId);
  if (rows.length === 0) return null;
  const claim: Record<string, string> = {};
  let size = 0;
  for (const r of rows) {
    const value = Buffer.from(r.value).toString("base64");
    size += Buffer.byteLength(r.key) + value.length;
    if (size > MAX_METADATA_CLAIM_BYTES) break;
    claim[r.key] = value;
  }
  return claim;
}

/**
 * The token's role claims, kept on the cached token. `urn:svc:iam:org:project:roles`
 * is the claim of the asking project (`primary`, an introspecting API app's
 * project) or of the first project of the audience: derived per call, so that
 * the cache serves every project alike.
 */
export async function rolesOf(rt: OAuthRuntime, t: UserToken, primary?: string): Promise<Record<string, unknown>> {
  if (!t.roles) t.roles = (await tokenRoleClaims(rt, t.principal.userId, t.scopes, t.audience)) as Record<string, RoleClaim>;
  if (!primary) return t.roles;
  const { [PRIMARY_ROLES_CLAIM]: _default, ...perProject } = t.roles;
  const own = t.roles[projectRolesClaim(primary)];
  return own ? { ...perProject, [PRIMARY_ROLES_CLAIM]: own } : perProject;
}

/**
 * The metadata claim when the scope was granted: one query, kept on the cached
 * token (metadata changes invalidate the user's cached tokens).
 */
export async function metadataOf(rt: OAuthRuntime, t: UserToken): Promise<Record<string, unknown>> {
  if (!t.scopes.includes(SCOPE_METADATA)) return {};
  if (t.metadata === undefined) t.metadata = await metadataClaim(rt, t.principal.userId);
  return t.metadata ? { [SCOPE_METADATA]: t.metadata } : {};
}
