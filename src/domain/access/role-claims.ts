// The role claims tokens carry: what a user's grants give, per project.

import type { Store } from "../../store/index.js";

/** Role key → organization id → organization name, as in the role claim. */
export type ProjectRoleClaim = Record<string, Record<string, string>>;

/**
 * The role claims of a user, per project: from the user's active grants on
 * active projects in active organizations (a grant through a project grant
 * counts only while that grant is active, and only with roles it still
 * grants), in one query. A project the user holds a grant on with
 * no roles maps to an empty object. For the token service: no authorization
 * check here, the caller decides what to put in a token.
 */
export async function roleClaims(store: Store, instanceId: string, userId: string, projectIds?: string[]): Promise<Map<string, ProjectRoleClaim>> {
  const out = new Map<string, ProjectRoleClaim>();
  if (projectIds && projectIds.length === 0) return out;
  for (const row of await store.grants.roleClaimRows(instanceId, userId, projectIds)) {
    let claim = out.get(row.projectId);
    if (!claim) {
      claim = {};
      out.set(row.projectId, claim);
    }
    // The writes keep user grants within their project grant; this guards the claim regardless.
    const granted = row.grantedRoleKeys ? new Set(row.grantedRoleKeys) : undefined;
    for (const key of row.roleKeys) {
      if (granted && !granted.has(key)) continue;
      claim[key] ??= {};
      claim[key][row.orgId] = row.orgName;
    }
  }
  return out;
}
