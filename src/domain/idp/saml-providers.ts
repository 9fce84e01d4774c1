// IdentityProviderService's SAML providers (AddSAMLProvider, UpdateSAMLProvider): the same permissions and scopes as
// the OpenID Connect providers (idp.write on the instance, or in the organization), registered by metadata posted or
// fetched once from a URL (after the permission check), never fetched again by svc itself.
import { authorize } from "../access/permissions.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { asDomainError, failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { newId } from "../ids.js";
import { existingOrg } from "../orgs/orgs.js";
import { type ClaimMapping, claimMapping, SAML_ATTRIBUTES } from "./claims.js";
import { type IdpOptions, idpEvent, idpNotFound, isLoopback, providerFor, required, validOptions } from "./providers.js";
import {
  MAX_IDP_METADATA_BYTES,
  parseIdpMetadata,
  type SamlBinding,
  type SamlNameIdFormat,
  type SamlProviderConfig,
  type SamlSettings,
} from "./saml-config.js";

export interface SamlProviderInput extends SamlSettings {
  name: string;
  /** The metadata posted, or the URL to fetch it from (one of them on add; neither on update keeps the stored one). */
  metadataXml?: Uint8Array;
  metadataUrl?: string;
  options: IdpOptions;
  attributeMapping?: Partial<ClaimMapping>;
}

