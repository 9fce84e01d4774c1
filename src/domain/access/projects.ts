// Projects of an organization and their roles. A project is readable by its
// owning organization and by the organizations it is granted to (as in
// ZITADEL, granted projects show up in the receiving organization's list);
// every change needs the permission in the owning organization.

import type { Prisma } from "../../../gen/prisma/client.js";
import type { Store } from "../../store/index.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { newId } from "../ids.js";
import { page, type TextMatch, textFilter } from "../list.js";
import { isUniqueViolation, lockTx } from "../orgs/members.js";
import { invalidateGrantHolders } from "./grant-holders.js";
import { authorize, type Permission, readableOrgs } from "./permissions.js";
import { changeState } from "./state-change.js";

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

export interface RoleView {
  projectId: string;
  orgId: string;
  key: string;
  displayName: string;
  group: string | null;
  createdAt: Date;
  updatedAt: Date;
}

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

export const projectNotFound = () => notFound("Errors.Project.NotFound", "project not found");
const roleNotFound = () => notFound("Errors.Project.Role.NotFound", "project role not found");

const PROJECT_SELECT = {
  id: true,
  orgId: true,
  name: true,
  state: true,
  projectRoleAssertion: true,
  authorizationRequired: true,
  projectAccessRequired: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ProjectSelect;

const MAX_NAME = 200;
export const ROLE_KEY = /^[A-Za-z0-9_.:-]{1,100}$/;
export const MAX_ROLE_KEYS = 200;

/**
 * Serialises changes of a project's role set with the writes that reference
 * roles (project grants, user grants), so no grant keeps a removed role.
 */
export const projectRolesLock = (projectId: string) => `project-roles:${projectId}`;

export function stringFilter(m: TextMatch): Prisma.StringFilter {
  return textFilter(m);
}

/** Trimmed, non-empty, bounded, without control characters. */
export function validText(value: string | undefined, field: string, errorPrefix: string, opts: { required?: boolean; max?: number } = {}): string | undefined {
  const v = value?.trim();
  const max = opts.max ?? MAX_NAME;
  if (!v) {
    if (opts.required) throw invalidArgument(`${errorPrefix}.Missing`, `${field} is required`, { field });
    return undefined;
  }
  if (v.length > max) throw invalidArgument(`${errorPrefix}.TooLong`, `${field} must be at most ${max} characters`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalidArgument(`${errorPrefix}.Invalid`, `${field} contains control characters`, { field });
  return v;
}

/** Role keys of a request: each URL-safe, no duplicates (dropped), bounded count. */
export function validRoleKeys(keys: readonly string[], field = "role_keys"): string[] {
  if (keys.length > MAX_ROLE_KEYS) throw invalidArgument("Errors.Project.Role.TooMany", `at most ${MAX_ROLE_KEYS} role keys`, { field });
  for (const k of keys) {
    if (!ROLE_KEY.test(k)) throw invalidArgument("Errors.Project.Role.Key.Invalid", "role keys are 1 to 100 of A-Z a-z 0-9 _ . : -", { field });
  }
  return [...new Set(keys)];
}

/** InvalidArgument unless every key is a role of the project. */
export async function checkRolesExist(tx: Store, projectId: string, keys: readonly string[]): Promise<void> {
  if (!keys.length) return;
  const found = await tx.db.projectRole.findMany({ where: { projectId, key: { in: [...keys] } }, select: { key: true } });
  if (found.length !== keys.length) {
    const have = new Set(found.map((r) => r.key));
    const missing = keys.filter((k) => !have.has(k));
    throw roleMissing(missing);
  }
}

function roleMissing(missing: string[]) {
  return invalidArgument("Errors.Project.Role.Unknown", `not roles of the project: ${missing.join(", ")}`, { field: "role_keys", roleKeys: missing.join(",") });
}

/**
 * The project, for a caller holding `permission` in its owning organization;
 * NotFound for callers with no membership there. With `grantedRead`, holding
 * it in an organization the project is granted to is enough too.
 */
export async function targetProject(ctx: Ctx, projectId: string, permission: Permission, opts: { grantedRead?: boolean } = {}): Promise<ProjectView> {
  return (await projectAccess(ctx, projectId, permission, opts.grantedRead ?? false)).project;
}

/** As targetProject; `grantedRoleKeys` is set when access comes through project grants only (the roles they grant). */
async function projectAccess(
  ctx: Ctx,
  projectId: string,
  permission: Permission,
  grantedRead: boolean,
): Promise<{ project: ProjectView; grantedRoleKeys?: string[] }> {
  if (!projectId) throw invalidArgument("Errors.Project.Id.Missing", "project_id is required", { field: "project_id" });
  const project = await ctx.db.project.findFirst({ where: { id: projectId, instanceId: ctx.instanceId }, select: PROJECT_SELECT });
  if (!project) throw projectNotFound();
  if (grantedRead && !ctx.principal.orgRoles.has(project.orgId)) {
    const orgs = readableOrgs(ctx, permission);
    if (orgs !== "all") {
      const grants = await ctx.db.projectGrant.findMany({ where: { projectId: project.id, grantedOrgId: { in: orgs } }, select: { roleKeys: true } });
      if (grants.length) return { project, grantedRoleKeys: [...new Set(grants.flatMap((g) => g.roleKeys))] };
    }
  }
  authorize(ctx, permission, project.orgId, projectNotFound);
  return { project };
}

// ---------------------------------------------------------------- projects

export async function createProject(
  ctx: Ctx,
  input: { orgId: string; name: string; projectRoleAssertion?: boolean; authorizationRequired?: boolean; projectAccessRequired?: boolean },
): Promise<{ id: string; createdAt: Date }> {
  if (!input.orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");
  const org = await ctx.db.organization.findFirst({ where: { id: input.orgId, instanceId: ctx.instanceId }, select: { id: true } });
  if (!org) throw orgNotFound();
  authorize(ctx, "project.write", org.id, orgNotFound);
  const name = validText(input.name, "name", "Errors.Project.Name", { required: true }) as string;
  const id = newId();
  const now = ctx.clock();
  const settings = {
    projectRoleAssertion: input.projectRoleAssertion ?? false,
    authorizationRequired: input.authorizationRequired ?? false,
    projectAccessRequired: input.projectAccessRequired ?? false,
  };
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.db.project.create({ data: { id, instanceId: ctx.instanceId, orgId: org.id, name, ...settings, createdAt: now, updatedAt: now } });
      await recordEvent(ctx, tx, { aggregateType: "project", aggregateId: id, orgId: org.id, type: "project.added", payload: { name, ...settings } });
    });
  } catch (err) {
    throw nameTaken(err);
  }
  return { id, createdAt: now };
}

