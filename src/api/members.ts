// Members of the instance and of organizations: the same shape in both
// services (svc.instance.v2 and svc.org.v2 declare the same Member and
// MemberQuery messages), converted once.
import type { MemberQuery as InstanceMemberQuery } from "../../gen/svc/instance/v2/instance_pb.js";
import type { MemberQuery as OrgMemberQuery } from "../../gen/svc/org/v2/org_pb.js";
import { invalidArgument } from "../domain/errors.js";
import type { MemberQuery, MemberView } from "../domain/orgs/members.js";
import { details } from "./convert.js";

export function toMemberQuery(q: InstanceMemberQuery | OrgMemberQuery): MemberQuery {
  const v = q.query;
  switch (v.case) {
    case "userIdQuery":
      return { kind: "userId", userId: v.value.userId };
    case "roleQuery":
      return { kind: "role", role: v.value.role };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

/** A member message's fields (either service's Member). */
export function toMember(m: MemberView) {
  return {
    userId: m.userId,
    details: details(m, m.resourceOwner),
    roles: m.roles,
    preferredLoginName: m.preferredLoginName,
    displayName: m.displayName,
    userOrganizationId: m.userOrgId,
  };
}
