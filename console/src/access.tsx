// What the signed-in user may do. The API decides: the console asks once (UserService.ListMyPermissions, the
// caller's instance roles and, per organization it holds roles in, what they allow, from the role table that decides
// every call) and hides what would be refused. One call, and only UserService's descriptors on the first route.
import { createClient } from "@connectrpc/connect";
import { type QueryClient, useQuery } from "@tanstack/react-query";
import { UserService } from "../../gen/svc/user/v2/user_service_pb";
import { claims } from "./auth";
import { transport } from "./transport";

export interface Access {
  userId: string;
  /** The organization the user belongs to. */
  orgId: string;
  /** Instance roles (IAM_OWNER, IAM_OWNER_VIEWER...); empty for organization members. */
  instanceRoles: string[];
  /** Whether the user holds `permission` in `orgId` (instance-wide or through its roles there); without `orgId`: anywhere. */
  can(permission: string, orgId?: string): boolean;
  /** The organizations in which the user holds `permission`: "all" (instance-wide) or their ids. */
  orgsWith(permission: string): "all" | string[];
  users: boolean;
  orgs: boolean;
  projects: boolean;
  events: boolean;
  /** Instance-wide pages: settings, administrators, identity providers, actions. */
  instance: boolean;
  /** Writes instance-wide (IAM_OWNER). */
  instanceWrite: boolean;
}

export function toAccess(mine: {
  userId: string;
  organizationId: string;
  instanceRoles: string[];
  instancePermissions: string[];
  organizations: { organizationId: string; permissions: string[] }[];
}): Access {
  const instance = new Set(mine.instancePermissions);
  const perOrg = new Map(mine.organizations.map((o) => [o.organizationId, new Set(o.permissions)]));
  const can = (permission: string, orgId?: string): boolean => {
    if (instance.has(permission)) return true;
    if (orgId !== undefined) return perOrg.get(orgId)?.has(permission) ?? false;
    for (const set of perOrg.values()) if (set.has(permission)) return true;
    return false;
  };
  return {
    userId: mine.userId || (claims()?.sub ?? ""),
    orgId: mine.organizationId,
    instanceRoles: mine.instanceRoles,
    can,
    orgsWith: (permission) => (instance.has(permission) ? "all" : [...perOrg].filter(([, set]) => set.has(permission)).map(([id]) => id)),
    users: can("user.read"),
    orgs: can("org.read"),
    projects: can("project.read"),
    events: can("events.read"),
    instance: instance.has("iam.member.read"),
    instanceWrite: instance.has("iam.write"),
  };
}

async function probe(): Promise<Access> {
  return toAccess(await createClient(UserService, transport).listMyPermissions({}));
}

/** Asked by main.tsx as soon as the tokens are there, while React and the pages still load. */
let early: Promise<Access> | undefined;
export function startAccess(): void {
  early = probe();
}

const ACCESS = {
  queryKey: ["access"],
  queryFn: () => {
    const answer = early ?? probe();
    early = undefined;
    return answer;
  },
  staleTime: 5 * 60_000,
};

export function useAccess() {
  return useQuery(ACCESS);
}

/** Asked before the first render, so the calls go out while React mounts. */
export function prefetchAccess(client: QueryClient): void {
  void client.prefetchQuery(ACCESS);
}
