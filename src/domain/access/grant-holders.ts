// Invalidation for writes that change the role claims of every user holding
// some grants at once (project and project-grant state, roles removed from a
// project or a project grant, deletions cascading to user grants, the state
// and name of the organization grants are held in).
//
// Cached tokens are tagged with their user's own organization, which need not
// be the organization a grant is held in (a user of one org may hold a grant
// in another's name), so the holders' organizations are looked up and each is
// invalidated: one notification per organization however many users.

import type { GrantHolders } from "../../store/grants.js";
import type { Store } from "../../store/index.js";

export type { GrantHolders } from "../../store/grants.js";

/** Call before the write when it deletes the user grants (the holders must still be readable). */
export async function invalidateGrantHolders(tx: Store, holders: GrantHolders): Promise<void> {
  for (const orgId of await tx.grants.holderOrgs(holders)) await tx.auth.invalidate({ orgId });
}
