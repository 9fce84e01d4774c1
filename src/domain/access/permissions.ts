// The one place that decides access: roles map to permissions here, and
// every domain function asks authorize(), readableOrgs() or listScope().
import type { Ctx } from "../context.js";
import { DomainError, permissionDenied } from "../errors.js";

export type Permission =
  | "iam.read"
  | "iam.write"
  | "iam.member.read"
  | "iam.member.write"
  | "org.read"
  | "org.write"
  | "org.create"
  | "org.delete"
  | "org.member.read"
  | "org.member.write"
  | "user.read"
  | "user.write"
  | "user.delete"
  | "user.credential.write"
  // Authentication methods: registering and removing TOTP, passkeys and e-mail OTP, password reset and e-mail codes.
  | "user.authn.write"
  /** Self-registration: creating a human user as user-register.ts allows (login clients). */
  | "user.register"
  | "session.read"
  | "session.write"
  | "session.delete"
  // Finishing an OIDC auth request or a SAML request with a session (login UIs).
  | "session.link"
  | "policy.read"
  | "policy.write"
  | "events.read"
  | "project.read"
  | "project.write"
  | "project.delete"
  | "project.role.read"
  | "project.role.write"
  | "project.grant.read"
  | "project.grant.write"
  | "project.app.read"
  | "project.app.write"
  | "user.grant.read"
  | "user.grant.write"
  // External identity providers: instance-wide ones instance-wide, an organization's own in it.
  | "idp.read"
  | "idp.write"
  // Actions (targets and executions): the instance's alone.
  | "iam.action.read"
  | "iam.action.write"
  // An organization's own action targets, the executions of its events and their deliveries.
  | "action.read"
  | "action.write"
  // RFC 8693 token exchange: a machine user trading a user's token for another (impersonation, delegation).
  | "oauth.token_exchange";

const READ: Permission[] = [
  "iam.read",
  "iam.member.read",
  "org.read",
  "org.member.read",
  "user.read",
  "policy.read",
  "events.read",
  "project.read",
  "project.role.read",
  "project.grant.read",
  "project.app.read",
  "user.grant.read",
  "idp.read",
  "iam.action.read",
  "action.read",
];
const ORG_READ = READ.filter((p) => !p.startsWith("iam.") && !p.startsWith("session."));
const ALL: Permission[] = [
  ...READ,
  "iam.write",
  "iam.member.write",
  "org.write",
  "org.create",
  "org.delete",
  "org.member.write",
  "user.write",
  "user.delete",
  "user.credential.write",
  "user.authn.write",
  "session.read",
  "session.delete",
  "policy.write",
  "project.write",
  "project.delete",
  "project.role.write",
  "project.grant.write",
  "project.app.write",
  "user.grant.write",
  "idp.write",
  "iam.action.write",
  "action.write",
];

/** Instance roles apply to every organization of the instance. */
export const INSTANCE_ROLES: Record<string, readonly Permission[]> = {
  IAM_OWNER: ALL,
  IAM_OWNER_VIEWER: READ,
  // Login UIs (the hosted one and customers' own): sessions and their checks, finishing auth requests, reading what
  // a login page shows, and the users' authentication methods. Not an administrator: it changes no user's state,
  // credentials for machines, organization or setting. Creating sessions is this role's alone (not IAM_OWNER's).
  IAM_LOGIN_CLIENT: [
    "iam.read",
    "org.read",
    "user.read",
    "policy.read",
    "project.read",
    "project.app.read",
    "user.authn.write",
    "user.register",
    "session.read",
    "session.write",
    "session.delete",
    "session.link",
    // The providers to offer as buttons.
    "idp.read",
  ],
  // Token exchange for any user of the instance (ZITADEL's IAM_END_USER_IMPERSONATOR): never part of IAM_OWNER.
  IAM_TOKEN_EXCHANGER: ["oauth.token_exchange"],
};

export const ORG_ROLES: Record<string, readonly Permission[]> = {
  ORG_OWNER: ALL.filter((p) => !p.startsWith("iam.") && !p.startsWith("session.") && p !== "org.create"),
  ORG_USER_MANAGER: ["org.read", "user.read", "user.write", "user.delete", "user.credential.write", "user.authn.write", "user.grant.read", "policy.read"],
  ORG_PROJECT_PERMISSION_MANAGER: [
    "org.read",
    "project.read",
    "project.role.read",
    "project.grant.read",
    "project.grant.write",
    "user.read",
    "user.grant.read",
    "user.grant.write",
  ],
  ORG_AUDITOR: ORG_READ,
  // Token exchange for the organization's own users (ZITADEL's ORG_END_USER_IMPERSONATOR).
  ORG_TOKEN_EXCHANGER: ["oauth.token_exchange"],
};

/** Whether roles held instance-wide and in one organization grant `permission` there (callers without a Ctx). */
export function rolesHold(held: { instance: readonly string[]; org: readonly string[] }, permission: Permission): boolean {
  return rolesGrant(INSTANCE_ROLES, held.instance, permission) || rolesGrant(ORG_ROLES, held.org, permission);
}

function rolesGrant(table: Record<string, readonly Permission[]>, roles: readonly string[], permission: Permission): boolean {
  return roles.some((r) => table[r]?.includes(permission));
}

export function hasInstancePermission(ctx: Ctx, permission: Permission): boolean {
  return rolesGrant(INSTANCE_ROLES, ctx.principal.instanceRoles, permission);
}

/**
 * Allows the call or throws. A caller with no membership in the target
 * organization gets `hidden()` (a NotFound of the resource) so ids cannot be
 * probed; a member lacking the permission gets PermissionDenied.
 */
