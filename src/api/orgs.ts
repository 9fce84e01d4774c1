import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type MetadataQuery,
  type Organization,
  OrganizationFieldName,
  OrganizationSchema,
  OrganizationState,
  type SearchQuery,
} from "../../gen/svc/org/v2/org_pb.js";
import type { CreateOrganizationRequest_Admin, OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { addOrgMember, listOrgMembers, removeOrgMember, updateOrgMember } from "../domain/orgs/members.js";
import { createOrganization, type OrgAdminInput } from "../domain/orgs/org-create.js";
import { deactivateOrganization, deleteOrganization, reactivateOrganization, updateOrganization } from "../domain/orgs/org-lifecycle.js";
import { deleteOrgMetadata, listOrgMetadata, type OrgMetadataQuery, setOrgMetadata } from "../domain/orgs/org-metadata.js";
import { getOrganization, listOrganizations, type OrgQuery, type OrgView } from "../domain/orgs/orgs.js";
import { ctxOf } from "./connect.js";
import { changed, createdDetails, deleted, details, enumValue, listDetails, listPage, textMatch, ts } from "./convert.js";
import { toMember, toMemberQuery } from "./members.js";
import { toHumanInput } from "./users.js";

const STATE_FROM: Record<number, OrgView["state"]> = { [OrganizationState.ACTIVE]: "ACTIVE", [OrganizationState.INACTIVE]: "INACTIVE" };
const SORT_FROM: Record<number, "name" | "createdAt"> = {
  [OrganizationFieldName.UNSPECIFIED]: "createdAt",
  [OrganizationFieldName.NAME]: "name",
  [OrganizationFieldName.CREATION_DATE]: "createdAt",
};

function toOrg(o: OrgView): Organization {
  return create(OrganizationSchema, {
    id: o.id,
    details: details(o, o.id),
    state: o.state === "ACTIVE" ? OrganizationState.ACTIVE : OrganizationState.INACTIVE,
    name: o.name,
    primaryDomain: o.primaryDomain,
  });
}

function toQuery(q: SearchQuery): OrgQuery {
  const v = q.query;
  switch (v.case) {
    case "nameQuery":
      return { kind: "name", match: textMatch(v.value.name, v.value.method) };
    case "stateQuery":
      return { kind: "state", state: enumValue(STATE_FROM, v.value.state, "State") };
    case "idQuery":
      return { kind: "id", id: v.value.id };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

function toAdmin(a: CreateOrganizationRequest_Admin): OrgAdminInput {
  switch (a.userType.case) {
    case "userId":
      if (a.username !== undefined) throw invalidArgument("Errors.Org.Admin.Username", "username applies to a new human admin only", { field: "username" });
      return { userId: a.userType.value, roles: a.roles };
    case "human":
      return { human: toHumanInput(a.userType.value), username: a.username, roles: a.roles };
    case undefined:
      throw invalidArgument("Errors.Org.Admin.Missing", "an admin needs a user_id or a human", { field: "admins" });
  }
}

function toMetadataQuery(q: MetadataQuery): OrgMetadataQuery {
  const v = q.query;
  switch (v.case) {
    case "keyQuery":
      return { kind: "key", match: textMatch(v.value.key, v.value.method) };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

export function organizationService(externalUrl: string): ServiceImpl<typeof OrganizationService> {
  const domainHost = new URL(externalUrl).hostname;
  return {
    async createOrganization(req, hctx) {
      const out = await createOrganization(ctxOf(hctx), { name: req.name, admins: req.admins.map(toAdmin), domainHost });
      return {
        organizationId: out.id,
        details: createdDetails(out.createdAt, out.id),
        createdAdmins: out.createdAdminIds.map((userId) => ({ userId })),
      };
    },
    async getOrganizationByID(req, hctx) {
      return { organization: toOrg(await getOrganization(ctxOf(hctx), req.organizationId)) };
    },
    async listOrganizations(req, hctx) {
      const out = await listOrganizations(ctxOf(hctx), {
        page: listPage(req.query),
        sort: enumValue(SORT_FROM, req.sortingColumn, "SortingColumn"),
        queries: req.queries.map(toQuery),
      });
      return { details: listDetails(ctxOf(hctx), out), sortingColumn: req.sortingColumn, result: out.orgs.map(toOrg) };
    },
    async updateOrganization(req, hctx) {
      return changed(await updateOrganization(ctxOf(hctx), { orgId: req.organizationId, name: req.name }));
    },
    async deactivateOrganization(req, hctx) {
      return changed(await deactivateOrganization(ctxOf(hctx), req.organizationId));
    },
    async reactivateOrganization(req, hctx) {
      return changed(await reactivateOrganization(ctxOf(hctx), req.organizationId));
    },
    async deleteOrganization(req, hctx) {
      return deleted(await deleteOrganization(ctxOf(hctx), req.organizationId));
    },
    async setOrganizationMetadata(req, hctx) {
      const metadata = req.metadata.map((m) => ({ key: m.key, value: m.value }));
      return { setDate: ts(await setOrgMetadata(ctxOf(hctx), { orgId: req.organizationId, metadata })) };
    },
    async listOrganizationMetadata(req, hctx) {
      const out = await listOrgMetadata(ctxOf(hctx), {
        orgId: req.organizationId,
        page: listPage(req.query),
        queries: req.queries.map(toMetadataQuery),
      });
      return {
        details: listDetails(ctxOf(hctx), out),
        result: out.entries.map((e) => ({ key: e.key, value: e.value, details: details(e, req.organizationId) })),
      };
    },
    async deleteOrganizationMetadata(req, hctx) {
      return deleted(await deleteOrgMetadata(ctxOf(hctx), { orgId: req.organizationId, keys: req.keys }));
    },
    async addOrganizationMember(req, hctx) {
      return { creationDate: ts(await addOrgMember(ctxOf(hctx), { orgId: req.organizationId, userId: req.userId, roles: req.roles })) };
    },
    async listOrganizationMembers(req, hctx) {
      const out = await listOrgMembers(ctxOf(hctx), {
        orgId: req.organizationId,
        page: listPage(req.query),
        queries: req.queries.map(toMemberQuery),
      });
      return { details: listDetails(ctxOf(hctx), out), result: out.members.map(toMember) };
    },
    async updateOrganizationMember(req, hctx) {
      return changed(await updateOrgMember(ctxOf(hctx), { orgId: req.organizationId, userId: req.userId, roles: req.roles }));
    },
    async removeOrganizationMember(req, hctx) {
      return deleted(await removeOrgMember(ctxOf(hctx), { orgId: req.organizationId, userId: req.userId }));
    },
  };
}
