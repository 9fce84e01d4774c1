// User grants ("authorizations"): one user, in one organization context,
// holding roles of one project. The context is the project's owning
// organization (a direct grant) or an organization the project is granted to
// (through that project grant, with the granted roles only, managed by the
// receiving organization only). Permissions are checked in the context org.

import { Prisma } from "../../../gen/prisma/client.js";
import type { PrismaClient } from "../../store/db.js";
import type { Store } from "../../store/index.js";
import { query, statement } from "../../store/sql.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx, Tx } from "../context.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { userNotFound } from "../identity/users.js";
import { newId } from "../ids.js";
import { inCreationOrder, page } from "../list.js";
import { isUniqueViolation, lockTx } from "../orgs/members.js";
import { authorize, holds, listScope } from "./permissions.js";
import { projectGrantNotFound } from "./project-grants.js";
import { checkRolesExist, type ProjectState, projectNotFound, projectRolesLock, validRoleKeys } from "./projects.js";
import { changeState } from "./state-change.js";

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

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

const userGrantNotFound = () => notFound("Errors.UserGrant.NotFound", "user grant not found");

/** Through a project grant: every role must be among the granted ones (read in the transaction, under the roles lock). */
async function checkGranted(tx: Store, projectGrantId: string, roleKeys: readonly string[]): Promise<void> {
  const grant = await tx.db.projectGrant.findUnique({ where: { id: projectGrantId }, select: { roleKeys: true } });
  if (!grant) throw projectGrantNotFound();
  const missing = roleKeys.filter((k) => !grant.roleKeys.includes(k));
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

export async function addUserGrant(ctx: Ctx, input: AddUserGrantInput): Promise<{ id: string; createdAt: Date }> {
  if (!input.projectId) throw invalidArgument("Errors.Project.Id.Missing", "project_id is required", { field: "project_id" });
  if (!input.userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const project = await ctx.db.project.findFirst({ where: { id: input.projectId, instanceId: ctx.instanceId }, select: { id: true, orgId: true } });
  if (!project) throw projectNotFound();

  let grant: { id: string; grantedOrgId: string; state: ProjectState } | null = null;
  const select = { id: true, grantedOrgId: true, state: true } as const;
  if (input.projectGrantId) {
    // Answers about the project's grants are for those who can see the project: to anyone else it does not exist.
    if (!(await seesProject(ctx, project))) throw projectNotFound();
    grant = await ctx.db.projectGrant.findFirst({ where: { id: input.projectGrantId, projectId: project.id }, select });
    if (!grant) throw projectGrantNotFound();
    if (input.orgId && input.orgId !== grant.grantedOrgId) {
      throw invalidArgument("Errors.UserGrant.OrgMismatch", "organization_id must be the organization the project grant is for", { field: "organization_id" });
    }
  } else if (input.orgId && input.orgId !== project.orgId) {
    grant = await ctx.db.projectGrant.findUnique({ where: { projectId_grantedOrgId: { projectId: project.id, grantedOrgId: input.orgId } }, select });
    if (!grant) {
      authorize(ctx, "user.grant.write", input.orgId, projectNotFound);
      throw notFound("Errors.Project.Grant.NotFound", "the project is not granted to the organization");
    }
  }
  const orgId = grant ? grant.grantedOrgId : project.orgId;
  if (grant && !holds(ctx, "user.grant.write", orgId) && holds(ctx, "user.grant.write", project.orgId)) {
    throw permissionDenied("Errors.UserGrant.ReceivingOrgOnly", "roles of a granted project are assigned by the receiving organization only");
  }
  authorize(ctx, "user.grant.write", orgId, projectNotFound);
  if (grant && grant.state !== "ACTIVE") throw failedPrecondition("Errors.Project.Grant.Inactive", "the project grant is deactivated");

  const user = await ctx.db.user.findFirst({ where: { id: input.userId, instanceId: ctx.instanceId }, select: { id: true } });
  if (!user) throw userNotFound();
  const roleKeys = validRoleKeys(input.roleKeys);
  const id = newId();
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      await lockTx(tx, projectRolesLock(project.id));
      await checkRolesExist(tx, project.id, roleKeys);
      if (grant) await checkGranted(tx, grant.id, roleKeys);
      await tx.auth.invalidate({ userId: user.id });
      await tx.db.userGrant.create({
        data: {
          id,
          instanceId: ctx.instanceId,
          userId: user.id,
          orgId,
          projectId: project.id,
          projectGrantId: grant?.id ?? null,
          roleKeys,
          createdAt: now,
          updatedAt: now,
        },
      });
      await recordEvent(ctx, tx, {
        aggregateType: "user.grant",
        aggregateId: id,
        orgId,
        type: "user.grant.added",
        payload: { userId: user.id, projectId: project.id, projectGrantId: grant?.id, roleKeys },
      });
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw alreadyExists("Errors.UserGrant.AlreadyExists", "the user already has a grant on this project for this organization: update it instead");
    }
    throw err;
  }
  return { id, createdAt: now };
}

