// What the signed-in user may do. The API decides: the console asks once (UserService.ListMyPermissions, the
// caller's instance roles and, per organization it holds roles in, what they allow, from the role table that decides
// every call) and hides what would be refused.
//
// This one call is made in the Connect protocol's JSON form with fetch rather than through a Connect client: it goes
// out right after the token request, and the first route then needs neither Connect nor UserService's descriptors
// (the descriptors of a service file come whole, with the files it imports: 20 KB gzipped here). Every other call
// of the console goes through the generated descriptors.

import { type QueryClient, useQuery } from "@tanstack/react-query";
import type { ListMyPermissionsResponse } from "../../gen/svc/user/v2/user_service_pb";
import { accessToken, claims, refresh, signIn } from "./auth";
import { settings } from "./config";

/** ListMyPermissionsResponse in proto3 JSON (camelCase names; empty fields are left out). */
type MyPermissionsJson = Partial<Omit<ListMyPermissionsResponse, "$typeName" | "organizations">> & {
  organizations?: { organizationId?: string; roles?: string[]; permissions?: string[] }[];
};

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

export function toAccess(mine: MyPermissionsJson): Access {
  const instance = new Set(mine.instancePermissions ?? []);
  const perOrg = new Map((mine.organizations ?? []).map((o) => [o.organizationId ?? "", new Set(o.permissions ?? [])]));
  const can = (permission: string, orgId?: string): boolean => {
    if (instance.has(permission)) return true;
    if (orgId !== undefined) return perOrg.get(orgId)?.has(permission) ?? false;
    for (const set of perOrg.values()) if (set.has(permission)) return true;
    return false;
  };
  return {
    userId: mine.userId || (claims()?.sub ?? ""),
    orgId: mine.organizationId ?? "",
    instanceRoles: mine.instanceRoles ?? [],
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

/** One unary call in the Connect protocol (JSON); refused as unauthenticated, the tokens are refreshed once. */
async function askPermissions(retried = false): Promise<MyPermissionsJson> {
  const res = await fetch(`${new URL(settings.issuer).origin}/svc.user.v2.UserService/ListMyPermissions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${accessToken() ?? ""}` },
    body: "{}",
  });
  const body = (await res.json().catch(() => ({}))) as MyPermissionsJson & { code?: string; message?: string };
  if (res.ok) return body;
  if (body.code === "unauthenticated" && !retried) {
    try {
      await refresh();
    } catch {
      return signIn();
    }
    return askPermissions(true);
  }
  throw new Error(body.message ?? `HTTP ${res.status}`);
}

async function probe(): Promise<Access> {
  return toAccess(await askPermissions());
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
