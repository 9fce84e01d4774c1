// Organizations, their metadata and the instance row.
import { Prisma } from "../../gen/prisma/client.js";
import { alreadyExists } from "../domain/errors.js";
import type { TextMatch } from "../domain/list.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { countAndPage, dateOf, direction, NAMED_MAX_FILTERS, type Paged, pageOnDriver, slice, textFilter, type Window } from "./paging.js";
import { textSql } from "./user-query.js";

export type OrgState = "ACTIVE" | "INACTIVE";

export interface OrgRow {
  id: string;
  name: string;
  state: OrgState;
  primaryDomain: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What a list of organizations is filtered by (every condition must hold). */
export type OrgCondition = { kind: "name"; match: TextMatch } | { kind: "state"; state: OrgState } | { kind: "id"; id: string };

export interface InstanceRow {
  id: string;
  name: string;
  defaultOrgId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface OrgMetadataRow {
  key: string;
  value: Uint8Array;
  createdAt: Date;
  updatedAt: Date;
}

const ORG_SELECT = { id: true, name: true, state: true, primaryDomain: true, createdAt: true, updatedAt: true } satisfies Prisma.OrganizationSelect;
const INSTANCE_SELECT = { id: true, name: true, defaultOrgId: true, createdAt: true, updatedAt: true } satisfies Prisma.InstanceSelect;
const METADATA_SELECT = { key: true, value: true, createdAt: true, updatedAt: true } satisfies Prisma.OrgMetadataSelect;

const nameTaken = () => alreadyExists("Errors.Org.AlreadyExists", "an organization with this name already exists");

/** A condition over the organization `o`, and its part of the statement's shape name. */
function orgCondition(c: OrgCondition): [string, Prisma.Sql] {
  switch (c.kind) {
    case "name":
      return [`n${c.match.method[0]}${c.match.ignoreCase ? "i" : ""}`, textSql(Prisma.raw('o."name"'), c.match)];
    case "state":
      return ["s", Prisma.sql`o."state" = ${c.state}::"OrgState"`];
    case "id":
      return ["d", Prisma.sql`o."id" = ${c.id}`];
  }
}

export class OrgRepo {
  constructor(private readonly db: Db) {}

  // ---------------------------------------------------------------- organizations

  find(instanceId: string, orgId: string): Promise<OrgRow | null> {
    return this.db.organization.findFirst({ where: { id: orgId, instanceId }, select: ORG_SELECT });
  }