const BINDINGS = new Set<SamlBinding>(["unspecified", "post", "redirect"]);
const FORMATS = new Set<SamlNameIdFormat>(["unspecified", "emailAddress", "persistent", "transient"]);
const ATTRIBUTE_NAME = /^[^\s<>"&]{1,200}$/;

async function metadataOf(ctx: Ctx, input: SamlProviderInput, isRequired: boolean): Promise<Uint8Array | undefined> {
  const url = input.metadataUrl?.trim();
  if (input.metadataXml?.length && url) throw invalidArgument("Errors.IDP.Saml.Metadata.Invalid", "give metadata_xml or metadata_url, not both");
  if (input.metadataXml?.length) return input.metadataXml;
  if (!url) {
    if (isRequired) throw invalidArgument("Errors.IDP.Saml.Metadata.Missing", "metadata_xml or metadata_url is required", { field: "metadata_xml" });
    return undefined;
  }
  const field = { field: "metadata_url" };
  const u = url.length <= 2000 && URL.canParse(url) ? new URL(url) : undefined;
  if (!u || !(u.protocol === "https:" || (u.protocol === "http:" && isLoopback(u.hostname))) || u.username || u.password) {
    throw invalidArgument("Errors.IDP.Saml.MetadataUrl.Invalid", "metadata_url must be an absolute https URL (http only on a loopback host)", field);
  }
  if (!ctx.samlMetadata) throw failedPrecondition("Errors.IDP.Saml.MetadataUrl.Unavailable", "fetching metadata is not available here: post metadata_xml");
  try {
    return await ctx.samlMetadata(url, MAX_IDP_METADATA_BYTES);
  } catch (err) {
    // The fetcher speaks of SAML applications' field; the reason is the same here.
    const d = asDomainError(err);
    if (d?.kind !== "InvalidArgument") throw err;
    throw invalidArgument("Errors.IDP.Saml.MetadataUrl.Unavailable", d.message.replace(/^saml\.metadata_url/, "metadata_url"), field);
  }
}

function settings(input: SamlProviderInput, metadataSaysSigned: boolean): SamlSettings {
  if (!BINDINGS.has(input.binding)) throw invalidArgument("Errors.IDP.Saml.Binding.Invalid", "unknown binding", { field: "binding" });
  if (!FORMATS.has(input.nameIdFormat)) throw invalidArgument("Errors.IDP.Saml.NameIdFormat.Invalid", "unknown name_id_format", { field: "name_id_format" });
  const attribute = input.transientMappingAttributeName.trim();
  if (attribute && !ATTRIBUTE_NAME.test(attribute)) {
    throw invalidArgument("Errors.IDP.Saml.MappingAttribute.Invalid", "transient_mapping_attribute_name must be an attribute name", {
      field: "transient_mapping_attribute_name",
    });
  }
  if (input.nameIdFormat === "transient" && !attribute) {
    throw invalidArgument(
      "Errors.IDP.Saml.MappingAttribute.Missing",
      "a transient NameID changes at every sign-in: name the attribute that identifies the provider's users",
      { field: "transient_mapping_attribute_name" },
    );
  }
  return {
    binding: input.binding,
    // The provider's metadata may demand signed requests: then they are signed whatever the setting says.
    withSignedRequest: input.withSignedRequest || metadataSaysSigned,
    nameIdFormat: input.nameIdFormat,
    transientMappingAttributeName: attribute,
  };
}

function config(metadata: Uint8Array, input: SamlProviderInput): SamlProviderConfig {
  const m = parseIdpMetadata(metadata);
  const s = settings(input, m.wantAuthnRequestsSigned);
  if (s.binding === "post" && !m.ssoPost)
    throw invalidArgument("Errors.IDP.Saml.Binding.Unavailable", "the provider's metadata has no HTTP-POST SingleSignOnService", { field: "binding" });
  if (s.binding === "redirect" && !m.ssoRedirect) {
    throw invalidArgument("Errors.IDP.Saml.Binding.Unavailable", "the provider's metadata has no HTTP-Redirect SingleSignOnService", { field: "binding" });
  }
  return { ...m, ...s };
}

const columns = (input: SamlProviderInput, c: SamlProviderConfig) => ({
  name: required(input.name, "name", "Name", 200),
  issuer: c.entityId,
  clientId: "",
  scopes: [],
  isIdTokenMapping: false,
  ...validOptions(input.options),
  claimMapping: claimMapping(input.attributeMapping, SAML_ATTRIBUTES),
  saml: c,
});

async function authorizeWrite(ctx: Ctx, orgId: string | null): Promise<void> {
  if (!orgId) return authorize(ctx, "idp.write", null);
  authorize(ctx, "idp.write", orgId, () => notFound("Errors.Org.NotFound", "organization not found"));
  await existingOrg(ctx, orgId);
}

export async function addSamlProvider(ctx: Ctx, orgId: string | null, input: SamlProviderInput): Promise<{ id: string; at: Date; ownerId: string }> {
  await authorizeWrite(ctx, orgId);
  const metadata = (await metadataOf(ctx, input, true)) as Uint8Array;
  const c = columns(input, config(metadata, input));
  const id = newId();
  const at = await commit(ctx, async (tx, now) => {
    await tx.idps.insert({
      id,
      instanceId: ctx.instanceId,
      orgId,
      type: "saml",
      ...c,
      clientSecretEnc: new Uint8Array(),
      samlMetadata: metadata,
      createdAt: now,
      updatedAt: now,
    });
    return idpEvent(id, orgId, "idp.saml.added", { name: c.name, entityId: c.issuer });
  });
  return { id, at, ownerId: orgId ?? ctx.instanceId };
}

export async function updateSamlProvider(ctx: Ctx, id: string, input: SamlProviderInput): Promise<{ at: Date; ownerId: string }> {
  const row = await providerFor(ctx, id, "idp.write");
  if (row.type !== "saml") throw failedPrecondition("Errors.IDP.TypeMismatch", "the identity provider is not a SAML provider");
  const given = await metadataOf(ctx, input, false);
  const metadata = given ?? row.samlMetadata ?? new Uint8Array();
  const c = columns(input, config(metadata, input));
  const at = await commit(ctx, async (tx, now) => {
    if (!(await tx.idps.update(ctx.instanceId, id, { ...c, ...(given ? { samlMetadata: given } : {}), updatedAt: now }))) throw idpNotFound();
    return idpEvent(id, row.orgId, "idp.saml.changed", { name: c.name, entityId: c.issuer, metadataChanged: Boolean(given) });
  });
  return { at, ownerId: row.orgId ?? ctx.instanceId };
}