function nameTaken(err: unknown): unknown {
  return isUniqueViolation(err) ? alreadyExists("Errors.Project.AlreadyExists", "a project with this name already exists in the organization") : err;
}

export async function getProject(ctx: Ctx, projectId: string): Promise<ProjectView> {
  return targetProject(ctx, projectId, "project.read", { grantedRead: true });
}

export type ProjectQuery =
  | { kind: "name"; match: TextMatch }
  | { kind: "ids"; ids: string[] }
  | { kind: "org"; orgId: string }
  | { kind: "grantedOrg"; orgId: string };

/** `orgs`: the caller's readable organizations ("all" for instance readers). */
function projectFilter(q: ProjectQuery, orgs: "all" | string[]): Prisma.ProjectWhereInput {
  switch (q.kind) {
    case "name":
      return { name: stringFilter(q.match) };
    case "ids":
      if (q.ids.length > 1000) throw invalidArgument("Errors.Query.Ids.TooMany", "at most 1000 ids");
      return { id: { in: q.ids } };
    case "org":
      return { orgId: q.orgId };
    case "grantedOrg":
      // A receiving organization sees its own grant of a project, not to whom else the owner granted it.
      return {
        grants: {
          some: { grantedOrgId: q.orgId, ...(orgs === "all" ? {} : { OR: [{ grantedOrgId: { in: orgs } }, { project: { orgId: { in: orgs } } }] }) },
        },
      };
  }
}

