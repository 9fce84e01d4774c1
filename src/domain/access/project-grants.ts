// Project grants: a project shared with another organization, which may then
// assign the granted roles (and only those) to users. The owning
// organization manages a grant (project.grant.write there); both sides may
// read it (project.grant.read in either organization).
import type { Prisma } from "../../../gen/prisma/client.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { newId } from "../ids.js";
import { inCreationOrder, page } from "../list.js";
import { isUniqueViolation, lockTx } from "../orgs/members.js";
import { invalidateGrantHolders } from "./grant-holders.js";
import { readableOrgs } from "./permissions.js";
import { checkRolesExist, type ProjectState, projectRolesLock, targetProject, validRoleKeys } from "./projects.js";
import { changeState } from "./state-change.js";

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

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

export const projectGrantNotFound = () => notFound("Errors.Project.Grant.NotFound", "project grant not found");

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
  const org = await ctx.db.organization.findFirst({ where: { id: input.grantedOrgId, instanceId: ctx.instanceId }, select: { id: true } });
  if (!org) throw notFound("Errors.Org.NotFound", "organization not found");
  const id = newId();
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      await lockTx(tx, projectRolesLock(project.id));
      await checkRolesExist(tx, project.id, roleKeys);
      await tx.db.projectGrant.create({
        data: { id, instanceId: ctx.instanceId, projectId: project.id, grantedOrgId: org.id, roleKeys, createdAt: now, updatedAt: now },
      });
      await recordEvent(ctx, tx, {
        aggregateType: "project",
        aggregateId: project.id,
        orgId: project.orgId,
        type: "project.grant.added",
        payload: { grantId: id, grantedOrgId: org.id, roleKeys },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw alreadyExists("Errors.Project.Grant.AlreadyExists", "the project is already granted to this organization");
    throw err;
  }
  return { id, createdAt: now };
}

async function targetGrant(ctx: Ctx, projectId: string, grantedOrgId: string) {
  const project = await targetProject(ctx, projectId, "project.grant.write");
  const grant = await ctx.db.projectGrant.findUnique({
    where: { projectId_grantedOrgId: { projectId: project.id, grantedOrgId: grantedOrgId ?? "" } },
    select: { id: true, roleKeys: true, state: true, grantedOrgId: true },
  });
  if (!grant) throw projectGrantNotFound();
  return { project, grant };
}

/** Replaces the granted roles; roles dropped are removed from the receiving organization's user grants through this grant. */
export async function updateProjectGrant(ctx: Ctx, input: { projectId: string; grantedOrgId: string; roleKeys: readonly string[] }): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, input.projectId, input.grantedOrgId);
  const roleKeys = validRoleKeys(input.roleKeys);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await lockTx(tx, projectRolesLock(project.id));
    await checkRolesExist(tx, project.id, roleKeys);
    const current = await tx.db.projectGrant.findUnique({ where: { id: grant.id }, select: { roleKeys: true } });
    if (!current) throw projectGrantNotFound();
    const dropped = current.roleKeys.filter((k) => !roleKeys.includes(k));
    await tx.db.projectGrant.update({ where: { id: grant.id }, data: { roleKeys, updatedAt: now } });
    let userGrants = 0;
    for (const key of dropped) {
      userGrants += await tx.db.$executeRaw`UPDATE "UserGrant" SET "roleKeys" = array_remove("roleKeys", ${key}), "updatedAt" = ${now}
        WHERE "projectGrantId" = ${grant.id} AND ${key} = ANY("roleKeys")`;
    }
    if (userGrants > 0) await invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id });
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.grant.changed",
      payload: { grantId: grant.id, grantedOrgId: grant.grantedOrgId, roleKeys, removedRoleKeys: dropped, userGrantsChanged: userGrants },
    });
  });
  return now;
}

