// Projects of an organization. A project is readable by its owning
// organization and by the organizations it is granted to (as in ZITADEL,
// granted projects show up in the receiving organization's list); every
// change needs the permission in the owning organization.

import type { ProjectChange } from "../../store/projects.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page, type TextMatch } from "../list.js";
import { commit, projectEvent } from "./command.js";
import { invalidateGrantHolders } from "./grant-holders.js";
import { orgNotFound } from "./not-found.js";
import { authorize, listScope } from "./permissions.js";
import { targetProject } from "./project-access.js";
import { changeState } from "./state-change.js";
import { validName } from "./validation.js";

// The roles of a project: the API's project service reaches them here.
export {
  addProjectRole,
  listProjectRoles,
  type RoleQuery,
  type RoleView,
  removeProjectRole,
  updateProjectRole,
} from "./project-roles.js";

export type ProjectState = "ACTIVE" | "INACTIVE";

export interface ProjectView {
  id: string;
  orgId: string;
  name: string;
  state: ProjectState;
  projectRoleAssertion: boolean;
  authorizationRequired: boolean;
  projectAccessRequired: boolean;
  createdAt: Date;
  updatedAt: Date;
}

const SETTINGS = ["projectRoleAssertion", "authorizationRequired", "projectAccessRequired"] as const;

export async function createProject(
  ctx: Ctx,
  input: { orgId: string; name: string; projectRoleAssertion?: boolean; authorizationRequired?: boolean; projectAccessRequired?: boolean },
): Promise<{ id: string; createdAt: Date }> {
  if (!input.orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  if (!(await ctx.store.projects.orgExists(ctx.instanceId, input.orgId))) throw orgNotFound();
  authorize(ctx, "project.write", input.orgId, orgNotFound);
  const name = validName(input.name, "name", "Errors.Project.Name");
  const id = newId();
  const settings = {
    projectRoleAssertion: input.projectRoleAssertion ?? false,
    authorizationRequired: input.authorizationRequired ?? false,
    projectAccessRequired: input.projectAccessRequired ?? false,
  };
  const project = { id, orgId: input.orgId };
  const createdAt = await commit(ctx, async (tx, now) => {
    await tx.projects.insert({ id, instanceId: ctx.instanceId, orgId: project.orgId, name, ...settings, createdAt: now });
    return projectEvent(project, "project.added", { name, ...settings });
  });
  return { id, createdAt };
}

export async function getProject(ctx: Ctx, projectId: string): Promise<ProjectView> {
  return targetProject(ctx, projectId, "project.read", { grantedRead: true });
}

export type ProjectQuery =
  | { kind: "name"; match: TextMatch }
  | { kind: "ids"; ids: string[] }
  | { kind: "org"; orgId: string }
  | { kind: "grantedOrg"; orgId: string };

/** Projects of the organizations the caller reads projects in, and projects granted to them. */
export async function listProjects(
  ctx: Ctx,
  input: { page?: PageInput; sort?: "name" | "createdAt"; queries: ProjectQuery[] },
): Promise<ListTotal & { projects: ProjectView[] }> {
  const p = page(input.page);
  const scope = listScope(ctx, "project.read");
  for (const q of input.queries) {
    if (q.kind === "ids" && q.ids.length > 1000) throw invalidArgument("Errors.Query.Ids.TooMany", "at most 1000 ids");
  }
  const { rows, ...total } = await ctx.store.projects.page({
    instanceId: ctx.instanceId,
    scope,
    filters: input.queries,
    sort: input.sort ?? "createdAt",
    page: p,
  });
  return { ...total, projects: rows };
}

export async function updateProject(
  ctx: Ctx,
  input: { projectId: string; name?: string; projectRoleAssertion?: boolean; authorizationRequired?: boolean; projectAccessRequired?: boolean },
): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.write");
  const name = input.name === undefined ? undefined : validName(input.name, "name", "Errors.Project.Name");
  const change: ProjectChange = {};
  if (name !== undefined && name !== project.name) change.name = name;
  for (const k of SETTINGS) {
    if (input[k] !== undefined && input[k] !== project[k]) change[k] = input[k];
  }
  if (Object.keys(change).length === 0) return ctx.clock();
  return commit(ctx, async (tx, now) => {
    await tx.projects.update(project.id, change, now);
    // Whether the project's roles are asserted decides the role claims of the tokens for it.
    if (change.projectRoleAssertion !== undefined) await invalidateGrantHolders(tx, { projectId: project.id });
    // Its applications' cached client records carry whether the project gates access (introspection reads it), and the
    // cached gate answers of users of any organization (a user of another one may lose access) hold it: all of them.
    if (change.authorizationRequired !== undefined || change.projectAccessRequired !== undefined) await tx.auth.invalidate({ all: true });
    return projectEvent(project, "project.changed", change);
  });
}

async function setProjectState(ctx: Ctx, projectId: string, state: ProjectState): Promise<Date> {
  const project = await targetProject(ctx, projectId, "project.write");
  return changeState(ctx, state, {
    update: (tx, to, at) => tx.projects.setState(project.id, to, at),
    errors: { alreadyInactive: "Errors.Project.AlreadyInactive", notInactive: "Errors.Project.NotInactive", noun: "project" },
    async invalidate(tx) {
      await tx.auth.invalidate({ orgId: project.orgId });
      // The project's roles leave (or rejoin) the claims of every holder, in any organization.
      await invalidateGrantHolders(tx, { projectId: project.id });
    },
    event: (moved) => projectEvent(project, `project.${moved}`, {}),
  });
}

export const deactivateProject = (ctx: Ctx, projectId: string) => setProjectState(ctx, projectId, "INACTIVE");
export const reactivateProject = (ctx: Ctx, projectId: string) => setProjectState(ctx, projectId, "ACTIVE");

/** Roles, project grants, applications (with their keys) and user grants go by ON DELETE CASCADE. */
export async function deleteProject(ctx: Ctx, projectId: string): Promise<Date> {
  const project = await targetProject(ctx, projectId, "project.delete");
  return commit(ctx, async (tx) => {
    await tx.auth.invalidate({ orgId: project.orgId });
    await invalidateGrantHolders(tx, { projectId: project.id });
    const dependents = await tx.projects.dependents(project.id);
    await tx.projects.delete(project.id);
    return projectEvent(project, "project.removed", { name: project.name, ...dependents });
  });
}
