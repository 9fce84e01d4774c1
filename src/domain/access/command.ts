// The events of the access context's aggregates; commands commit them with
// `commit` (audit/events.ts), re-exported here.

import type { EventInput } from "../audit/events.js";

export { commit } from "../audit/events.js";

/** An event about a project, its roles, grants or applications: audited on the project, in its owning organization. */
export function projectEvent(project: { id: string; orgId: string }, type: string, payload: Record<string, unknown>): EventInput {
  return { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, type, payload };
}

/** An event about a user grant, in the organization the grant is held in. */
export function userGrantEvent(grant: { id: string; orgId: string }, type: string, payload: Record<string, unknown>): EventInput {
  return { aggregateType: "user.grant", aggregateId: grant.id, orgId: grant.orgId, type, payload };
}
