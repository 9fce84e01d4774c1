// Invalidation for writes that change the role claims of every user holding
// some grants at once (project and project-grant state, roles removed from a
// project or a project grant, deletions cascading to user grants, the state
// and name of the organization grants are held in).
//
// Cached tokens are tagged with their user's own organization, which need not
// be the organization a grant is held in (a user of one org may hold a grant
// in another's name), so the holders' organizations are looked up and each is
// invalidated: one notification per organization however many users.

import { Prisma } from "../../../gen/prisma/client.js";
import type { Store } from "../../store/index.js";

export type GrantHolders =
  /** Grants on the project; only those through `projectGrantId`, only those holding `roleKey`, when given. */
  | { projectId: string; projectGrantId?: string; roleKey?: string }
  /** Grants held in the organization's name; with `orOnItsProjects`, grants on its projects too. */
  | { orgId: string; orOnItsProjects?: boolean };

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

/** Call before the write when it deletes the user grants (the holders must still be readable). */
export async function invalidateGrantHolders(tx: Store, holders: GrantHolders): Promise<void> {
  const orgs = await tx.db.$queryRaw<{ orgId: string }[]>`
    SELECT DISTINCT u."orgId" FROM "UserGrant" ug JOIN "User" u ON u."id" = ug."userId" WHERE ${holdersWhere(holders)}`;
  for (const { orgId } of orgs) await tx.auth.invalidate({ orgId });
}