/** Instance members, members of the owning organization, and members of an organization the project is granted to. */
async function seesProject(ctx: Ctx, project: { id: string; orgId: string }): Promise<boolean> {
  const p = ctx.principal;
  if (p.instanceRoles.length || p.orgRoles.has(project.orgId)) return true;
  if (p.orgRoles.size === 0) return false;
  const granted = await ctx.db.projectGrant.findFirst({ where: { projectId: project.id, grantedOrgId: { in: [...p.orgRoles.keys()] } }, select: { id: true } });
  return granted !== null;
}

async function targetUserGrant(ctx: Ctx, grantId: string, userId: string | undefined) {
  if (!grantId) throw invalidArgument("Errors.UserGrant.Id.Missing", "grant_id is required", { field: "grant_id" });
  const grant = await ctx.db.userGrant.findFirst({
    where: { id: grantId, instanceId: ctx.instanceId },
    select: { id: true, userId: true, orgId: true, projectId: true, projectGrantId: true, roleKeys: true },
  });
  if (!grant || (userId && userId !== grant.userId)) throw userGrantNotFound();
  authorize(ctx, "user.grant.write", grant.orgId, userGrantNotFound);
  return grant;
}

/** Replaces the role set. */
export async function updateUserGrant(ctx: Ctx, input: { grantId: string; userId?: string; roleKeys: readonly string[] }): Promise<Date> {
  const grant = await targetUserGrant(ctx, input.grantId, input.userId);
  const roleKeys = validRoleKeys(input.roleKeys);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await lockTx(tx, projectRolesLock(grant.projectId));
    await checkRolesExist(tx, grant.projectId, roleKeys);
    if (grant.projectGrantId) await checkGranted(tx, grant.projectGrantId, roleKeys);
    const { count } = await tx.db.userGrant.updateMany({ where: { id: grant.id }, data: { roleKeys, updatedAt: now } });
    if (count === 0) throw userGrantNotFound();
    await tx.auth.invalidate({ userId: grant.userId });
    await recordEvent(ctx, tx, {
      aggregateType: "user.grant",
      aggregateId: grant.id,
      orgId: grant.orgId,
      type: "user.grant.changed",
      payload: { userId: grant.userId, projectId: grant.projectId, roleKeys, previousRoleKeys: grant.roleKeys },
    });
  });
  return now;
}

export async function removeUserGrant(ctx: Ctx, input: { grantId: string; userId?: string }): Promise<Date> {
  const grant = await targetUserGrant(ctx, input.grantId, input.userId);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await tx.db.userGrant.deleteMany({ where: { id: grant.id } });
    if (count === 0) throw userGrantNotFound();
    await tx.auth.invalidate({ userId: grant.userId });
    await recordEvent(ctx, tx, {
      aggregateType: "user.grant",
      aggregateId: grant.id,
      orgId: grant.orgId,
      type: "user.grant.removed",
      payload: { userId: grant.userId, projectId: grant.projectId },
    });
  });
  return now;
}

async function setUserGrantState(ctx: Ctx, input: { grantId: string; userId?: string }, state: ProjectState): Promise<Date> {
  const grant = await targetUserGrant(ctx, input.grantId, input.userId);
  return changeState(ctx, state, {
    update: (tx, data) => tx.db.userGrant.updateMany({ where: { id: grant.id, state: { not: state } }, data }),
    async checkExists(tx) {
      if (!(await tx.db.userGrant.findUnique({ where: { id: grant.id }, select: { id: true } }))) throw userGrantNotFound();
    },
    errors: { alreadyInactive: "Errors.UserGrant.AlreadyInactive", notInactive: "Errors.UserGrant.NotInactive", noun: "user grant" },
    // The grant's roles leave (or rejoin) the role claims of tokens already issued at once.
    invalidate: (tx) => tx.auth.invalidate({ userId: grant.userId }),
    event: {
      aggregateType: "user.grant",
      aggregateId: grant.id,
      orgId: grant.orgId,
      eventType: "user.grant",
      payload: { userId: grant.userId, projectId: grant.projectId },
    },
  });
}

