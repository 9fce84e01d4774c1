// Projects, their roles and project grants.
import { Prisma } from "../../gen/prisma/client.js";
import type { ProjectGrantQuery, ProjectGrantView } from "../domain/access/project-grants.js";
import type { RoleQuery, RoleView } from "../domain/access/project-roles.js";
import type { ProjectQuery, ProjectState, ProjectView } from "../domain/access/projects.js";
import { alreadyExists } from "../domain/errors.js";
import type { Page } from "../domain/list.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver } from "./paging.js";
import { textSql } from "./user-query.js";

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

/** The class of svc's advisory locks ("svc"); the key is hashed into the second half. */
const LOCK_CLASS = 0x737663;

export type ProjectSettings = Pick<ProjectView, "projectRoleAssertion" | "authorizationRequired" | "projectAccessRequired">;
export type ProjectChange = Partial<Pick<ProjectView, "name"> & ProjectSettings>;

export interface ProjectListQuery {
  instanceId: string;
  /** Organizations the caller reads in (undefined: all): a project shows to its owner and to the organizations it is granted to. */
  scope: string[] | undefined;
  filters: ProjectQuery[];
  sort: "name" | "createdAt";
  page: Page;
}

export type RoleRow = Omit<RoleView, "orgId">;

export interface ProjectGrantRow {
  id: string;
  grantedOrgId: string;
  roleKeys: string[];
  state: ProjectState;
}

export interface ProjectGrantListQuery {
  instanceId: string;
  /** Organizations the caller reads in (undefined: all): a grant shows to the owning and to the receiving organization. */
  scope: string[] | undefined;
  filters: ProjectGrantQuery[];
  page: Page;
}

const projectNameTaken = () => alreadyExists("Errors.Project.AlreadyExists", "a project with this name already exists in the organization");

/**
 * A filter over the project `p`, and its part of the statement's shape name. A receiving organization sees its own
 * grant of a project, not to whom else the owner granted it.
 */
function projectCondition(q: ProjectQuery, scope: string[] | undefined): [string, Prisma.Sql] {
  switch (q.kind) {
    case "name":
      return [`n${q.match.method[0]}${q.match.ignoreCase ? "i" : ""}`, textSql(Prisma.raw('p."name"'), q.match)];
    case "ids":
      return ["d", Prisma.sql`p."id" = ANY(${q.ids}::text[])`];
    case "org":
      return ["o", Prisma.sql`p."orgId" = ${q.orgId}`];
    case "grantedOrg": {
      const seen = scope ? Prisma.sql` AND (g."grantedOrgId" = ANY(${scope}::text[]) OR p."orgId" = ANY(${scope}::text[]))` : Prisma.empty;
      return [scope ? "gs" : "g", Prisma.sql`EXISTS (SELECT 1 FROM "ProjectGrant" g WHERE g."projectId" = p."id" AND g."grantedOrgId" = ${q.orgId}${seen})`];
    }
  }
}

/** A filter over the project grant `g`, and its letter in the statement's shape name. */
function grantCondition(q: ProjectGrantQuery): [string, Prisma.Sql] {
  switch (q.kind) {
    case "project":
      return ["p", Prisma.sql`g."projectId" = ${q.projectId}`];
    case "grantedOrg":
      return ["o", Prisma.sql`g."grantedOrgId" = ${q.orgId}`];
    case "roleKey":
      return ["r", Prisma.sql`${q.roleKey} = ANY(g."roleKeys")`];
  }
}

export class ProjectRepo {
  constructor(readonly db: Db) {}

  // ------------------------------------------------------------ projects

  find(instanceId: string, id: string): Promise<ProjectView | null> {
    return this.db.project.findFirst({ where: { id, instanceId }, select: PROJECT_SELECT });
  }

  /** Whether the organization exists in the instance (the owner or receiver of a project). */
  async orgExists(instanceId: string, orgId: string): Promise<boolean> {
    return (await this.db.organization.findFirst({ where: { id: orgId, instanceId }, select: { id: true } })) !== null;
  }

