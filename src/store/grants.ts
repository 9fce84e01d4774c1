// User grants (a user holding roles of a project in an organization's name),
// the role claims tokens carry from them, and the roles a user holds as a
// member of the instance or of organizations.
import { Prisma } from "../../gen/prisma/client.js";
import type { UserGrantQuery, UserGrantView } from "../domain/access/user-grants.js";
import { alreadyExists } from "../domain/errors.js";
import type { Page } from "../domain/list.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver } from "./paging.js";
import { query, statement } from "./sql.js";

export type UserGrantRow = Omit<UserGrantView, "state" | "createdAt" | "updatedAt">;

export type GrantHolders =
  /** Grants on the project; only those through `projectGrantId`, only those holding `roleKey`, when given. */
  | { projectId: string; projectGrantId?: string; roleKey?: string }
  /** Grants held in the organization's name; with `orOnItsProjects`, grants on its projects too. */
  | { orgId: string; orOnItsProjects?: boolean };

/** One user grant as the role claims read it: the organization's name, and the roles its project grant still grants. */
export interface RoleClaimRow {
  projectId: string;
  orgId: string;
  orgName: string;
  roleKeys: string[];
  grantedRoleKeys: string[] | null;
}

/** Roles a user holds as a member: of the instance (null when not a member) and of each organization. */
export interface HeldRoles {
  instance: { roles: string[] } | null;
  orgs: { orgId: string; roles: string[] }[];
}

export interface UserGrantListQuery {
  instanceId: string;
  /** Organization contexts the caller reads in (undefined: all). */
  scope: string[] | undefined;
  filters: UserGrantQuery[];
  page: Page;
}

const SELECT = { id: true, userId: true, orgId: true, projectId: true, projectGrantId: true, roleKeys: true } as const;

function holdersWhere(h: GrantHolders): Prisma.Sql {
  if ("orgId" in h) {
    return h.orOnItsProjects
      ? Prisma.sql`(ug."orgId" = ${h.orgId} OR ug."projectId" IN (SELECT p."id" FROM "Project" p WHERE p."orgId" = ${h.orgId}))`
      : Prisma.sql`ug."orgId" = ${h.orgId}`;
  }
  const throughGrant = h.projectGrantId === undefined ? Prisma.empty : Prisma.sql`AND ug."projectGrantId" = ${h.projectGrantId}`;
  const withRole = h.roleKey === undefined ? Prisma.empty : Prisma.sql`AND ${h.roleKey} = ANY(ug."roleKeys")`;
  return Prisma.sql`ug."projectId" = ${h.projectId} ${throughGrant} ${withRole}`;
}

/** A filter over the grant `g`, and a letter for the statement's shape. */
function userGrantFilter(q: UserGrantQuery): [string, Prisma.Sql] {
  switch (q.kind) {
    case "userId":
      return ["u", Prisma.sql`g."userId" = ${q.userId}`];
    case "projectId":
      return ["p", Prisma.sql`g."projectId" = ${q.projectId}`];
    case "orgId":
      return ["o", Prisma.sql`g."orgId" = ${q.orgId}`];
    case "roleKey":
      return ["r", Prisma.sql`${q.roleKey} = ANY(g."roleKeys")`];
    case "projectGrantId":
      return ["g", Prisma.sql`g."projectGrantId" = ${q.projectGrantId}`];
    case "state":
      return ["s", Prisma.sql`g."state" = ${q.state}::"ResourceState"`];
  }
}

export class UserGrantRepo {
  constructor(readonly db: Db) {}

  find(instanceId: string, id: string): Promise<UserGrantRow | null> {
    return this.db.userGrant.findFirst({ where: { id, instanceId }, select: SELECT });
  }

  async exists(id: string): Promise<boolean> {
    return (await this.db.userGrant.findUnique({ where: { id }, select: { id: true } })) !== null;
  }

  /** Whether the user (a grant's holder-to-be) exists in the instance. */
  /** The organization of a user of the instance, or null. */
  async userOrg(instanceId: string, userId: string): Promise<string | null> {
    return (await this.db.user.findFirst({ where: { id: userId, instanceId }, select: { orgId: true } }))?.orgId ?? null;
  }

