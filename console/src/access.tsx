// What the signed-in user may open. The API decides: the console asks once, in parallel, with the cheapest call of
// each area (a list of one), and hides what would be refused. Instance roles come from the instance's members.
import { createClient } from "@connectrpc/connect";
import { type QueryClient, useQuery } from "@tanstack/react-query";
import { EventService } from "../../gen/svc/event/v2/event_service_pb";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb";
import { UserService } from "../../gen/svc/user/v2/user_service_pb";
import { claims } from "./auth";
import { isDenied, transport } from "./transport";

export interface Access {
  userId: string;
  /** Instance roles (IAM_OWNER, IAM_OWNER_VIEWER...); empty for organization members. */
  instanceRoles: string[];
  users: boolean;
  orgs: boolean;
  projects: boolean;
  events: boolean;
  /** Instance-wide pages: settings, administrators, identity providers, actions. */
  instance: boolean;
  /** Writes instance-wide (IAM_OWNER). */
  instanceWrite: boolean;
  /** The organizations the user reads (the first page), for organization pickers. */
  orgCount: number;
}

/** Whether the call is allowed: false when refused, the error otherwise. */
async function allowed(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (err) {
    if (isDenied(err)) return false;
    throw err;
  }
}

async function probe(): Promise<Access> {
  const userId = claims()?.sub ?? "";
  const one = { query: { limit: 1 } };
  const users = createClient(UserService, transport);
  const orgs = createClient(OrganizationService, transport);
  const [members, canUsers, orgList, canProjects, canEvents] = await Promise.all([
    createClient(InstanceService, transport)
      .listInstanceMembers({ queries: [{ query: { case: "userIdQuery", value: { userId } } }] })
      .then((r): string[] => r.result[0]?.roles ?? [])
      .catch((err): string[] => {
        if (isDenied(err)) return [];
        throw err;
      }),
    allowed(() => users.listUsers(one)),
    orgs.listOrganizations(one).catch((err) => {
      if (isDenied(err)) return undefined;
      throw err;
    }),
    allowed(() => createClient(ProjectService, transport).listProjects(one)),
    allowed(() => createClient(EventService, transport).listEvents(one)),
  ]);
  return {
    userId,
    instanceRoles: members,
    users: canUsers,
    orgs: orgList !== undefined,
    orgCount: Number(orgList?.details?.totalResult ?? 0),
    projects: canProjects,
    events: canEvents,
    instance: members.length > 0,
    instanceWrite: members.includes("IAM_OWNER"),
  };
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
