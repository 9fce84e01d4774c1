// Project grants: a project shared with another organization, which may then
// assign the granted roles (and only those) to users. The owning
// organization manages a grant (project.grant.write there); both sides may
// read it (project.grant.read in either organization).
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { commit, projectEvent } from "./command.js";
import { invalidateGrantHolders } from "./grant-holders.js";
import { orgNotFound, projectGrantNotFound } from "./not-found.js";
import { listScope } from "./permissions.js";
import { checkRolesExist, targetProject } from "./project-access.js";
import type { ProjectState } from "./projects.js";
import { changeState } from "./state-change.js";
import { validRoleKeys } from "./validation.js";

export interface ProjectGrantView {
  id: string;
  projectId: string;
  projectName: string;
  projectOrgId: string;
  grantedOrgId: string;
  grantedOrgName: string;
  roleKeys: string[];
  state: ProjectState;
  createdAt: Date;
  updatedAt: Date;
}

type GrantRef = { projectId: string; grantedOrgId: string };

export async function createProjectGrant(
  ctx: Ctx,
  input: { projectId: string; grantedOrgId: string; roleKeys: readonly string[] },
): Promise<{ id: string; createdAt: Date }> {
  const project = await targetProject(ctx, input.projectId, "project.grant.write");
  if (!input.grantedOrgId) throw invalidArgument("Errors.Org.Id.Missing", "granted_organization_id is required", { field: "granted_organization_id" });
  if (input.grantedOrgId === project.orgId) {
    throw invalidArgument("Errors.Project.Grant.OwnOrg", "a project cannot be granted to its own organization", { field: "granted_organization_id" });
  }
  const roleKeys = validRoleKeys(input.roleKeys);
  if (!(await ctx.store.projects.orgExists(ctx.instanceId, input.grantedOrgId))) throw orgNotFound();
  const id = newId();
  const grantedOrgId = input.grantedOrgId;
  const createdAt = await commit(ctx, async (tx, now) => {
    await tx.projects.lockRoles(project.id);
    await checkRolesExist(tx, project.id, roleKeys);
    await tx.projects.insertGrant({ id, instanceId: ctx.instanceId, projectId: project.id, grantedOrgId, roleKeys, createdAt: now });
    return projectEvent(project, "project.grant.added", { grantId: id, grantedOrgId, roleKeys });
  });
  return { id, createdAt };
}

/** The grant of the project to the organization, for a caller holding project.grant.write in the owning organization. */
async function targetGrant(ctx: Ctx, ref: GrantRef) {
  const project = await targetProject(ctx, ref.projectId, "project.grant.write");
  const grant = await ctx.store.projects.findGrant(project.id, { grantedOrgId: ref.grantedOrgId ?? "" });
  if (!grant) throw projectGrantNotFound();
  return { project, grant };
}

/** Replaces the granted roles; roles dropped are removed from the receiving organization's user grants through this grant. */
export async function updateProjectGrant(ctx: Ctx, input: GrantRef & { roleKeys: readonly string[] }): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, input);
  const roleKeys = validRoleKeys(input.roleKeys);
  return commit(ctx, async (tx, now) => {
    await tx.projects.lockRoles(project.id);
    await checkRolesExist(tx, project.id, roleKeys);
    const current = await tx.projects.grantRoles(grant.id);
    if (!current) throw projectGrantNotFound();
    const dropped = current.filter((k) => !roleKeys.includes(k));
    await tx.projects.setGrantRoles(grant.id, roleKeys, now);
    const userGrants = await tx.projects.removeRolesFromGrantHolders(grant.id, dropped, now);
    if (userGrants > 0) await invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id });
    return projectEvent(project, "project.grant.changed", {
      grantId: grant.id,
      grantedOrgId: grant.grantedOrgId,
      roleKeys,
      removedRoleKeys: dropped,
      userGrantsChanged: userGrants,
    });
  });
}

async function setGrantState(ctx: Ctx, ref: GrantRef, state: ProjectState): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, ref);
  return changeState(ctx, state, {
    update: (tx, to, at) => tx.projects.setGrantState(grant.id, to, at),
    errors: { alreadyInactive: "Errors.Project.Grant.AlreadyInactive", notInactive: "Errors.Project.Grant.NotInactive", noun: "project grant" },
    // Roles held through the grant leave (or rejoin) the claims of tokens already issued at once.
    invalidate: (tx) => invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id }),
    event: (moved) => projectEvent(project, `project.grant.${moved}`, { grantId: grant.id, grantedOrgId: grant.grantedOrgId }),
  });
}

export const deactivateProjectGrant = (ctx: Ctx, input: GrantRef) => setGrantState(ctx, input, "INACTIVE");
export const reactivateProjectGrant = (ctx: Ctx, input: GrantRef) => setGrantState(ctx, input, "ACTIVE");

/** The receiving organization's user grants through it go by ON DELETE CASCADE. */
export async function deleteProjectGrant(ctx: Ctx, input: GrantRef): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, input);
  return commit(ctx, async (tx) => {
    const userGrants = await tx.projects.countUserGrantsThrough(grant.id);
    if (userGrants > 0) await invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id });
    if (!(await tx.projects.deleteGrant(grant.id))) throw projectGrantNotFound();
    return projectEvent(project, "project.grant.removed", { grantId: grant.id, grantedOrgId: grant.grantedOrgId, userGrants });
  });
}

export type ProjectGrantQuery = { kind: "project"; projectId: string } | { kind: "grantedOrg"; orgId: string } | { kind: "roleKey"; roleKey: string };

/** Grants of the projects of the organizations the caller reads grants in, and grants to those organizations. */
export async function listProjectGrants(
  ctx: Ctx,
  input: { page?: PageInput; queries: ProjectGrantQuery[] },
): Promise<ListTotal & { grants: ProjectGrantView[] }> {
  const p = page(input.page);
  const scope = listScope(ctx, "project.grant.read");
  const { rows, ...total } = await ctx.store.projects.grantPage({ instanceId: ctx.instanceId, scope, filters: input.queries, page: p });
  return { ...total, grants: rows };
}
