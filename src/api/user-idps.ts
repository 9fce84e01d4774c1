// UserService's external sign-in (intents at identity providers) and the users' links to their accounts there:
// proto ⇄ domain only; the rules are in src/domain/idp.
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { retrieveIntent, startIntent } from "../domain/idp/intents.js";
import { addIdpLink, listIdpLinks, removeIdpLink } from "../domain/idp/links.js";
import { page } from "../domain/list.js";
import { ctxOf, ctxWithSession } from "./connect.js";
import { createdDetails, deleted, listDetails, listPage, ts } from "./convert.js";

const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The HTTP-POST binding's page (Bindings §3.5.4): the form, posted by its script or by the button without one. */
function postForm(p: { url: string; fields: Record<string, string> }): string {
  const inputs = Object.entries(p.fields)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}"/>`)
    .join("");
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Sign-in</title></head><body onload="document.forms[0].submit()"><form method="post" action="${escapeHtml(p.url)}">${inputs}<noscript><button type="submit">Continue</button></noscript></form></body></html>`;
}

type IdpRpcs = "startIdentityProviderIntent" | "retrieveIdentityProviderIntent" | "addIDPLink" | "listIDPLinks" | "removeIDPLink";

export const userIdps: Pick<ServiceImpl<typeof UserService>, IdpRpcs> = {
  async startIdentityProviderIntent(req, hctx) {
    const out = await startIntent(ctxOf(hctx), { idpId: req.idpId, successUrl: req.urls?.successUrl ?? "", failureUrl: req.urls?.failureUrl ?? "" });
    const next = "authUrl" in out.next ? { authUrl: out.next.authUrl } : { postForm: Buffer.from(postForm(out.next.post)) };
    return { details: createdDetails(out.at, out.ownerId), idpIntentId: out.intentId, ...next };
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
    const out = await addIdpLink(ctxWithSession(hctx, req.session), req.userId, {
      idpId: l?.idpId ?? "",
      externalUserId: l?.userId ?? "",
      externalUserName: l?.userName ?? "",
    });
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
    return deleted(await removeIdpLink(ctxWithSession(hctx, req.session), req.userId, req.idpId, req.linkedUserId));
  },
};