/** Keeps the grant but takes its roles out of the user's claims until reactivated. */
export const deactivateUserGrant = (ctx: Ctx, input: { grantId: string; userId?: string }) => setUserGrantState(ctx, input, "INACTIVE");
export const reactivateUserGrant = (ctx: Ctx, input: { grantId: string; userId?: string }) => setUserGrantState(ctx, input, "ACTIVE");

export type UserGrantQuery =
  | { kind: "userId"; userId: string }
  | { kind: "projectId"; projectId: string }
  | { kind: "orgId"; orgId: string }
  | { kind: "roleKey"; roleKey: string }
  | { kind: "projectGrantId"; projectGrantId: string }
  | { kind: "state"; state: ProjectState };

function userGrantFilter(q: UserGrantQuery): Prisma.UserGrantWhereInput {
  switch (q.kind) {
    case "userId":
      return { userId: q.userId };
    case "projectId":
      return { projectId: q.projectId };
    case "orgId":
      return { orgId: q.orgId };
    case "roleKey":
      return { roleKeys: { has: q.roleKey } };
    case "projectGrantId":
      return { projectGrantId: q.projectGrantId };
    case "state":
      return { state: q.state };
  }
}

/** Grants whose organization context the caller may read (user.grant.read there). */
export async function listUserGrants(ctx: Ctx, input: { page?: PageInput; queries: UserGrantQuery[] }): Promise<{ total: number; grants: UserGrantView[] }> {
  const p = page(input.page);
  const orgs = listScope(ctx, "user.grant.read");
  const where: Prisma.UserGrantWhereInput = { instanceId: ctx.instanceId, ...(orgs ? { orgId: { in: orgs } } : {}), AND: input.queries.map(userGrantFilter) };
  const [total, grants] = await ctx.db.$transaction([
    ctx.db.userGrant.count({ where }),
    ctx.db.userGrant.findMany({
      where,
      ...inCreationOrder(p),
      select: { id: true, userId: true, orgId: true, projectId: true, projectGrantId: true, roleKeys: true, state: true, createdAt: true, updatedAt: true },
    }),
  ]);
  return { total, grants };
}

// ---------------------------------------------------------------- role claims

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
export async function roleClaims(db: PrismaClient | Tx, instanceId: string, userId: string, projectIds?: string[]): Promise<Map<string, ProjectRoleClaim>> {
  const out = new Map<string, ProjectRoleClaim>();
  if (projectIds && projectIds.length === 0) return out;
  const only = projectIds ? Prisma.sql`AND ug."projectId" = ANY(${projectIds}::text[])` : Prisma.empty;
  // On the driver (src/store/sql.ts): tokens, introspection and userinfo ask for this on every cache miss.
  const rows = await query<{ projectId: string; orgId: string; orgName: string; roleKeys: string[]; grantedRoleKeys: string[] | null }>(
    db,
    statement(Prisma.sql`
    SELECT ug."projectId", ug."orgId", o."name" AS "orgName", ug."roleKeys", pg."roleKeys" AS "grantedRoleKeys"
    FROM "UserGrant" ug
    JOIN "Project" p ON p."id" = ug."projectId"
    JOIN "Organization" o ON o."id" = ug."orgId" AND o."state" = 'ACTIVE'
    JOIN "Organization" po ON po."id" = p."orgId" AND po."state" = 'ACTIVE'
    LEFT JOIN "ProjectGrant" pg ON pg."id" = ug."projectGrantId"
    WHERE ug."instanceId" = ${instanceId} AND ug."userId" = ${userId}
      AND ug."state" = 'ACTIVE' AND p."state" = 'ACTIVE'
      AND (ug."projectGrantId" IS NULL OR pg."state" = 'ACTIVE')
      ${only}
    ORDER BY ug."projectId", ug."orgId"`),
  );
  for (const row of rows) {
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