  /**
   * `within` limits the list to those organizations (undefined: all of the instance). By name or creation, the id
   * breaking ties; the total bounded (see Page); one statement on the driver (pageOnDriver).
   */
  async page(
    instanceId: string,
    filter: { within?: readonly string[]; conditions: readonly OrgCondition[]; sort: "name" | "createdAt" },
    w: Window,
  ): Promise<Paged<OrgRow>> {
    const conditions = filter.conditions.map(orgCondition);
    const where = [Prisma.sql`o."instanceId" = ${instanceId}`, ...conditions.map(([, sql]) => sql)];
    if (filter.within) where.push(Prisma.sql`o."id" = ANY(${[...filter.within]}::text[])`);
    const shape = `${conditions.map(([part]) => part).join("_")}${filter.within ? "W" : ""}`;
    const page = await pageOnDriver<Omit<OrgRow, "createdAt" | "updatedAt"> & { createdAt: unknown; updatedAt: unknown }>(
      this.db,
      {
        from: Prisma.sql`"Organization" o`,
        alias: "o",
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`o."id", o."name", o."state"::text AS "state", o."primaryDomain", o."createdAt", o."updatedAt"`,
        order: [filter.sort, "id"],
        name: conditions.length <= NAMED_MAX_FILTERS ? `org_list_${filter.sort}_${shape || "all"}` : undefined,
      },
      w,
    );
    return { ...page, rows: page.rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), updatedAt: dateOf(r.updatedAt) })) };
  }

  /** Whether another organization of the instance has this name, compared case-insensitively. */
  async nameTaken(instanceId: string, name: string, exceptOrgId?: string): Promise<boolean> {
    const clash = await this.db.organization.findFirst({
      where: { instanceId, name: { equals: name, mode: "insensitive" }, ...(exceptOrgId ? { id: { not: exceptOrgId } } : {}) },
      select: { id: true },
    });
    return clash !== null;
  }

  /** The primary domains of the instance that start with `prefix` and end with `suffix`. */
  async domainsLike(instanceId: string, prefix: string, suffix: string): Promise<Set<string>> {
    const rows = await this.db.organization.findMany({
      where: { instanceId, primaryDomain: { startsWith: prefix }, AND: { primaryDomain: { endsWith: suffix } } },
      select: { primaryDomain: true },
    });
    return new Set(rows.map((o) => o.primaryDomain));
  }

  /** AlreadyExists on the (instance, name) or (instance, domain) unique index: the backstop of the name check. */
  async insert(row: { id: string; instanceId: string; name: string; primaryDomain: string; createdAt: Date }): Promise<void> {
    await unique(this.db.organization.create({ data: { ...row, updatedAt: row.createdAt } }), nameTaken);
  }

  async rename(orgId: string, name: string, now: Date): Promise<void> {
    await unique(this.db.organization.update({ where: { id: orgId }, data: { name, updatedAt: now } }), nameTaken);
  }

  /** Conditional: false when the organization is in `state` already (of two concurrent changes one wins). */
  async changeState(orgId: string, state: OrgState, now: Date): Promise<boolean> {
    const { count } = await this.db.organization.updateMany({ where: { id: orgId, state: { not: state } }, data: { state, updatedAt: now } });
    return count > 0;
  }

  countUsers(orgId: string): Promise<number> {
    return this.db.user.count({ where: { orgId } });
  }

  /**
   * Deletes the organization; ON DELETE CASCADE removes what it owns (users, memberships, metadata, projects). What
   * refers to it without a foreign key goes first: its settings overrides, the grants made in its name on other
   * organizations' projects and the project grants it received.
   */
  async remove(instanceId: string, orgId: string): Promise<void> {
    await this.db.setting.deleteMany({ where: { instanceId, ownerId: orgId } });
    await this.db.userGrant.deleteMany({ where: { instanceId, orgId } });
    await this.db.projectGrant.deleteMany({ where: { instanceId, grantedOrgId: orgId } });
    await this.db.organization.delete({ where: { id: orgId } });
  }

  // ---------------------------------------------------------------- metadata

  async setMetadata(orgId: string, entries: readonly { key: string; value: Uint8Array }[], now: Date): Promise<void> {
    for (const m of entries) {
      const value = new Uint8Array(m.value);
      await this.db.orgMetadata.upsert({
        where: { orgId_key: { orgId, key: m.key } },
        create: { orgId, key: m.key, value, createdAt: now, updatedAt: now },
        update: { value, updatedAt: now },
      });
    }
  }

  /** Ordered by key. */
  /** How many metadata entries an organization has and how many bytes their keys and values take. */
  async metadataUsage(orgId: string): Promise<{ entries: number; bytes: number }> {
    const [row] = await this.db.$queryRaw<{ entries: number; bytes: number }[]>`
      SELECT count(*)::int AS "entries", COALESCE(sum(octet_length("key") + octet_length("value")), 0)::int AS "bytes"
      FROM "OrgMetadata" WHERE "orgId" = ${orgId}`;
    return row ?? { entries: 0, bytes: 0 };
  }

  metadataPage(orgId: string, keys: readonly TextMatch[], w: Window): Promise<Paged<OrgMetadataRow>> {
    const where: Prisma.OrgMetadataWhereInput = { orgId, AND: keys.map((m) => ({ key: textFilter(m) })) };
    return countAndPage(
      this.db,
      w,
      (take) => this.db.orgMetadata.count({ where, take }),
      this.db.orgMetadata.findMany({ where, orderBy: { key: direction(w) }, ...slice(w), select: METADATA_SELECT }),
    );
  }

  /** How many of these entries existed (and are gone). */
  async deleteMetadata(orgId: string, keys: readonly string[]): Promise<number> {
    const { count } = await this.db.orgMetadata.deleteMany({ where: { orgId, key: { in: [...keys] } } });
    return count;
  }

  // ---------------------------------------------------------------- instance

  instance(instanceId: string): Promise<InstanceRow | null> {
    return this.db.instance.findUnique({ where: { id: instanceId }, select: INSTANCE_SELECT });
  }

  /** The instance created first (there is one per deployment today). */
  firstInstance(): Promise<{ id: string } | null> {
    return this.db.instance.findFirst({ orderBy: { createdAt: "asc" }, select: { id: true } });
  }

  async insertInstance(row: { id: string; name: string; defaultOrgId: string; createdAt: Date }): Promise<void> {
    await this.db.instance.create({ data: { ...row, updatedAt: row.createdAt } });
  }
}
