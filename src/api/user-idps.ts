// UserService's external sign-in (intents at identity providers) and the users' links to their accounts there:
// proto ⇄ domain only; the rules are in src/domain/idp.
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { retrieveIntent, startIntent } from "../domain/idp/intents.js";
import { addIdpLink, listIdpLinks, removeIdpLink } from "../domain/idp/links.js";
import { page } from "../domain/list.js";
import { ctxOf } from "./connect.js";
import { createdDetails, deleted, listDetails, listPage, ts } from "./convert.js";

type IdpRpcs = "startIdentityProviderIntent" | "retrieveIdentityProviderIntent" | "addIDPLink" | "listIDPLinks" | "removeIDPLink";

export const userIdps: Pick<ServiceImpl<typeof UserService>, IdpRpcs> = {
  async startIdentityProviderIntent(req, hctx) {
    const out = await startIntent(ctxOf(hctx), { idpId: req.idpId, successUrl: req.urls?.successUrl ?? "", failureUrl: req.urls?.failureUrl ?? "" });
    return { details: createdDetails(out.at, out.ownerId), idpIntentId: out.intentId, authUrl: out.authUrl };
  },
  async retrieveIdentityProviderIntent(req, hctx) {
    const out = await retrieveIntent(ctxOf(hctx), req.idpIntentId, req.idpIntentToken);
    const link = { idpId: out.idpId, userId: out.externalUserId, userName: out.externalUserName };
    return {
      details: createdDetails(out.at, out.ownerId),
      idpInformation: {
        idpId: out.idpId,
        userId: out.externalUserId,
        userName: out.externalUserName,
        rawInformation: out.rawClaims as JsonObject,
        profile: out.profile,
      },
      userId: out.userId ?? "",
      addHumanUser: { ...out.suggestion, organizationId: out.suggestion.orgId, idpLink: link },
    };
  },
  async addIDPLink(req, hctx) {
    const l = req.idpLink;
    const out = await addIdpLink(ctxOf(hctx), req.userId, { idpId: l?.idpId ?? "", externalUserId: l?.userId ?? "", externalUserName: l?.userName ?? "" });
    return { details: { changeDate: ts(out.at), resourceOwner: out.orgId } };
  },
  async listIDPLinks(req, hctx) {
    const ctx = ctxOf(hctx);
    const out = await listIdpLinks(ctx, req.userId, page(listPage(req.query)));
    return {
      details: listDetails(ctx, out),
      result: out.links.map((l) => ({ idpId: l.idpId, userId: l.externalUserId, userName: l.externalUserName })),
    };
  },
  async removeIDPLink(req, hctx) {
    return deleted(await removeIdpLink(ctxOf(hctx), req.userId, req.idpId, req.linkedUserId));
  },
};
