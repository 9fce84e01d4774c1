import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type UserGrant, type UserGrantQuery, UserGrantSchema, UserGrantState } from "../../gen/svc/authorization/v2/authorization_pb.js";
import type { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import {
  addUserGrant,
  type UserGrantQuery as DomainQuery,
  deactivateUserGrant,
  listUserGrants,
  reactivateUserGrant,
  removeUserGrant,
  type UserGrantView,
  updateUserGrant,
} from "../domain/access/user-grants.js";
import { invalidArgument } from "../domain/errors.js";
import { ctxOf } from "./connect.js";
import { changed, deleted, details, enumValue, listDetails, listPage, ts } from "./convert.js";

const GRANT_STATES: Record<number, "ACTIVE" | "INACTIVE"> = { [UserGrantState.ACTIVE]: "ACTIVE", [UserGrantState.INACTIVE]: "INACTIVE" };

function toGrant(g: UserGrantView): UserGrant {
  return create(UserGrantSchema, {
    grantId: g.id,
    userId: g.userId,
    organizationId: g.orgId,
    projectId: g.projectId,
    projectGrantId: g.projectGrantId ?? "",
    roleKeys: g.roleKeys,
    details: details(g, g.orgId),
    state: g.state === "ACTIVE" ? UserGrantState.ACTIVE : UserGrantState.INACTIVE,
  });
}

function toQuery(q: UserGrantQuery): DomainQuery {
  const v = q.query;
  switch (v.case) {
    case "userIdFilter":
      return { kind: "userId", userId: v.value.userId };
    case "projectIdFilter":
      return { kind: "projectId", projectId: v.value.projectId };
    case "organizationIdFilter":
      return { kind: "orgId", orgId: v.value.organizationId };
    case "roleKeyFilter":
      return { kind: "roleKey", roleKey: v.value.roleKey };
    case "projectGrantIdFilter":
      return { kind: "projectGrantId", projectGrantId: v.value.projectGrantId };
    case "stateFilter":
      return { kind: "state", state: enumValue(GRANT_STATES, v.value.state, "UserGrant.State") };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

export function authorizationService(): ServiceImpl<typeof AuthorizationService> {
  return {
    async addUserGrant(req, hctx) {
      const out = await addUserGrant(ctxOf(hctx), {
        userId: req.userId,
        projectId: req.projectId,
        orgId: req.organizationId || undefined,
        projectGrantId: req.projectGrantId || undefined,
        roleKeys: req.roleKeys,
      });
      return { grantId: out.id, creationDate: ts(out.createdAt) };
    },
    async listUserGrants(req, hctx) {
      const out = await listUserGrants(ctxOf(hctx), { page: listPage(req.query), queries: req.queries.map(toQuery) });
      return { details: listDetails(ctxOf(hctx), out), result: out.grants.map(toGrant) };
    },
    async updateUserGrant(req, hctx) {
      return changed(await updateUserGrant(ctxOf(hctx), { grantId: req.grantId, userId: req.userId || undefined, roleKeys: req.roleKeys }));
    },
    async deactivateUserGrant(req, hctx) {
      return changed(await deactivateUserGrant(ctxOf(hctx), { grantId: req.grantId, userId: req.userId || undefined }));
    },
    async reactivateUserGrant(req, hctx) {
      return changed(await reactivateUserGrant(ctxOf(hctx), { grantId: req.grantId, userId: req.userId || undefined }));
    },
    async removeUserGrant(req, hctx) {
      return deleted(await removeUserGrant(ctxOf(hctx), { grantId: req.grantId, userId: req.userId || undefined }));
    },
  };
}