  async insert(row: UserGrantRow & { instanceId: string; createdAt: Date }): Promise<void> {
    await unique(this.db.userGrant.create({ data: { ...row, updatedAt: row.createdAt } }), () =>
      alreadyExists("Errors.UserGrant.AlreadyExists", "the user already has a grant on this project for this organization: update it instead"),
    );
  }

  /**
   * Locks the grant's row until the transaction ends (FOR UPDATE) and returns its roles as they are now, or null when it
   * is gone: concurrent updates of one grant (on any replica) then run one after the other, each seeing the last.
   */
  async lockForUpdate(id: string): Promise<string[] | null> {
    const rows = await this.db.$queryRaw<{ roleKeys: string[] }[]>`SELECT "roleKeys" FROM "UserGrant" WHERE id = ${id} FOR UPDATE`;
    return rows[0]?.roleKeys ?? null;
  }

  /** Whether the grant exists (and was changed). */
  async setRoles(id: string, roleKeys: string[], updatedAt: Date): Promise<boolean> {
    return (await this.db.userGrant.updateMany({ where: { id }, data: { roleKeys, updatedAt } })).count > 0;
  }

  /** Moves the grant to `state` unless it is there already; whether it moved. */
  async setState(id: string, state: UserGrantView["state"], updatedAt: Date): Promise<boolean> {
    return (await this.db.userGrant.updateMany({ where: { id, state: { not: state } }, data: { state, updatedAt } })).count > 0;
  }

  /** Whether the grant existed. */
  async delete(id: string): Promise<boolean> {
    return (await this.db.userGrant.deleteMany({ where: { id } })).count > 0;
  }

  /** In creation order (newest first unless `asc`), the total bounded (see Page): one statement on the driver. */
  async page(q: UserGrantListQuery): Promise<Paged<UserGrantView>> {
    const filters = q.filters.map(userGrantFilter);
    const where = [Prisma.sql`g."instanceId" = ${q.instanceId}`, ...filters.map(([, sql]) => sql)];
    if (q.scope) where.push(Prisma.sql`g."orgId" = ANY(${q.scope}::text[])`);
    const shape = `${filters.map(([letter]) => letter).join("")}${q.scope ? "S" : ""}`;
    const page = await pageOnDriver<Omit<UserGrantView, "createdAt" | "updatedAt"> & { createdAt: unknown; updatedAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"UserGrant" g`,
        alias: "g",
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`g."id", g."userId", g."orgId", g."projectId", g."projectGrantId", g."roleKeys", g."state"::text AS "state", g."createdAt", g."updatedAt"`,
        order: ["createdAt", "id"],
        name: filters.length <= NAMED_MAX_FILTERS ? `user_grant_list_${shape || "all"}` : undefined,
      },
      q.page,
    );
    return { ...page, rows: page.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), updatedAt: dateOf(r.updatedAt) })) };
  }

  /** The organizations of the users holding the grants (cached tokens are tagged with their user's organization). */
  async holderOrgs(holders: GrantHolders): Promise<string[]> {
    const orgs = await this.db.$queryRaw<{ orgId: string }[]>`
      SELECT DISTINCT u."orgId" FROM "UserGrant" ug JOIN "User" u ON u."id" = ug."userId" WHERE ${holdersWhere(holders)}`;
    return orgs.map((o) => o.orgId);
  }

  /**
   * The user's active grants on active projects in active organizations (a grant through a project grant only
   * while that grant is active), in one statement: tokens, introspection and userinfo ask for this on every cache
   * miss, so it runs on the driver (src/store/sql.ts).
   */
  roleClaimRows(instanceId: string, userId: string, projectIds?: string[]): Promise<RoleClaimRow[]> {
    const only = projectIds ? Prisma.sql`AND ug."projectId" = ANY(${projectIds}::text[])` : Prisma.empty;
    return query<RoleClaimRow>(
      this.db,
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
  }

  /** The user's instance roles and its roles in `orgId` (its own organization). */
  async heldRoles(instanceId: string, userId: string, orgId: string): Promise<HeldRoles> {
    const [instance, orgs] = await Promise.all([
      this.db.instanceMember.findUnique({ where: { instanceId_userId: { instanceId, userId } }, select: { roles: true } }),
      this.db.orgMember.findMany({ where: { userId, orgId }, select: { orgId: true, roles: true } }),
    ]);
    return { instance, orgs };
  }
}
