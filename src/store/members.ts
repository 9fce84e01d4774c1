// Organization and instance memberships, and the advisory locks that keep the last owners.
import { Prisma } from "../../gen/prisma/client.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { dateOf, NAMED_MAX_FILTERS, type Paged, pageOnDriver, type Window } from "./paging.js";

export interface MemberRow {
  userId: string;
  roles: string[];
  createdAt: Date;
  updatedAt: Date;
  user: { orgId: string; username: string; displayName: string | null; machineName: string | null; org: { primaryDomain: string } };
}

/** What a list of members is filtered by (every condition must hold). */
export type MemberCondition = { kind: "userId"; userId: string } | { kind: "role"; role: string };

/** The owners an operation would take away: one user, or every user of an organization. */
export type Leaving = { userId: string } | { orgId: string };

/** Who can still act: an active user of an active organization. */
const CAN_ACT = { state: "ACTIVE", org: { state: "ACTIVE" } } as const;

const LOCK_CLASS = 0x737663; // "svc"

/** A condition over the membership `m`, and its letter in the statement's shape name. */
function memberCondition(c: MemberCondition): [string, Prisma.Sql] {
  return c.kind === "userId" ? ["u", Prisma.sql`m."userId" = ${c.userId}`] : ["r", Prisma.sql`${c.role} = ANY(m."roles")`];
}

/** The flat row of a member page (pageOnDriver) as a MemberRow. */
type MemberListRow = Omit<MemberRow, "user" | "createdAt" | "updatedAt"> & {
  createdAt: unknown;
  updatedAt: unknown;
  orgId: string;
  username: string;
  displayName: string | null;
  machineName: string | null;
  primaryDomain: string;
};

/**
 * One page of memberships of `table` whose `scope` column is `scopeId`, by creation (the user id breaking ties), each
 * with its user and the user's organization's domain; the total bounded (see Page); one statement on the driver.
 */
async function memberPage(
  db: Db,
  table: "OrgMember" | "InstanceMember",
  scope: Prisma.Sql,
  conditions: readonly MemberCondition[],
  w: Window,
): Promise<Paged<MemberRow>> {
  const parts = conditions.map(memberCondition);
  const page = await pageOnDriver<MemberListRow>(
    db,
    {
      from: Prisma.sql`${Prisma.raw(`"${table}"`)} m`,
      alias: "m",
      join: Prisma.sql`JOIN "User" u ON u."id" = m."userId" JOIN "Organization" uo ON uo."id" = u."orgId"`,
      where: Prisma.join([scope, ...parts.map(([, sql]) => sql)], " AND "),
      columns: Prisma.sql`m."userId", m."roles", m."createdAt", m."updatedAt", u."orgId", u."username", u."displayName", u."machineName", uo."primaryDomain"`,
      order: ["createdAt", "userId"],
      name:
        parts.length <= NAMED_MAX_FILTERS ? `${table === "OrgMember" ? "org" : "instance"}_member_list_${parts.map(([l]) => l).join("") || "all"}` : undefined,
    },
    w,
  );
  return {
    ...page,
    rows: page.rows.map((r) => ({
      userId: r.userId,
      roles: r.roles,
      createdAt: dateOf(r.createdAt),
      updatedAt: dateOf(r.updatedAt),
      user: { orgId: r.orgId, username: r.username, displayName: r.displayName, machineName: r.machineName, org: { primaryDomain: r.primaryDomain } },
    })),
  };
}

export class MemberRepo {
  constructor(private readonly db: Db) {}

  /**
   * Serialises the transactions that check-then-write one invariant (the last owner, unique org names) across
   * connections and replicas. Released at commit or rollback.
   */
  async lock(key: string): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, hashtext(${key}))`;
  }

  /** The user a membership would be for: any user of the instance. */
  candidate(instanceId: string, userId: string): Promise<{ id: string; orgId: string } | null> {
    return this.db.user.findFirst({ where: { id: userId, instanceId }, select: { id: true, orgId: true } });
  }

  // ---------------------------------------------------------------- organization members

  async orgMemberRoles(orgId: string, userId: string): Promise<string[] | null> {
    const m = await this.db.orgMember.findUnique({ where: { orgId_userId: { orgId, userId } }, select: { roles: true } });
    return m?.roles ?? null;
  }

  async insertOrgMember(row: { orgId: string; userId: string; roles: string[]; createdAt: Date }, onDuplicate: () => Error): Promise<void> {
    await unique(this.db.orgMember.create({ data: { ...row, updatedAt: row.createdAt } }), onDuplicate);
  }

  async setOrgMemberRoles(orgId: string, userId: string, roles: string[], now: Date): Promise<void> {
    await this.db.orgMember.update({ where: { orgId_userId: { orgId, userId } }, data: { roles, updatedAt: now } });
  }

  async deleteOrgMember(orgId: string, userId: string): Promise<void> {
    await this.db.orgMember.delete({ where: { orgId_userId: { orgId, userId } } });
  }

  /** Whether a holder of `role` in `orgId` other than `userId` can still act. */
  async otherActiveHolder(orgId: string, role: string, userId: string): Promise<boolean> {
    const other = await this.db.orgMember.findFirst({
      where: { orgId, roles: { has: role }, userId: { not: userId }, user: CAN_ACT },
      select: { userId: true },
    });
    return other !== null;
  }

  orgMembersPage(orgId: string, conditions: readonly MemberCondition[], w: Window): Promise<Paged<MemberRow>> {
    return memberPage(this.db, "OrgMember", Prisma.sql`m."orgId" = ${orgId}`, conditions, w);
  }

  // ---------------------------------------------------------------- instance members

  async instanceMemberRoles(instanceId: string, userId: string): Promise<string[] | null> {
    const m = await this.db.instanceMember.findUnique({ where: { instanceId_userId: { instanceId, userId } }, select: { roles: true } });
    return m?.roles ?? null;
  }

  async insertInstanceMember(row: { instanceId: string; userId: string; roles: string[]; createdAt: Date }): Promise<void> {
    await this.db.instanceMember.create({ data: { ...row, updatedAt: row.createdAt } });
  }

  async setInstanceMemberRoles(instanceId: string, userId: string, roles: string[], now: Date): Promise<void> {
    await this.db.instanceMember.update({ where: { instanceId_userId: { instanceId, userId } }, data: { roles, updatedAt: now } });
  }

  async deleteInstanceMember(instanceId: string, userId: string): Promise<void> {
    await this.db.instanceMember.delete({ where: { instanceId_userId: { instanceId, userId } } });
  }

  /**
   * Holders of the instance role `role`: how many would leave with `leaving`, and how many of the others can still
   * act. `remaining` is only counted when someone leaves.
   */
  async instanceHolders(instanceId: string, role: string, leaving: Leaving): Promise<{ leaving: number; remaining: number }> {
    const holders: Prisma.InstanceMemberWhereInput = { instanceId, roles: { has: role } };
    const going: Prisma.InstanceMemberWhereInput = "userId" in leaving ? { userId: leaving.userId } : { user: { orgId: leaving.orgId } };
    const affected = await this.db.instanceMember.count({ where: { ...holders, ...going } });
    if (affected === 0) return { leaving: 0, remaining: 0 };
    const remaining = await this.db.instanceMember.count({ where: { ...holders, NOT: going, user: CAN_ACT } });
    return { leaving: affected, remaining };
  }

  instanceMembersPage(instanceId: string, conditions: readonly MemberCondition[], w: Window): Promise<Paged<MemberRow>> {
    return memberPage(this.db, "InstanceMember", Prisma.sql`m."instanceId" = ${instanceId}`, conditions, w);
  }
}