  async insert(row: ProjectSettings & { id: string; instanceId: string; orgId: string; name: string; createdAt: Date }): Promise<void> {
    await unique(this.db.project.create({ data: { ...row, updatedAt: row.createdAt } }), projectNameTaken);
  }

  async update(id: string, change: ProjectChange, updatedAt: Date): Promise<void> {
    await unique(this.db.project.update({ where: { id }, data: { ...change, updatedAt } }), projectNameTaken);
  }

  /** Moves the project to `state` unless it is there already; whether it moved. */
  async setState(id: string, state: ProjectState, updatedAt: Date): Promise<boolean> {
    return (await this.db.project.updateMany({ where: { id, state: { not: state } }, data: { state, updatedAt } })).count > 0;
  }

  /** What deleting the project takes with it (by ON DELETE CASCADE). */
  async dependents(id: string): Promise<{ userGrants: number; apps: number; grants: number }> {
    const [userGrants, apps, grants] = await Promise.all([
      this.db.userGrant.count({ where: { projectId: id } }),
      this.db.application.count({ where: { projectId: id } }),
      this.db.projectGrant.count({ where: { projectId: id } }),
    ]);
    return { userGrants, apps, grants };
  }

  async delete(id: string): Promise<void> {
    await this.db.project.delete({ where: { id } });
  }

