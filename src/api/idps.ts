// IdentityProviderService: proto ⇄ domain only; the rules are in src/domain/idp/providers.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import { AutoLinkingOption, type ClaimMapping, IdentityProviderType, type Options, SAMLBinding, SAMLNameIDFormat } from "../../gen/svc/idp/v2/idp_pb.js";
import type { AddSAMLProviderRequest, IdentityProviderService, UpdateSAMLProviderRequest } from "../../gen/svc/idp/v2/idp_service_pb.js";
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
import type { SamlBinding, SamlNameIdFormat } from "../domain/idp/saml-config.js";
import { addSamlProvider, type SamlProviderInput, updateSamlProvider } from "../domain/idp/saml-providers.js";
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

const BINDING: Record<number, SamlBinding> = {
  [SAMLBinding.SAML_BINDING_UNSPECIFIED]: "unspecified",
  [SAMLBinding.SAML_BINDING_POST]: "post",
  [SAMLBinding.SAML_BINDING_REDIRECT]: "redirect",
};
const BINDING_OUT: Record<SamlBinding, SAMLBinding> = {
  unspecified: SAMLBinding.SAML_BINDING_UNSPECIFIED,
  post: SAMLBinding.SAML_BINDING_POST,
  redirect: SAMLBinding.SAML_BINDING_REDIRECT,
};
const FORMAT: Record<number, SamlNameIdFormat> = {
  [SAMLNameIDFormat.SAML_NAME_ID_FORMAT_UNSPECIFIED]: "unspecified",
  [SAMLNameIDFormat.SAML_NAME_ID_FORMAT_EMAIL_ADDRESS]: "emailAddress",
  [SAMLNameIDFormat.SAML_NAME_ID_FORMAT_PERSISTENT]: "persistent",
  [SAMLNameIDFormat.SAML_NAME_ID_FORMAT_TRANSIENT]: "transient",
};
const FORMAT_OUT: Record<SamlNameIdFormat, SAMLNameIDFormat> = {
  unspecified: SAMLNameIDFormat.SAML_NAME_ID_FORMAT_UNSPECIFIED,
  emailAddress: SAMLNameIDFormat.SAML_NAME_ID_FORMAT_EMAIL_ADDRESS,
  persistent: SAMLNameIDFormat.SAML_NAME_ID_FORMAT_PERSISTENT,
  transient: SAMLNameIDFormat.SAML_NAME_ID_FORMAT_TRANSIENT,
};

function samlInput(r: AddSAMLProviderRequest | UpdateSAMLProviderRequest): SamlProviderInput {
  const binding = BINDING[r.binding];
  const nameIdFormat = FORMAT[r.nameIdFormat];
  if (!binding) throw invalidArgument("Errors.IDP.Saml.Binding.Invalid", "unknown binding", { field: "binding" });
  if (!nameIdFormat) throw invalidArgument("Errors.IDP.Saml.NameIdFormat.Invalid", "unknown name_id_format", { field: "name_id_format" });
  return {
    name: r.name,
    ...(r.metadata.case === "metadataXml" ? { metadataXml: r.metadata.value } : {}),
    ...(r.metadata.case === "metadataUrl" ? { metadataUrl: r.metadata.value } : {}),
    binding,
    withSignedRequest: r.withSignedRequest,
    nameIdFormat,
    transientMappingAttributeName: r.transientMappingAttributeName,
    options: options(r.options),
    attributeMapping: r.attributeMapping,
  };
}

function toIdp(v: IdpView, instanceId: string) {
  const common = {
    id: v.id,
    details: details(v, v.orgId ?? instanceId),
    organizationId: v.orgId ?? "",
    name: v.name,
    options: { ...v.options, autoLinking: AUTO_LINKING_OUT[v.options.autoLinking] },
  };
  if (v.saml) {
    const s = v.saml;
    const saml = { ...s, binding: BINDING_OUT[s.binding], nameIdFormat: FORMAT_OUT[s.nameIdFormat], attributeMapping: v.claimMapping };
    return { ...common, type: IdentityProviderType.SAML, saml };
  }
  const oidc = { issuer: v.issuer, clientId: v.clientId, scopes: v.scopes, isIdTokenMapping: v.isIdTokenMapping, claimMapping: v.claimMapping };
  return { ...common, type: IdentityProviderType.OIDC, oidc };
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
    async addSAMLProvider(req, hctx) {
      const out = await addSamlProvider(ctxOf(hctx), req.organizationId || null, samlInput(req));
      return { details: createdDetails(out.at, out.ownerId), id: out.id };
    },
    async updateSAMLProvider(req, hctx) {
      const out = await updateSamlProvider(ctxOf(hctx), req.idpId, samlInput(req));
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
