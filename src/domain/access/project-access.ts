// Reaching a project: loading it and checking the caller's permission on it,
// for every command on the project, its roles, grants and applications; and
// the check that role keys name roles of the project.

import type { Store } from "../../store/index.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { projectNotFound } from "./not-found.js";
import { authorize, type Permission, projectGrantees } from "./permissions.js";
import type { ProjectView } from "./projects.js";

/**
 * The project, for a caller holding `permission` in its owning organization;
 * NotFound for callers with no membership there. With `grantedRead`, holding
 * it in an organization the project is granted to is enough too.
 */
export async function targetProject(ctx: Ctx, projectId: string, permission: Permission, opts: { grantedRead?: boolean } = {}): Promise<ProjectView> {
  return (await projectAccess(ctx, projectId, permission, opts.grantedRead ?? false)).project;
}

/** As targetProject; `grantedRoleKeys` is set when access comes through project grants only (the roles they grant). */
export async function projectAccess(
  ctx: Ctx,
  projectId: string,
  permission: Permission,
  grantedRead: boolean,
): Promise<{ project: ProjectView; grantedRoleKeys?: string[] }> {
  const project = await findProject(ctx, projectId);
  const grantees = grantedRead ? projectGrantees(ctx, project.orgId, permission) : undefined;
  if (grantees?.length) {
    const granted = await ctx.store.projects.grantedRoleKeys(project.id, grantees);
    if (granted.length) return { project, grantedRoleKeys: [...new Set(granted.flat())] };
  }
  authorize(ctx, permission, project.orgId, projectNotFound);
  return { project };
}

/** The project, without any check of the caller's permission: for commands that check it in another organization. */
export async function findProject(ctx: Ctx, projectId: string): Promise<ProjectView> {
  if (!projectId) throw invalidArgument("Errors.Project.Id.Missing", "project_id is required", { field: "project_id" });
  const project = await ctx.store.projects.find(ctx.instanceId, projectId);
  if (!project) throw projectNotFound();
  return project;
}

/** Whether the caller sees the project: as a member of its owning organization, or of one it is granted to, or of the instance. */
export async function seesProject(ctx: Ctx, project: { id: string; orgId: string }): Promise<boolean> {
  const grantees = projectGrantees(ctx, project.orgId);
  if (grantees === undefined) return true;
  return grantees.length > 0 && (await ctx.store.projects.grantedRoleKeys(project.id, grantees)).length > 0;
}

/** InvalidArgument unless every key is a role of the project (run under the project's roles lock). */
export async function checkRolesExist(tx: Store, projectId: string, keys: readonly string[]): Promise<void> {
  const missing = await tx.projects.missingRoles(projectId, keys);
  if (missing.length) {
    throw invalidArgument("Errors.Project.Role.Unknown", `not roles of the project: ${missing.join(", ")}`, {
      field: "role_keys",
      roleKeys: missing.join(","),
    });
  }
}
