// A project's roles (the first 200 by key), and as options of a role picker.
import { useQuery } from "@connectrpc/connect-query";
import type { ProjectRole } from "../../../gen/svc/project/v2/project_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";

export function useRoles(projectId: string) {
  return useQuery(ProjectService.method.listProjectRoles, { projectId, query: { limit: 200, asc: true } });
}

export const roleOptions = (roles: ProjectRole[] | undefined) => (roles ?? []).map((r) => ({ value: r.roleKey, label: r.displayName || r.roleKey }));
