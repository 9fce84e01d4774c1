// What the caller may do, from the one role table: for UIs that hide what the API would refuse (the API still
// decides each call). ZITADEL's auth API answers the same question with ListMyZitadelPermissions.
import type { Ctx } from "../context.js";
import { INSTANCE_ROLES, ORG_ROLES, type Permission } from "./permissions.js";

export interface OrgPermissions {
  orgId: string;
  roles: string[];
  /** What the roles allow in this organization, without the instance permissions. */
  permissions: Permission[];
}

export interface MyPermissions {
  userId: string;
  /** The organization the caller belongs to. */
  orgId: string;
  instanceRoles: string[];
  /** What the instance roles allow, in every organization. */
  instancePermissions: Permission[];
  /** One entry per organization the caller holds roles in, sorted by id. */
  orgs: OrgPermissions[];
}

function granted(table: Record<string, readonly Permission[]>, roles: readonly string[]): Permission[] {
  const out = new Set<Permission>();
  for (const role of roles) for (const p of table[role] ?? []) out.add(p);
  return [...out].sort();
}

/** Any authenticated caller: its own roles only, nothing about anyone else. */
export function listMyPermissions(ctx: Ctx): MyPermissions {
  const p = ctx.principal;
  const orgs = [...p.orgRoles.entries()]
    .filter(([, roles]) => roles.length > 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([orgId, roles]) => ({ orgId, roles: [...roles].sort(), permissions: granted(ORG_ROLES, roles) }));
  return {
    userId: p.userId,
    orgId: p.orgId,
    instanceRoles: [...p.instanceRoles].sort(),
    instancePermissions: granted(INSTANCE_ROLES, p.instanceRoles),
    orgs,
  };
}