export function authorize(ctx: Ctx, permission: Permission, orgId: string | null, hidden?: () => DomainError): void {
  if (hasInstancePermission(ctx, permission)) return;
  if (orgId !== null) {
    const roles = ctx.principal.orgRoles.get(orgId);
    if (roles && rolesGrant(ORG_ROLES, roles, permission)) return;
    if (!roles && !ctx.principal.instanceRoles.length && hidden) throw hidden();
  }
  throw permissionDenied("Errors.Permission.Denied", `missing permission ${permission}`);
}

/** Organizations in which the caller holds `permission`: "all" or a list (possibly empty). */
export function readableOrgs(ctx: Ctx, permission: Permission): "all" | string[] {
  if (hasInstancePermission(ctx, permission)) return "all";
  const orgs: string[] = [];
  for (const [orgId, roles] of ctx.principal.orgRoles) if (rolesGrant(ORG_ROLES, roles, permission)) orgs.push(orgId);
  return orgs;
}

/**
 * What a list call may show: undefined for every organization, else the ids
 * of those where the caller holds `permission`. A caller holding it nowhere
 * gets PermissionDenied rather than an always-empty list.
 */
export function listScope(ctx: Ctx, permission: Permission): string[] | undefined {
  const orgs = readableOrgs(ctx, permission);
  if (orgs === "all") return undefined;
  if (orgs.length === 0) throw permissionDenied("Errors.Permission.Denied", `missing permission ${permission}`);
  return orgs;
}

/** Whether the caller holds `permission` in `orgId` (or instance-wide), without failing. */
export function holds(ctx: Ctx, permission: Permission, orgId: string): boolean {
  try {
    authorize(ctx, permission, orgId);
    return true;
  } catch (err) {
    if (err instanceof DomainError) return false;
    throw err;
  }
}

/**
 * A project is seen by its owning organization and by the organizations it is
 * granted to (they read it, and the roles granted to them). Undefined when
 * the owning organization decides alone: the caller is a member there, or
 * holds `permission` instance-wide (without `permission`: is an instance
 * member). Otherwise the caller's organizations (holding `permission` there,
 * when given) whose grant of the project would show it to the caller.
 */
export function projectGrantees(ctx: Ctx, ownerOrgId: string, permission?: Permission): string[] | undefined {
  const p = ctx.principal;
  if (p.orgRoles.has(ownerOrgId)) return undefined;
  if (permission === undefined) return p.instanceRoles.length ? undefined : [...p.orgRoles.keys()];
  const orgs = readableOrgs(ctx, permission);
  return orgs === "all" ? undefined : orgs;
}

/**
 * Assigning a project's roles to users in `orgId`'s name: user.grant.write
 * there. Through a project grant (`orgId` the receiving organization) that
 * is the receiving organization's alone; the owning organization is told so.
 */
export function authorizeUserGrantWrite(ctx: Ctx, orgId: string, throughGrantOf: string | undefined, hidden: () => DomainError): void {
  if (throughGrantOf !== undefined && !holds(ctx, "user.grant.write", orgId) && holds(ctx, "user.grant.write", throughGrantOf)) {
    throw permissionDenied("Errors.UserGrant.ReceivingOrgOnly", "roles of a granted project are assigned by the receiving organization only");
  }
  authorize(ctx, "user.grant.write", orgId, hidden);
}

/**
 * Changing an account in any way its holder would not (its state, deletion,
 * credentials added or removed, password, e-mail, phone, profile, metadata)
 * is only for callers who could grant that account's roles themselves:
 * instance roles need iam.member.write, roles in the user's own organization
 * need org.member.write there. Otherwise an ORG_USER_MANAGER could lock out
 * or take over its ORG_OWNER, or an ORG_OWNER an IAM_OWNER whose account
 * lives in its organization. Roles the user holds in other organizations do
 * not count: the organization that owns a user manages it (those
 * organizations took the user as a member with its consent, see
 * orgs/members.ts). Run after the caller's permission on the user itself has
 * been checked; acting on oneself is never limited by it.
 */
export async function authorizeOverRoles(ctx: Ctx, user: { id: string; orgId: string }): Promise<void> {
  if (user.id === ctx.principal.userId || hasInstancePermission(ctx, "iam.member.write")) return;
  const { instance, orgs } = await ctx.store.grants.heldRoles(ctx.instanceId, user.id, user.orgId);
  const denied = () => permissionDenied("Errors.User.MorePrivileged", "the user holds roles the caller cannot grant");
  if (instance?.roles.length) throw denied();
  for (const m of orgs) if (m.orgId === user.orgId && m.roles.length && !holds(ctx, "org.member.write", m.orgId)) throw denied();
}

/**
 * Whether the caller can see organization `orgId` at all: its own users, its members, and instance members who read
 * organizations. What every user may read about its organization (the password rules before choosing a password)
 * needs this and no permission.
 */
export function canSeeOrganization(ctx: Ctx, orgId: string): boolean {
  const p = ctx.principal;
  return p.orgId === orgId || p.orgRoles.has(orgId) || hasInstancePermission(ctx, "org.read");
}

/**
 * Whether the caller holds any role in the organization or any instance role: for requests whose operations each
 * check their own permission (SCIM Bulk), so that a caller with neither learns nothing about the organization.
 */
export function hasAnyRoleFor(ctx: Ctx, orgId: string): boolean {
  return ctx.principal.orgRoles.has(orgId) || ctx.principal.instanceRoles.length > 0;
}
