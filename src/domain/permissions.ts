// The one place that decides access: roles map to permissions here, and
// every domain function asks authorize(), readableOrgs() or listScope().
import type { Ctx } from "./context.js";
import { permissionDenied, type SvcError } from "./errors.js";

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
  | "user.grant.write";

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
];
const ORG_READ = READ.filter((p) => !p.startsWith("iam."));
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
  "policy.write",
  "project.write",
  "project.delete",
  "project.role.write",
  "project.grant.write",
  "project.app.write",
  "user.grant.write",
];

/** Instance roles apply to every organization of the instance. */
export const INSTANCE_ROLES: Record<string, readonly Permission[]> = {
  IAM_OWNER: ALL,
  IAM_OWNER_VIEWER: READ,
};

export const ORG_ROLES: Record<string, readonly Permission[]> = {
  ORG_OWNER: ALL.filter((p) => !p.startsWith("iam.") && p !== "org.create"),
  ORG_USER_MANAGER: ["org.read", "user.read", "user.write", "user.delete", "user.credential.write", "user.grant.read", "policy.read"],
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
};

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
export function authorize(ctx: Ctx, permission: Permission, orgId: string | null, hidden?: () => SvcError): void {
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
