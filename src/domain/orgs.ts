import type { Prisma } from "../../gen/prisma/client.js";
import type { Ctx } from "./context.js";
import { invalidArgument, notFound, permissionDenied } from "./errors.js";
import { page, type TextMatch } from "./list.js";
import { authorize, readableOrgs } from "./permissions.js";
import { likeValue } from "./users.js";

export interface OrgView {
  id: string;
  name: string;
  state: "ACTIVE" | "INACTIVE";
  primaryDomain: string;
  createdAt: Date;
  updatedAt: Date;
}

const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");
const ORG_SELECT = { id: true, name: true, state: true, primaryDomain: true, createdAt: true, updatedAt: true } satisfies Prisma.OrganizationSelect;

export async function getOrganization(ctx: Ctx, orgId: string): Promise<OrgView> {
  const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: ORG_SELECT });
  if (!org) throw orgNotFound();
  authorize(ctx, "org.read", org.id, orgNotFound);
  return org;
}

export type OrgQuery = { kind: "name"; match: TextMatch } | { kind: "state"; state: "ACTIVE" | "INACTIVE" } | { kind: "id"; id: string };

function orgFilter(q: OrgQuery): Prisma.OrganizationWhereInput {
  switch (q.kind) {
    case "name":
      return { name: { [q.match.method]: likeValue(q.match), ...(q.match.ignoreCase ? { mode: "insensitive" as const } : {}) } };
    case "state":
      return { state: q.state };
    case "id":
      if (!q.id) throw invalidArgument("Errors.Query.Id.Missing", "id filter needs an id");
      return { id: q.id };
  }
}

export async function listOrganizations(
  ctx: Ctx,
  input: { page?: { offset?: bigint | number; limit?: number; asc?: boolean }; sort?: "name" | "createdAt"; queries: OrgQuery[] },
): Promise<{ total: number; orgs: OrgView[] }> {
  const p = page(input.page);
  const orgs = readableOrgs(ctx, "org.read");
  if (orgs !== "all" && orgs.length === 0) throw permissionDenied("Errors.Permission.Denied", "missing permission org.read");
  const filters = input.queries.map(orgFilter);
  const where: Prisma.OrganizationWhereInput = { instanceId: ctx.instanceId, ...(orgs === "all" ? {} : { id: { in: orgs } }), AND: filters };
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.organization.count({ where }),
    ctx.db.organization.findMany({ where, orderBy: [{ [input.sort ?? "createdAt"]: dir }, { id: dir }], skip: p.offset, take: p.limit, select: ORG_SELECT }),
  ]);
  return { total, orgs: rows };
}
