// The roles of a project. Removing one takes it out of every grant that
// assigns it, under the project's roles lock (see ProjectRepo.lockRoles).

import type { Ctx } from "../context.js";
import { type ListTotal, type PageInput, page, type TextMatch } from "../list.js";
import { commit, projectEvent } from "./command.js";
import { invalidateGrantHolders } from "./grant-holders.js";
import { roleNotFound } from "./not-found.js";
import { projectAccess, targetProject } from "./project-access.js";
import { validName, validRoleKeys, validText } from "./validation.js";

export interface RoleView {
  projectId: string;
  orgId: string;
  key: string;
  displayName: string;
  group: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export async function addProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string; displayName: string; group?: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  const [key] = validRoleKeys([input.roleKey], "role_key");
  const displayName = validName(input.displayName, "display_name", "Errors.Project.Role.DisplayName");
  const group = validText(input.group, "group", "Errors.Project.Role.Group") ?? null;
  return commit(ctx, async (tx, now) => {
    await tx.projects.insertRole({ projectId: project.id, key, displayName, group, createdAt: now });
    return projectEvent(project, "project.role.added", { roleKey: key, displayName, group });
  });
}

export async function updateProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string; displayName: string; group?: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  const change: { displayName: string; group?: string | null } = {
    displayName: validName(input.displayName, "display_name", "Errors.Project.Role.DisplayName"),
  };
  if (input.group !== undefined) change.group = validText(input.group, "group", "Errors.Project.Role.Group") ?? null;
  return commit(ctx, async (tx, now) => {
    if (!(await tx.projects.updateRole(project.id, input.roleKey, change, now))) throw roleNotFound();
    return projectEvent(project, "project.role.changed", { roleKey: input.roleKey, ...change });
  });
}

/** Removes the role, and with it (same transaction) every assignment of it in user grants and project grants. */
export async function removeProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  return commit(ctx, async (tx, now) => {
    await tx.projects.lockRoles(project.id);
    if (!(await tx.projects.deleteRole(project.id, input.roleKey))) throw roleNotFound();
    await invalidateGrantHolders(tx, { projectId: project.id, roleKey: input.roleKey });
    const { userGrants, projectGrants } = await tx.projects.removeRoleFromGrants(project.id, input.roleKey, now);
    return projectEvent(project, "project.role.removed", { roleKey: input.roleKey, userGrants, projectGrants });
  });
}

export type RoleQuery = { kind: "key"; match: TextMatch } | { kind: "displayName"; match: TextMatch };

export async function listProjectRoles(
  ctx: Ctx,
  input: { projectId: string; page?: PageInput; queries: RoleQuery[] },
): Promise<ListTotal & { roles: RoleView[] }> {
  // A receiving organization sees the roles granted to it.
  const { project, grantedRoleKeys } = await projectAccess(ctx, input.projectId, "project.role.read", true);
  const { rows, ...total } = await ctx.store.projects.rolePage(project.id, grantedRoleKeys, input.queries, page(input.page));
  return { ...total, roles: rows.map((r) => ({ ...r, orgId: project.orgId })) };
}
