// User grants ("authorizations"): one user, in one organization context,
// holding roles of one project. The context is the project's owning
// organization (a direct grant) or an organization the project is granted to
// (through that project grant, with the granted roles only, managed by the
// receiving organization only). Permissions are checked in the context org.

import type { Store } from "../../store/index.js";
import type { ProjectGrantRow } from "../../store/projects.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { userNotFound } from "../identity/users.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { commit, userGrantEvent } from "./command.js";
import { projectGrantNotFound, projectNotFound, projectNotGranted, userGrantNotFound } from "./not-found.js";
import { authorize, authorizeUserGrantWrite, holds, listScope } from "./permissions.js";
import { checkRolesExist, findProject, seesProject } from "./project-access.js";
import type { ProjectState, ProjectView } from "./projects.js";
import { changeState } from "./state-change.js";
import { validRoleKeys } from "./validation.js";

// The token service reads role claims here.
export { type ProjectRoleClaim, roleClaims } from "./role-claims.js";

export interface UserGrantView {
  id: string;
  userId: string;
  orgId: string;
  projectId: string;
  projectGrantId: string | null;
  roleKeys: string[];
  state: ProjectState;
  createdAt: Date;
  updatedAt: Date;
}

type GrantRef = { grantId: string; userId?: string };

/** Through a project grant: every role must be among the granted ones (read in the transaction, under the roles lock). */
async function checkGranted(tx: Store, projectGrantId: string, roleKeys: readonly string[]): Promise<void> {
  const granted = await tx.projects.grantRoles(projectGrantId);
  if (!granted) throw projectGrantNotFound();
  const missing = roleKeys.filter((k) => !granted.includes(k));
  if (missing.length) {
    throw invalidArgument("Errors.UserGrant.RoleNotGranted", `roles not granted to the organization: ${missing.join(", ")}`, {
      field: "role_keys",
      roleKeys: missing.join(","),
    });
  }
}

export interface AddUserGrantInput {
  userId: string;
  projectId: string;
  orgId?: string;
  projectGrantId?: string;
  roleKeys: readonly string[];
}

/**
 * The project grant a new user grant goes through (null for a direct grant): the one named, or the project's grant
 * to the organization named when that is not the owner.
 */
async function grantThrough(ctx: Ctx, project: ProjectView, input: AddUserGrantInput): Promise<ProjectGrantRow | null> {
  if (input.projectGrantId) {
    // Answers about the project's grants are for those who can see the project: to anyone else it does not exist.
    if (!(await seesProject(ctx, project))) throw projectNotFound();
    const grant = await ctx.store.projects.findGrant(project.id, { id: input.projectGrantId });
    if (!grant) throw projectGrantNotFound();
    if (input.orgId && input.orgId !== grant.grantedOrgId) {
      throw invalidArgument("Errors.UserGrant.OrgMismatch", "organization_id must be the organization the project grant is for", { field: "organization_id" });
    }
    return grant;
  }
  if (!input.orgId || input.orgId === project.orgId) return null;
  const grant = await ctx.store.projects.findGrant(project.id, { grantedOrgId: input.orgId });
  if (!grant) {
    authorize(ctx, "user.grant.write", input.orgId, projectNotFound);
    throw projectNotGranted();
  }
  return grant;
}

