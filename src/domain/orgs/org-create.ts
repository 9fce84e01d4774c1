// Creating an organization with its first administrators (new users or
// existing ones), in one transaction. Bootstrap creates the default
// organization through the same path.

import type { Store } from "../../store/index.js";
import { authorize, ORG_ROLES } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { userNotFound } from "../identity/user-access.js";
import { type CreateUserInput, insertUser, type PreparedUser, prepareUser } from "../identity/users.js";
import { newId } from "../ids.js";
import { insertOrgMember, ORG_OWNER, validateRoles } from "./memberships.js";
import { claimName, orgSlug, validateName } from "./orgs.js";

export const MAX_ADMINS = 20;

export type OrgAdminInput =
  | { userId: string; roles: readonly string[] }
  | { human: NonNullable<CreateUserInput["human"]>; username?: string; roles: readonly string[] };

export interface CreateOrgInput {
  name: string;
  admins: OrgAdminInput[];
  /** Host the generated primary domain ends in (the external URL's host name). */
  domainHost: string;
}
/** slug.host, or slug-2.host, slug-3.host... when taken. Callers hold the names lock (claimName). */
async function freeDomain(ctx: Ctx, tx: Store, name: string, host: string): Promise<string> {
  const slug = orgSlug(name);
  const suffix = `.${host}`;
  const taken = await tx.orgs.domainsLike(ctx.instanceId, slug, suffix);
  for (let n = 1; ; n++) {
    const domain = `${n === 1 ? slug : `${slug}-${n}`}${suffix}`;
    if (!taken.has(domain)) return domain;
  }
}

/** A new organization, validated, its new admins validated and their passwords hashed: ready for insertOrganization. */
export interface PreparedOrg {
  id: string;
  name: string;
  domainHost: string;
  admins: ({ userId: string; roles: string[] } | { user: PreparedUser; roles: string[] })[];
}

/** The slow and failing part of a create, kept out of any transaction. Checks no permission: callers authorize first. */
export async function prepareOrganization(ctx: Ctx, input: CreateOrgInput): Promise<PreparedOrg> {
  const name = validateName(input.name);
  if (input.admins.length > MAX_ADMINS) throw invalidArgument("Errors.Org.Admins.TooMany", `at most ${MAX_ADMINS} admins`, { field: "admins" });
  const admins = input.admins.map((a) => ({ ...a, roles: validateRoles(a.roles.length ? a.roles : [ORG_OWNER], ORG_ROLES) }));
  const existing = admins.flatMap((a) => ("userId" in a ? [a.userId] : []));
  if (existing.some((id) => !id)) throw invalidArgument("Errors.User.Id.Missing", "an admin's user_id is required", { field: "admins" });
  if (new Set(existing).size !== existing.length) throw invalidArgument("Errors.Org.Admin.Duplicate", "an admin is listed twice", { field: "admins" });
  const id = newId();
  const prepared: PreparedOrg["admins"] = [];
  for (const admin of admins) {
    if ("userId" in admin) prepared.push({ userId: admin.userId, roles: admin.roles });
    else prepared.push({ user: await prepareUser(ctx, { orgId: id, username: admin.username, human: admin.human }, id), roles: admin.roles });
  }
  return { id, name, domainHost: input.domainHost, admins: prepared };
}

/** Writes a prepared organization with its admins and events inside a caller's transaction; the ids of the users it created. */
export async function insertOrganization(ctx: Ctx, tx: Store, org: PreparedOrg, now: Date): Promise<string[]> {
  await claimName(ctx, tx, org.name);
  const primaryDomain = await freeDomain(ctx, tx, org.name, org.domainHost);
  // The (instance, name) unique index is the backstop of the check above.
  await tx.orgs.insert({ id: org.id, instanceId: ctx.instanceId, name: org.name, primaryDomain, createdAt: now });
  await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: org.id, orgId: org.id, type: "org.added", payload: { name: org.name, primaryDomain } });
  const created: string[] = [];
  for (const admin of org.admins) {
    let userId: string;
    if ("user" in admin) {
      await insertUser(ctx, tx, admin.user);
      userId = admin.user.data.id as string;
      created.push(userId);
    } else {
      const user = await tx.members.candidate(ctx.instanceId, admin.userId);
      if (!user) throw userNotFound();
      userId = user.id;
    }
    await insertOrgMember(ctx, tx, org.id, userId, admin.roles, now);
  }
  return created;
}

export async function createOrganization(ctx: Ctx, input: CreateOrgInput): Promise<{ id: string; createdAt: Date; createdAdminIds: string[] }> {
  authorize(ctx, "org.create", null);
  const now = ctx.clock();
  const org = await prepareOrganization(ctx, input);
  const createdAdminIds = await ctx.store.transaction((tx) => insertOrganization(ctx, tx, org, now), { timeout: 15_000, maxWait: 10_000 });
  return { id: org.id, createdAt: now, createdAdminIds };
}