export async function listProjects(
  ctx: Ctx,
  input: { page?: PageInput; sort?: "name" | "createdAt"; queries: ProjectQuery[] },
): Promise<{ total: number; projects: ProjectView[] }> {
  const p = page(input.page);
  const orgs = readableOrgs(ctx, "project.read");
  if (orgs !== "all" && orgs.length === 0) throw permissionDeniedRead();
  const scope: Prisma.ProjectWhereInput = orgs === "all" ? {} : { OR: [{ orgId: { in: orgs } }, { grants: { some: { grantedOrgId: { in: orgs } } } }] };
  const where: Prisma.ProjectWhereInput = { instanceId: ctx.instanceId, AND: [scope, ...input.queries.map((q) => projectFilter(q, orgs))] };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.project.count({ where }),
    ctx.db.project.findMany({ where, orderBy: [{ [input.sort ?? "createdAt"]: dir }, { id: dir }], skip: p.offset, take: p.limit, select: PROJECT_SELECT }),
  ]);
  return { total, projects: rows };
}

const permissionDeniedRead = () => permissionDenied("Errors.Permission.Denied", "missing permission project.read");

export async function updateProject(
  ctx: Ctx,
  input: { projectId: string; name?: string; projectRoleAssertion?: boolean; authorizationRequired?: boolean; projectAccessRequired?: boolean },
): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.write");
  const name = input.name === undefined ? undefined : (validText(input.name, "name", "Errors.Project.Name", { required: true }) as string);
  const data: Prisma.ProjectUpdateInput = {};
  if (name !== undefined && name !== project.name) data.name = name;
  for (const k of ["projectRoleAssertion", "authorizationRequired", "projectAccessRequired"] as const) {
    if (input[k] !== undefined && input[k] !== project[k]) data[k] = input[k];
  }
  const now = ctx.clock();
  if (Object.keys(data).length === 0) return now;
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.db.project.update({ where: { id: project.id }, data: { ...data, updatedAt: now } });
      // Whether the project's roles are asserted decides the role claims of the tokens for it.
      if (data.projectRoleAssertion !== undefined) await invalidateGrantHolders(tx, { projectId: project.id });
      await recordEvent(ctx, tx, { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, type: "project.changed", payload: data });
    });
  } catch (err) {
    throw nameTaken(err);
  }
  return now;
}

async function setProjectState(ctx: Ctx, projectId: string, state: ProjectState): Promise<Date> {
  const project = await targetProject(ctx, projectId, "project.write");
  return changeState(ctx, state, {
    update: (tx, data) => tx.db.project.updateMany({ where: { id: project.id, state: { not: state } }, data }),
    errors: { alreadyInactive: "Errors.Project.AlreadyInactive", notInactive: "Errors.Project.NotInactive", noun: "project" },
    async invalidate(tx) {
      await tx.auth.invalidate({ orgId: project.orgId });
      // The project's roles leave (or rejoin) the claims of every holder, in any organization.
      await invalidateGrantHolders(tx, { projectId: project.id });
    },
    event: { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, eventType: "project" },
  });
}

export const deactivateProject = (ctx: Ctx, projectId: string) => setProjectState(ctx, projectId, "INACTIVE");
export const reactivateProject = (ctx: Ctx, projectId: string) => setProjectState(ctx, projectId, "ACTIVE");

/** Roles, project grants, applications (with their keys) and user grants go by ON DELETE CASCADE. */
export async function deleteProject(ctx: Ctx, projectId: string): Promise<Date> {
  const project = await targetProject(ctx, projectId, "project.delete");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ orgId: project.orgId });
    await invalidateGrantHolders(tx, { projectId: project.id });
    const [userGrants, apps, grants] = await Promise.all([
      tx.db.userGrant.count({ where: { projectId: project.id } }),
      tx.db.application.count({ where: { projectId: project.id } }),
      tx.db.projectGrant.count({ where: { projectId: project.id } }),
    ]);
    await tx.db.project.delete({ where: { id: project.id } });
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.removed",
      payload: { name: project.name, userGrants, apps, grants },
    });
  });
  return now;
}