export async function addUserGrant(ctx: Ctx, input: AddUserGrantInput): Promise<{ id: string; createdAt: Date }> {
  if (!input.projectId) throw invalidArgument("Errors.Project.Id.Missing", "project_id is required", { field: "project_id" });
  if (!input.userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const project = await findProject(ctx, input.projectId);
  const grant = await grantThrough(ctx, project, input);
  const orgId = grant ? grant.grantedOrgId : project.orgId;
  authorizeUserGrantWrite(ctx, orgId, grant ? project.orgId : undefined, projectNotFound);
  if (grant && grant.state !== "ACTIVE") throw failedPrecondition("Errors.Project.Grant.Inactive", "the project grant is deactivated");
  // A user of another organization is granted roles only by callers who can see it: to anyone else it does not
  // exist, exactly as an unknown id (no answer tells which ids are users elsewhere).
  const userOrgId = await ctx.store.grants.userOrg(ctx.instanceId, input.userId);
  if (userOrgId === null || (userOrgId !== orgId && !holds(ctx, "user.read", userOrgId))) throw userNotFound();
  const roleKeys = validRoleKeys(input.roleKeys);
  const id = newId();
  const userGrant = { id, userId: input.userId, orgId, projectId: project.id, projectGrantId: grant?.id ?? null, roleKeys };
  const createdAt = await commit(ctx, async (tx, now) => {
    await tx.projects.lockRoles(project.id);
    await checkRolesExist(tx, project.id, roleKeys);
    if (grant) await checkGranted(tx, grant.id, roleKeys);
    await tx.auth.invalidate({ userId: userGrant.userId });
    await tx.grants.insert({ ...userGrant, instanceId: ctx.instanceId, createdAt: now });
    return userGrantEvent(userGrant, "user.grant.added", { userId: userGrant.userId, projectId: project.id, projectGrantId: grant?.id, roleKeys });
  });
  return { id, createdAt };
}

/** The grant, for a caller holding user.grant.write in the organization it is held in; with `userId`, only the user's. */
async function targetUserGrant(ctx: Ctx, ref: GrantRef) {
  if (!ref.grantId) throw invalidArgument("Errors.UserGrant.Id.Missing", "grant_id is required", { field: "grant_id" });
  const grant = await ctx.store.grants.find(ctx.instanceId, ref.grantId);
  if (!grant || (ref.userId && ref.userId !== grant.userId)) throw userGrantNotFound();
  authorize(ctx, "user.grant.write", grant.orgId, userGrantNotFound);
  return grant;
}

/** Replaces the role set. */
export async function updateUserGrant(ctx: Ctx, input: GrantRef & { roleKeys: readonly string[] }): Promise<Date> {
  const grant = await targetUserGrant(ctx, input);
  const roleKeys = validRoleKeys(input.roleKeys);
  return commit(ctx, async (tx, now) => {
    await tx.projects.lockRoles(grant.projectId);
    // The roles it has now, read under the grant's row lock: a concurrent update (another replica's) has committed or
    // waits, so the event names the step before this one.
    const previousRoleKeys = await tx.grants.lockForUpdate(grant.id);
    if (previousRoleKeys === null) throw userGrantNotFound();
    await checkRolesExist(tx, grant.projectId, roleKeys);
    if (grant.projectGrantId) await checkGranted(tx, grant.projectGrantId, roleKeys);
    if (!(await tx.grants.setRoles(grant.id, roleKeys, now))) throw userGrantNotFound();
    await tx.auth.invalidate({ userId: grant.userId });
    return userGrantEvent(grant, "user.grant.changed", { userId: grant.userId, projectId: grant.projectId, roleKeys, previousRoleKeys });
  });
}

export async function removeUserGrant(ctx: Ctx, input: GrantRef): Promise<Date> {
  const grant = await targetUserGrant(ctx, input);
  return commit(ctx, async (tx) => {
    if (!(await tx.grants.delete(grant.id))) throw userGrantNotFound();
    await tx.auth.invalidate({ userId: grant.userId });
    return userGrantEvent(grant, "user.grant.removed", { userId: grant.userId, projectId: grant.projectId });
  });
}

async function setUserGrantState(ctx: Ctx, input: GrantRef, state: ProjectState): Promise<Date> {
  const grant = await targetUserGrant(ctx, input);
  return changeState(ctx, state, {
    update: (tx, to, at) => tx.grants.setState(grant.id, to, at),
    async checkExists(tx) {
      if (!(await tx.grants.exists(grant.id))) throw userGrantNotFound();
    },
    errors: { alreadyInactive: "Errors.UserGrant.AlreadyInactive", notInactive: "Errors.UserGrant.NotInactive", noun: "user grant" },
    // The grant's roles leave (or rejoin) the role claims of tokens already issued at once.
    invalidate: (tx) => tx.auth.invalidate({ userId: grant.userId }),
    event: (moved) => userGrantEvent(grant, `user.grant.${moved}`, { userId: grant.userId, projectId: grant.projectId }),
  });
}

/** Keeps the grant but takes its roles out of the user's claims until reactivated. */
export const deactivateUserGrant = (ctx: Ctx, input: GrantRef) => setUserGrantState(ctx, input, "INACTIVE");
export const reactivateUserGrant = (ctx: Ctx, input: GrantRef) => setUserGrantState(ctx, input, "ACTIVE");

export type UserGrantQuery =
  | { kind: "userId"; userId: string }
  | { kind: "projectId"; projectId: string }
  | { kind: "orgId"; orgId: string }
  | { kind: "roleKey"; roleKey: string }
  | { kind: "projectGrantId"; projectGrantId: string }
  | { kind: "state"; state: ProjectState };

/** Grants whose organization context the caller may read (user.grant.read there). */
export async function listUserGrants(ctx: Ctx, input: { page?: PageInput; queries: UserGrantQuery[] }): Promise<ListTotal & { grants: UserGrantView[] }> {
  const p = page(input.page);
  const scope = listScope(ctx, "user.grant.read");
  const { rows, ...total } = await ctx.store.grants.page({ instanceId: ctx.instanceId, scope, filters: input.queries, page: p });
  return { ...total, grants: rows };
}
