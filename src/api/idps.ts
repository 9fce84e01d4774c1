// IdentityProviderService: proto ⇄ domain only; the rules are in src/domain/idp/providers.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import { AutoLinkingOption, type ClaimMapping, IdentityProviderType, type Options } from "../../gen/svc/idp/v2/idp_pb.js";
import type { IdentityProviderService } from "../../gen/svc/idp/v2/idp_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import {
  type AutoLinking,
  addOidcProvider,
  deleteIdentityProvider,
  getIdentityProvider,
  type IdpOptions,
  type IdpView,
  listIdentityProviders,
  type OidcProviderInput,
  updateOidcProvider,
} from "../domain/idp/providers.js";
import { page } from "../domain/list.js";
import { ctxOf } from "./connect.js";
import { createdDetails, deleted, details, listDetails, listPage, ts } from "./convert.js";

const AUTO_LINKING: Record<number, AutoLinking> = {
  [AutoLinkingOption.UNSPECIFIED]: "unspecified",
  [AutoLinkingOption.USERNAME]: "username",
  [AutoLinkingOption.EMAIL]: "email",
};
const AUTO_LINKING_OUT: Record<AutoLinking, AutoLinkingOption> = {
  unspecified: AutoLinkingOption.UNSPECIFIED,
  username: AutoLinkingOption.USERNAME,
  email: AutoLinkingOption.EMAIL,
};

function options(o: Options | undefined): IdpOptions {
  const autoLinking = AUTO_LINKING[o?.autoLinking ?? 0];
  if (!autoLinking) throw invalidArgument("Errors.IDP.Options.Invalid", "unknown auto_linking", { field: "options.auto_linking" });
  return {
    isLinkingAllowed: o?.isLinkingAllowed ?? false,
    isCreationAllowed: o?.isCreationAllowed ?? false,
    isAutoCreation: o?.isAutoCreation ?? false,
    isAutoUpdate: o?.isAutoUpdate ?? false,
    autoLinking,
  };
}

type ProviderRequest = {
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  isIdTokenMapping: boolean;
  options?: Options;
  claimMapping?: ClaimMapping;
};

const input = (r: ProviderRequest): OidcProviderInput => ({
  name: r.name,
  issuer: r.issuer,
  clientId: r.clientId,
  clientSecret: r.clientSecret,
  scopes: r.scopes,
  isIdTokenMapping: r.isIdTokenMapping,
  options: options(r.options),
  claimMapping: r.claimMapping,
});

function toIdp(v: IdpView, instanceId: string) {
  return {
    id: v.id,
    details: details(v, v.orgId ?? instanceId),
    organizationId: v.orgId ?? "",
    name: v.name,
    type: IdentityProviderType.OIDC,
    options: { ...v.options, autoLinking: AUTO_LINKING_OUT[v.options.autoLinking] },
    oidc: { issuer: v.issuer, clientId: v.clientId, scopes: v.scopes, isIdTokenMapping: v.isIdTokenMapping, claimMapping: v.claimMapping },
  };
}

export function identityProviderService(): ServiceImpl<typeof IdentityProviderService> {
  return {
    async addGenericOIDCProvider(req, hctx) {
      const out = await addOidcProvider(ctxOf(hctx), req.organizationId || null, input(req));
      return { details: createdDetails(out.at, out.ownerId), id: out.id };
    },
    async updateGenericOIDCProvider(req, hctx) {
      const out = await updateOidcProvider(ctxOf(hctx), req.idpId, input(req));
      return { details: { changeDate: ts(out.at), resourceOwner: out.ownerId } };
    },
    async getIdentityProvider(req, hctx) {
      const ctx = ctxOf(hctx);
      return { idp: toIdp(await getIdentityProvider(ctx, req.idpId), ctx.instanceId) };
    },
    async listIdentityProviders(req, hctx) {
      const ctx = ctxOf(hctx);
      const out = await listIdentityProviders(ctx, req.organizationId, page(listPage(req.query)));
      return { details: listDetails(ctx, out), result: out.idps.map((v) => toIdp(v, ctx.instanceId)) };
    },
    async deleteIdentityProvider(req, hctx) {
      return deleted(await deleteIdentityProvider(ctxOf(hctx), req.idpId));
    },
  };
}