// ---------------------------------------------------------------- roles

export async function addProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string; displayName: string; group?: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  const [key] = validRoleKeys([input.roleKey], "role_key");
  const displayName = validText(input.displayName, "display_name", "Errors.Project.Role.DisplayName", { required: true }) as string;
  const group = validText(input.group, "group", "Errors.Project.Role.Group") ?? null;
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.db.projectRole.create({ data: { projectId: project.id, key, displayName, group, createdAt: now, updatedAt: now } });
      await recordEvent(ctx, tx, {
        aggregateType: "project",
        aggregateId: project.id,
        orgId: project.orgId,
        type: "project.role.added",
        payload: { roleKey: key, displayName, group },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw alreadyExists("Errors.Project.Role.AlreadyExists", "the project already has a role with this key");
    throw err;
  }
  return now;
}

export async function updateProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string; displayName: string; group?: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  const displayName = validText(input.displayName, "display_name", "Errors.Project.Role.DisplayName", { required: true }) as string;
  const data: Prisma.ProjectRoleUpdateManyMutationInput = { displayName };
  if (input.group !== undefined) data.group = validText(input.group, "group", "Errors.Project.Role.Group") ?? null;
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await tx.db.projectRole.updateMany({ where: { projectId: project.id, key: input.roleKey }, data: { ...data, updatedAt: now } });
    if (count === 0) throw roleNotFound();
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.role.changed",
      payload: { roleKey: input.roleKey, ...data },
    });
  });
  return now;
}

/** Removes the role, and with it (same transaction) every assignment of it in user grants and project grants. */
export async function removeProjectRole(ctx: Ctx, input: { projectId: string; roleKey: string }): Promise<Date> {
  const project = await targetProject(ctx, input.projectId, "project.role.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await lockTx(tx, projectRolesLock(project.id));
    const { count } = await tx.db.projectRole.deleteMany({ where: { projectId: project.id, key: input.roleKey } });
    if (count === 0) throw roleNotFound();
    await invalidateGrantHolders(tx, { projectId: project.id, roleKey: input.roleKey });
    const userGrants = await tx.db.$executeRaw`UPDATE "UserGrant" SET "roleKeys" = array_remove("roleKeys", ${input.roleKey}), "updatedAt" = ${now}
      WHERE "projectId" = ${project.id} AND ${input.roleKey} = ANY("roleKeys")`;
    const projectGrants = await tx.db.$executeRaw`UPDATE "ProjectGrant" SET "roleKeys" = array_remove("roleKeys", ${input.roleKey}), "updatedAt" = ${now}
      WHERE "projectId" = ${project.id} AND ${input.roleKey} = ANY("roleKeys")`;
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.role.removed",
      payload: { roleKey: input.roleKey, userGrants, projectGrants },
    });
  });
  return now;
}

export type RoleQuery = { kind: "key"; match: TextMatch } | { kind: "displayName"; match: TextMatch };

export async function listProjectRoles(
  ctx: Ctx,
  input: { projectId: string; page?: PageInput; queries: RoleQuery[] },
): Promise<{ total: number; roles: RoleView[] }> {
  // A receiving organization sees the roles granted to it.
  const { project, grantedRoleKeys } = await projectAccess(ctx, input.projectId, "project.role.read", true);
  const p = page(input.page);
  const where: Prisma.ProjectRoleWhereInput = {
    projectId: project.id,
    ...(grantedRoleKeys ? { key: { in: grantedRoleKeys } } : {}),
    AND: input.queries.map((q) => (q.kind === "key" ? { key: stringFilter(q.match) } : { displayName: stringFilter(q.match) })),
  };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.projectRole.count({ where }),
    ctx.db.projectRole.findMany({ where, orderBy: [{ createdAt: dir }, { key: dir }], skip: p.offset, take: p.limit }),
  ]);
  return { total, roles: rows.map((r) => ({ ...r, orgId: project.orgId })) };
}