async function setGrantState(ctx: Ctx, input: { projectId: string; grantedOrgId: string }, state: ProjectState): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, input.projectId, input.grantedOrgId);
  return changeState(ctx, state, {
    update: (tx, data) => tx.db.projectGrant.updateMany({ where: { id: grant.id, state: { not: state } }, data }),
    errors: { alreadyInactive: "Errors.Project.Grant.AlreadyInactive", notInactive: "Errors.Project.Grant.NotInactive", noun: "project grant" },
    // Roles held through the grant leave (or rejoin) the claims of tokens already issued at once.
    invalidate: (tx) => invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id }),
    event: {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      eventType: "project.grant",
      payload: { grantId: grant.id, grantedOrgId: grant.grantedOrgId },
    },
  });
}

export const deactivateProjectGrant = (ctx: Ctx, input: { projectId: string; grantedOrgId: string }) => setGrantState(ctx, input, "INACTIVE");
export const reactivateProjectGrant = (ctx: Ctx, input: { projectId: string; grantedOrgId: string }) => setGrantState(ctx, input, "ACTIVE");

/** The receiving organization's user grants through it go by ON DELETE CASCADE. */
export async function deleteProjectGrant(ctx: Ctx, input: { projectId: string; grantedOrgId: string }): Promise<Date> {
  const { project, grant } = await targetGrant(ctx, input.projectId, input.grantedOrgId);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const userGrants = await tx.db.userGrant.count({ where: { projectGrantId: grant.id } });
    if (userGrants > 0) await invalidateGrantHolders(tx, { projectId: project.id, projectGrantId: grant.id });
    const { count } = await tx.db.projectGrant.deleteMany({ where: { id: grant.id } });
    if (count === 0) throw projectGrantNotFound();
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.grant.removed",
      payload: { grantId: grant.id, grantedOrgId: grant.grantedOrgId, userGrants },
    });
  });
  return now;
}

export type ProjectGrantQuery = { kind: "project"; projectId: string } | { kind: "grantedOrg"; orgId: string } | { kind: "roleKey"; roleKey: string };

function grantFilter(q: ProjectGrantQuery): Prisma.ProjectGrantWhereInput {
  switch (q.kind) {
    case "project":
      return { projectId: q.projectId };
    case "grantedOrg":
      return { grantedOrgId: q.orgId };
    case "roleKey":
      return { roleKeys: { has: q.roleKey } };
  }
}

export async function listProjectGrants(
  ctx: Ctx,
  input: { page?: PageInput; queries: ProjectGrantQuery[] },
): Promise<{ total: number; grants: ProjectGrantView[] }> {
  const p = page(input.page);
  const orgs = readableOrgs(ctx, "project.grant.read");
  if (orgs !== "all" && orgs.length === 0) throw permissionDenied("Errors.Permission.Denied", "missing permission project.grant.read");
  const scope: Prisma.ProjectGrantWhereInput = orgs === "all" ? {} : { OR: [{ project: { orgId: { in: orgs } } }, { grantedOrgId: { in: orgs } }] };
  const where: Prisma.ProjectGrantWhereInput = { instanceId: ctx.instanceId, AND: [scope, ...input.queries.map(grantFilter)] };
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.projectGrant.count({ where }),
    ctx.db.projectGrant.findMany({
      where,
      ...inCreationOrder(p),
      include: { project: { select: { name: true, orgId: true } } },
    }),
  ]);
  const names = new Map(
    (await ctx.db.organization.findMany({ where: { id: { in: [...new Set(rows.map((r) => r.grantedOrgId))] } }, select: { id: true, name: true } })).map(
      (o) => [o.id, o.name],
    ),
  );
  return {
    total,
    grants: rows.map((r) => ({
      id: r.id,
      projectId: r.projectId,
      projectName: r.project.name,
      projectOrgId: r.project.orgId,
      grantedOrgId: r.grantedOrgId,
      grantedOrgName: names.get(r.grantedOrgId) ?? "",
      roleKeys: r.roleKeys,
      state: r.state,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    })),
  };
}
