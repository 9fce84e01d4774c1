// Changing an organization: rename, deactivate/reactivate, delete. An
// organization that holds the last IAM_OWNERs who can act cannot be
// deactivated or deleted. Other organizations that its users administer do
// not hold it back (they took those users as members with its consent; an
// IAM_OWNER gives them new owners).

import type { Store } from "../../store/index.js";
import { invalidateGrantHolders } from "../access/grant-holders.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";
import { queueBackchannelLogout } from "../sessions/backchannel-logout.js";
import { checkIamOwnerKept, iamOwnersLock, lockTx } from "./memberships.js";
import { authorizedOrg, claimName, type OrgView, validateName } from "./orgs.js";

type OrgEvent = { type: string; payload?: Record<string, unknown> };

/**
 * The skeleton of every change of an (already authorized) organization: the change and its event in one
 * transaction; the time of the change.
 */
async function changeOrg(ctx: Ctx, org: OrgView, change: (tx: Store, now: Date) => Promise<OrgEvent>): Promise<Date> {
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      const event = await change(tx, now);
      return { aggregateType: "org", aggregateId: org.id, orgId: org.id, ...event };
    },
    now,
  );
}

/** Renames; the primary domain stays, so users' login names do not change under them. */
export async function updateOrganization(ctx: Ctx, input: { orgId: string; name: string }): Promise<Date> {
  const org = await authorizedOrg(ctx, input.orgId, "org.write");
  const name = validateName(input.name);
  if (name === org.name) return ctx.clock();
  return changeOrg(ctx, org, async (tx, now) => {
    await claimName(ctx, tx, name, org.id);
    await tx.orgs.rename(org.id, name, now);
    // Role claims name the organization each role is held in.
    await invalidateGrantHolders(tx, { orgId: org.id });
    return { type: "org.changed", payload: { name, previousName: org.name } };
  });
}

const LAST_IAM_OWNERS = {
  deactivate: "every IAM_OWNER of the instance belongs to this organization: deactivating it would lock them all out",
  delete: "every IAM_OWNER of the instance belongs to this organization: deleting it would remove them all",
};
/** FailedPrecondition when its users losing their access would leave the instance without an owner who can act. Callers hold iamOwnersLock. */
async function keepOwnersOutside(ctx: Ctx, tx: Store, orgId: string, loss: "deactivate" | "delete"): Promise<void> {
  await checkIamOwnerKept(ctx, tx, { orgId }, LAST_IAM_OWNERS[loss], "Errors.Org.LastInstanceOwners");
}

async function setState(ctx: Ctx, orgId: string, state: OrgView["state"]): Promise<Date> {
  const org = await authorizedOrg(ctx, orgId, "org.write");
  return changeOrg(ctx, org, async (tx, now) => {
    await tx.auth.invalidate({ orgId: org.id });
    // Lock before touching the org row: deleteOrganization takes the same lock, then the row.
    if (state === "INACTIVE") await lockTx(tx, iamOwnersLock(ctx.instanceId));
    // Conditional update: of two concurrent deactivations only one succeeds.
    if (!(await tx.orgs.changeState(org.id, state, now))) {
      throw state === "INACTIVE"
        ? failedPrecondition("Errors.Org.AlreadyInactive", "the organization is already deactivated")
        : failedPrecondition("Errors.Org.NotInactive", "the organization is not deactivated");
    }
    // Roles held in the organization's name, and the roles of its projects (whoever holds them), count only while it
    // is active, for users of any organization.
    await invalidateGrantHolders(tx, { orgId: org.id, orOnItsProjects: true });
    if (state === "INACTIVE") await keepOwnersOutside(ctx, tx, org.id, "deactivate");
    if (state === "ACTIVE") return { type: "org.reactivated" };
    // What its users and applications were issued before the deactivation never comes back with a reactivation, and
    // its users' sessions end, telling the applications they signed into (logout tokens, SAML SOAP LogoutRequests).
    const endedSessions = await endSessionsOf(tx, ctx.instanceId, org.id, now);
    const revokedTokens = await tx.tokens.revokeOrg(org.id, now);
    const removedPats = await tx.credentials.removeAllPats({ orgId: org.id });
    return { type: "org.deactivated", payload: { revokedTokens, removedPats, ...(endedSessions ? { endedSessions } : {}) } };
  });
}

/** Ends the sessions of the organization's users, their applications told first (while the participants exist). */
async function endSessionsOf(tx: Store, instanceId: string, orgId: string, now: Date): Promise<number> {
  await queueBackchannelLogout(tx, instanceId, { orgId }, now);
  return tx.sessions.terminateOfOrg(instanceId, orgId, now);
}

export const deactivateOrganization = (ctx: Ctx, orgId: string) => setState(ctx, orgId, "INACTIVE");
export const reactivateOrganization = (ctx: Ctx, orgId: string) => setState(ctx, orgId, "ACTIVE");

/**
 * Deletes the organization and, by ON DELETE CASCADE, everything it owns:
 * its users (with their sessions, tokens, keys, metadata and memberships anywhere),
 * the memberships held in it, its metadata. Its settings overrides and the
 * grants made in its name on other orgs' projects have no foreign key and are
 * removed explicitly (OrgRepo.remove). Audit events stay.
 */
export async function deleteOrganization(ctx: Ctx, orgId: string): Promise<Date> {
  const org = await authorizedOrg(ctx, orgId, "org.delete");
  return changeOrg(ctx, org, async (tx, now) => {
    await tx.auth.invalidate({ orgId: org.id });
    const instance = await tx.orgs.instance(ctx.instanceId);
    if (instance?.defaultOrgId === org.id) throw failedPrecondition("Errors.Org.Default", "the default organization of the instance cannot be deleted");
    await lockTx(tx, iamOwnersLock(ctx.instanceId));
    await keepOwnersOutside(ctx, tx, org.id, "delete");
    const users = await tx.orgs.countUsers(org.id);
    // Users of other organizations lose the grants held in its name and those on its projects.
    await invalidateGrantHolders(tx, { orgId: org.id, orOnItsProjects: true });
    // Its users' sessions go with them: the applications (of other organizations) they signed into are told first.
    await endSessionsOf(tx, ctx.instanceId, org.id, now);
    await tx.orgs.remove(ctx.instanceId, org.id);
    return { type: "org.removed", payload: { name: org.name, users } };
  });
}