  /**
   * A project shows to its owner and to the organizations it is granted to. By name or creation, the id breaking
   * ties; the total bounded (see Page); one statement on the driver (pageOnDriver).
   */
  async page(q: ProjectListQuery): Promise<Paged<ProjectView>> {
    const filters = q.filters.map((f) => projectCondition(f, q.scope));
    const where = [Prisma.sql`p."instanceId" = ${q.instanceId}`, ...filters.map(([, sql]) => sql)];
    if (q.scope) {
      where.push(Prisma.sql`(p."orgId" = ANY(${q.scope}::text[])
        OR EXISTS (SELECT 1 FROM "ProjectGrant" sg WHERE sg."projectId" = p."id" AND sg."grantedOrgId" = ANY(${q.scope}::text[])))`);
    }
    const shape = `${filters.map(([part]) => part).join("_")}${q.scope ? "S" : ""}`;
    const page = await pageOnDriver<Omit<ProjectView, "createdAt" | "updatedAt"> & { createdAt: unknown; updatedAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"Project" p`,
        alias: "p",
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`p."id", p."orgId", p."name", p."state"::text AS "state", p."projectRoleAssertion", p."authorizationRequired",
          p."projectAccessRequired", p."createdAt", p."updatedAt"`,
        order: [q.sort, "id"],
        name: filters.length <= NAMED_MAX_FILTERS ? `project_list_${q.sort}_${shape || "all"}` : undefined,
      },
      q.page,
    );
    return { ...page, rows: page.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), updatedAt: dateOf(r.updatedAt) })) };
  }

  // ------------------------------------------------------------ roles

  /**
   * Serialises changes of a project's role set with the writes that reference
   * roles (project grants, user grants), so no grant keeps a removed role.
   */
  async lockRoles(projectId: string): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, hashtext(${`project-roles:${projectId}`}))`;
  }

  /** Those of `keys` that are not roles of the project. */
  async missingRoles(projectId: string, keys: readonly string[]): Promise<string[]> {
    if (!keys.length) return [];
    const found = await this.db.projectRole.findMany({ where: { projectId, key: { in: [...keys] } }, select: { key: true } });
    if (found.length === keys.length) return [];
    const have = new Set(found.map((r) => r.key));
    return keys.filter((k) => !have.has(k));
  }

  async insertRole(row: Omit<RoleRow, "updatedAt">): Promise<void> {
    await unique(this.db.projectRole.create({ data: { ...row, updatedAt: row.createdAt } }), () =>
      alreadyExists("Errors.Project.Role.AlreadyExists", "the project already has a role with this key"),
    );
  }

  /** Whether the role exists (and was changed). */
  async updateRole(projectId: string, key: string, change: { displayName: string; group?: string | null }, updatedAt: Date): Promise<boolean> {
    return (await this.db.projectRole.updateMany({ where: { projectId, key }, data: { ...change, updatedAt } })).count > 0;
  }

  /** Whether the role existed. */
  async deleteRole(projectId: string, key: string): Promise<boolean> {
    return (await this.db.projectRole.deleteMany({ where: { projectId, key } })).count > 0;
  }

  /** Takes the role out of the project's user grants and project grants; how many of each changed. */
  async removeRoleFromGrants(projectId: string, key: string, updatedAt: Date): Promise<{ userGrants: number; projectGrants: number }> {
    const userGrants = await this.db.$executeRaw`UPDATE "UserGrant" SET "roleKeys" = array_remove("roleKeys", ${key}), "updatedAt" = ${updatedAt}
      WHERE "projectId" = ${projectId} AND ${key} = ANY("roleKeys")`;
    const projectGrants = await this.db.$executeRaw`UPDATE "ProjectGrant" SET "roleKeys" = array_remove("roleKeys", ${key}), "updatedAt" = ${updatedAt}
      WHERE "projectId" = ${projectId} AND ${key} = ANY("roleKeys")`;
    return { userGrants, projectGrants };
  }

  /** `onlyKeys`: the roles to show (those granted, for a receiving organization). */
  /** By creation (the key breaking ties); the total bounded (see Page); one statement on the driver (pageOnDriver). */
  async rolePage(projectId: string, onlyKeys: string[] | undefined, filters: RoleQuery[], page: Page): Promise<Paged<RoleRow>> {
    const conditions = filters.map((q): [string, Prisma.Sql] => {
      const column = q.kind === "key" ? "key" : "displayName";
      return [`${column[0]}${q.match.method[0]}${q.match.ignoreCase ? "i" : ""}`, textSql(Prisma.raw(`r."${column}"`), q.match)];
    });
    const where = [Prisma.sql`r."projectId" = ${projectId}`, ...conditions.map(([, sql]) => sql)];
    if (onlyKeys) where.push(Prisma.sql`r."key" = ANY(${onlyKeys}::text[])`);
    const shape = `${conditions.map(([part]) => part).join("_")}${onlyKeys ? "O" : ""}`;
    const list = await pageOnDriver<Omit<RoleRow, "createdAt" | "updatedAt"> & { createdAt: unknown; updatedAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"ProjectRole" r`,
        alias: "r",
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`r."projectId", r."key", r."displayName", r."group", r."createdAt", r."updatedAt"`,
        order: ["createdAt", "key"],
        name: conditions.length <= NAMED_MAX_FILTERS ? `project_role_list_${shape || "all"}` : undefined,
      },
      page,
    );
    return { ...list, rows: list.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), updatedAt: dateOf(r.updatedAt) })) };
  }

  // ------------------------------------------------------------ project grants

  /** The role keys of each grant of the project to one of `orgIds`. */
  async grantedRoleKeys(projectId: string, orgIds: string[]): Promise<string[][]> {
    const grants = await this.db.projectGrant.findMany({ where: { projectId, grantedOrgId: { in: orgIds } }, select: { roleKeys: true } });
    return grants.map((g) => g.roleKeys);
  }

  /** A grant of the project, by its id or by the organization it is granted to. */
  findGrant(projectId: string, by: { id: string } | { grantedOrgId: string }): Promise<ProjectGrantRow | null> {
    const select = { id: true, grantedOrgId: true, roleKeys: true, state: true } as const;
    return "id" in by
      ? this.db.projectGrant.findFirst({ where: { id: by.id, projectId }, select })
      : this.db.projectGrant.findUnique({ where: { projectId_grantedOrgId: { projectId, grantedOrgId: by.grantedOrgId } }, select });
  }

  /** The roles a grant grants now (null when it is gone). */
  async grantRoles(id: string): Promise<string[] | null> {
    return (await this.db.projectGrant.findUnique({ where: { id }, select: { roleKeys: true } }))?.roleKeys ?? null;
  }

  async insertGrant(row: { id: string; instanceId: string; projectId: string; grantedOrgId: string; roleKeys: string[]; createdAt: Date }): Promise<void> {
    await unique(this.db.projectGrant.create({ data: { ...row, updatedAt: row.createdAt } }), () =>
      alreadyExists("Errors.Project.Grant.AlreadyExists", "the project is already granted to this organization"),
    );
  }

  async setGrantRoles(id: string, roleKeys: string[], updatedAt: Date): Promise<void> {
    await this.db.projectGrant.update({ where: { id }, data: { roleKeys, updatedAt } });
  }

  /** Takes each of `keys` out of the user grants held through the grant; how many changes were made. */
  async removeRolesFromGrantHolders(id: string, keys: readonly string[], updatedAt: Date): Promise<number> {
    let changed = 0;
    for (const key of keys) {
      changed += await this.db.$executeRaw`UPDATE "UserGrant" SET "roleKeys" = array_remove("roleKeys", ${key}), "updatedAt" = ${updatedAt}
        WHERE "projectGrantId" = ${id} AND ${key} = ANY("roleKeys")`;
    }
    return changed;
  }

  /** Moves the grant to `state` unless it is there already; whether it moved. */
  async setGrantState(id: string, state: ProjectState, updatedAt: Date): Promise<boolean> {
    return (await this.db.projectGrant.updateMany({ where: { id, state: { not: state } }, data: { state, updatedAt } })).count > 0;
  }

  countUserGrantsThrough(id: string): Promise<number> {
    return this.db.userGrant.count({ where: { projectGrantId: id } });
  }

  /** Whether the grant existed. */
  async deleteGrant(id: string): Promise<boolean> {
    return (await this.db.projectGrant.deleteMany({ where: { id } })).count > 0;
  }

  /**
   * Grants the caller sees (of its organizations' projects, or to its organizations) by creation (the id breaking
   * ties), each with its project's and the receiving organization's names; the total bounded (see Page); one
   * statement on the driver (pageOnDriver).
   */
  async grantPage(q: ProjectGrantListQuery): Promise<Paged<ProjectGrantView>> {
    const conditions = q.filters.map(grantCondition);
    const where = [Prisma.sql`g."instanceId" = ${q.instanceId}`, ...conditions.map(([, sql]) => sql)];
    if (q.scope) {
      where.push(Prisma.sql`(g."grantedOrgId" = ANY(${q.scope}::text[])
        OR EXISTS (SELECT 1 FROM "Project" sp WHERE sp."id" = g."projectId" AND sp."orgId" = ANY(${q.scope}::text[])))`);
    }
    const shape = `${conditions.map(([part]) => part).join("")}${q.scope ? "S" : ""}`;
    const list = await pageOnDriver<Omit<ProjectGrantView, "createdAt" | "updatedAt"> & { createdAt: unknown; updatedAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"ProjectGrant" g`,
        alias: "g",
        join: Prisma.sql`JOIN "Project" p ON p."id" = g."projectId" LEFT JOIN "Organization" go ON go."id" = g."grantedOrgId"`,
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`g."id", g."projectId", p."name" AS "projectName", p."orgId" AS "projectOrgId", g."grantedOrgId",
          COALESCE(go."name", '') AS "grantedOrgName", g."roleKeys", g."state"::text AS "state", g."createdAt", g."updatedAt"`,
        order: ["createdAt", "id"],
        name: conditions.length <= NAMED_MAX_FILTERS ? `project_grant_list_${shape || "all"}` : undefined,
      },
      q.page,
    );
    return { ...list, rows: list.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), updatedAt: dateOf(r.updatedAt) })) };
  }
}
