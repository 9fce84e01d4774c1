import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Organization, OrganizationFieldName, OrganizationSchema, OrganizationState, type SearchQuery } from "../../gen/svc/org/v2/org_pb.js";
import type { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { getOrganization, listOrganizations, type OrgQuery, type OrgView } from "../domain/orgs.js";
import { type ApiDeps, domainCtx } from "./connect.js";
import { details, enumValue, listPage, textMatch, ts } from "./convert.js";

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

export function organizationService(deps: ApiDeps): ServiceImpl<typeof OrganizationService> {
  return {
    async getOrganizationByID(req, hctx) {
      return { organization: toOrg(await getOrganization(domainCtx(deps, hctx), req.organizationId)) };
    },
    async listOrganizations(req, hctx) {
      const out = await listOrganizations(domainCtx(deps, hctx), {
        page: listPage(req.query),
        sort: enumValue(SORT_FROM, req.sortingColumn, "SortingColumn"),
        queries: req.queries.map(toQuery),
      });
      return { details: { totalResult: BigInt(out.total), timestamp: ts(deps.clock()) }, sortingColumn: req.sortingColumn, result: out.orgs.map(toOrg) };
    },
  };
}
