import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Project,
  ProjectFieldName,
  type ProjectGrant,
  type ProjectGrantQuery,
  ProjectGrantSchema,
  type ProjectRole,
  type ProjectRoleQuery,
  ProjectRoleSchema,
  ProjectSchema,
  type ProjectSearchQuery,
  ProjectState,
} from "../../gen/svc/project/v2/project_pb.js";
import type { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import {
  createProjectGrant,
  type ProjectGrantQuery as DomainGrantQuery,
  deactivateProjectGrant,
  deleteProjectGrant,
  listProjectGrants,
  type ProjectGrantView,
  reactivateProjectGrant,
  updateProjectGrant,
} from "../domain/access/project-grants.js";
import {
  addProjectRole,
  createProject,
  deactivateProject,
  deleteProject,
  getProject,
  listProjectRoles,
  listProjects,
  type ProjectQuery,
  type ProjectView,
  type RoleQuery,
  type RoleView,
  reactivateProject,
  removeProjectRole,
  updateProject,
  updateProjectRole,
} from "../domain/access/projects.js";
import { invalidArgument } from "../domain/errors.js";
import { ctxOf } from "./connect.js";
import { changed, deleted, details, enumValue, listDetails, listPage, textMatch, ts } from "./convert.js";

const SORT_FROM: Record<number, "name" | "createdAt"> = {
  [ProjectFieldName.UNSPECIFIED]: "createdAt",
  [ProjectFieldName.NAME]: "name",
  [ProjectFieldName.CREATION_DATE]: "createdAt",
};

const state = (s: "ACTIVE" | "INACTIVE") => (s === "ACTIVE" ? ProjectState.ACTIVE : ProjectState.INACTIVE);
const emptyQuery = () => invalidArgument("Errors.Query.Empty", "a search query must set one filter");

function toProject(p: ProjectView): Project {
  return create(ProjectSchema, {
    id: p.id,
    details: details(p, p.orgId),
    organizationId: p.orgId,
    name: p.name,
    state: state(p.state),
    projectRoleAssertion: p.projectRoleAssertion,
    authorizationRequired: p.authorizationRequired,
    projectAccessRequired: p.projectAccessRequired,
  });
}

function toRole(r: RoleView): ProjectRole {
  return create(ProjectRoleSchema, { projectId: r.projectId, roleKey: r.key, displayName: r.displayName, group: r.group ?? "", details: details(r, r.orgId) });
}

function toGrant(g: ProjectGrantView): ProjectGrant {
  return create(ProjectGrantSchema, {
    id: g.id,
    projectId: g.projectId,
    grantedOrganizationId: g.grantedOrgId,
    roleKeys: g.roleKeys,
    state: state(g.state),
    details: details(g, g.projectOrgId),
    projectName: g.projectName,
    projectOrganizationId: g.projectOrgId,
    grantedOrganizationName: g.grantedOrgName,
  });
}

function toProjectQuery(q: ProjectSearchQuery): ProjectQuery {
  const v = q.query;
  switch (v.case) {
    case "nameQuery":
      return { kind: "name", match: textMatch(v.value.name, v.value.method) };
    case "idsQuery":
      return { kind: "ids", ids: v.value.ids };
    case "organizationIdQuery":
      return { kind: "org", orgId: v.value.organizationId };
    case "grantedOrganizationIdQuery":
      return { kind: "grantedOrg", orgId: v.value.organizationId };
    case undefined:
      throw emptyQuery();
  }
}

function toRoleQuery(q: ProjectRoleQuery): RoleQuery {
  const v = q.query;
  switch (v.case) {
    case "keyQuery":
      return { kind: "key", match: textMatch(v.value.key, v.value.method) };
    case "displayNameQuery":
      return { kind: "displayName", match: textMatch(v.value.displayName, v.value.method) };
    case undefined:
      throw emptyQuery();
  }
}

function toGrantQuery(q: ProjectGrantQuery): DomainGrantQuery {
  const v = q.query;
  switch (v.case) {
    case "projectIdQuery":
      return { kind: "project", projectId: v.value.projectId };
    case "grantedOrganizationIdQuery":
      return { kind: "grantedOrg", orgId: v.value.grantedOrganizationId };
    case "roleKeyQuery":
      return { kind: "roleKey", roleKey: v.value.roleKey };
    case undefined:
      throw emptyQuery();
  }
}

export function projectService(): ServiceImpl<typeof ProjectService> {
  return {
    async createProject(req, hctx) {
      const out = await createProject(ctxOf(hctx), {
        orgId: req.organizationId,
        name: req.name,
        projectRoleAssertion: req.projectRoleAssertion,
        authorizationRequired: req.authorizationRequired,
        projectAccessRequired: req.projectAccessRequired,
      });
      return { projectId: out.id, creationDate: ts(out.createdAt) };
    },
    async getProject(req, hctx) {
      return { project: toProject(await getProject(ctxOf(hctx), req.projectId)) };
    },
    async listProjects(req, hctx) {
      const out = await listProjects(ctxOf(hctx), {
        page: listPage(req.query),
        sort: enumValue(SORT_FROM, req.sortingColumn, "SortingColumn"),
        queries: req.queries.map(toProjectQuery),
      });
      return { details: listDetails(ctxOf(hctx), out), sortingColumn: req.sortingColumn, result: out.projects.map(toProject) };
    },
    async updateProject(req, hctx) {
      return {
        changeDate: ts(
          await updateProject(ctxOf(hctx), {
            projectId: req.projectId,
            name: req.name,
            projectRoleAssertion: req.projectRoleAssertion,
            authorizationRequired: req.authorizationRequired,
            projectAccessRequired: req.projectAccessRequired,
          }),
        ),
      };
    },
    async deactivateProject(req, hctx) {
      return changed(await deactivateProject(ctxOf(hctx), req.projectId));
    },
    async reactivateProject(req, hctx) {
      return changed(await reactivateProject(ctxOf(hctx), req.projectId));
    },
    async deleteProject(req, hctx) {
      return deleted(await deleteProject(ctxOf(hctx), req.projectId));
    },
    async addProjectRole(req, hctx) {
      const input = { projectId: req.projectId, roleKey: req.roleKey, displayName: req.displayName, group: req.group };
      return { creationDate: ts(await addProjectRole(ctxOf(hctx), input)) };
    },
    async listProjectRoles(req, hctx) {
      const out = await listProjectRoles(ctxOf(hctx), { projectId: req.projectId, page: listPage(req.query), queries: req.queries.map(toRoleQuery) });
      return { details: listDetails(ctxOf(hctx), out), result: out.roles.map(toRole) };
    },
    async updateProjectRole(req, hctx) {
      const input = { projectId: req.projectId, roleKey: req.roleKey, displayName: req.displayName, group: req.group };
      return changed(await updateProjectRole(ctxOf(hctx), input));
    },
    async removeProjectRole(req, hctx) {
      return deleted(await removeProjectRole(ctxOf(hctx), { projectId: req.projectId, roleKey: req.roleKey }));
    },
    async createProjectGrant(req, hctx) {
      const out = await createProjectGrant(ctxOf(hctx), {
        projectId: req.projectId,
        grantedOrgId: req.grantedOrganizationId,
        roleKeys: req.roleKeys,
      });
      return { projectGrantId: out.id, creationDate: ts(out.createdAt) };
    },
    async listProjectGrants(req, hctx) {
      const out = await listProjectGrants(ctxOf(hctx), { page: listPage(req.query), queries: req.queries.map(toGrantQuery) });
      return { details: listDetails(ctxOf(hctx), out), result: out.grants.map(toGrant) };
    },
    async updateProjectGrant(req, hctx) {
      const input = { projectId: req.projectId, grantedOrgId: req.grantedOrganizationId, roleKeys: req.roleKeys };
      return changed(await updateProjectGrant(ctxOf(hctx), input));
    },
    async deactivateProjectGrant(req, hctx) {
      return changed(await deactivateProjectGrant(ctxOf(hctx), { projectId: req.projectId, grantedOrgId: req.grantedOrganizationId }));
    },
    async reactivateProjectGrant(req, hctx) {
      return changed(await reactivateProjectGrant(ctxOf(hctx), { projectId: req.projectId, grantedOrgId: req.grantedOrganizationId }));
    },
    async deleteProjectGrant(req, hctx) {
      return deleted(await deleteProjectGrant(ctxOf(hctx), { projectId: req.projectId, grantedOrgId: req.grantedOrganizationId }));
    },
  };
}
