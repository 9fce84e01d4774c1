// svc.app.v2 SamlConfig ⇄ the domain's SAML application settings.
import { create } from "@bufbuild/protobuf";
import { SamlAttributeProfile, type SamlConfig, SamlConfigSchema, SamlNameIdFormat } from "../../gen/svc/app/v2/app_pb.js";
import type {
  SamlAttributeProfile as DomainAttributeProfile,
  SamlNameIdFormat as DomainNameIdFormat,
  SamlAppConfig,
  SamlSettings,
} from "../domain/access/app-settings.js";
import { invalidArgument } from "../domain/errors.js";

const NAME_ID: Record<number, DomainNameIdFormat | undefined> = {
  [SamlNameIdFormat.UNSPECIFIED]: undefined,
  [SamlNameIdFormat.EMAIL_ADDRESS]: "emailAddress",
  [SamlNameIdFormat.PERSISTENT]: "persistent",
  [SamlNameIdFormat.SAML_UNSPECIFIED]: "unspecified",
  [SamlNameIdFormat.TRANSIENT]: "transient",
  [SamlNameIdFormat.PERSISTENT_PAIRWISE]: "pairwise",
};

const PROFILE: Record<number, DomainAttributeProfile | undefined> = {
  [SamlAttributeProfile.UNSPECIFIED]: undefined,
  [SamlAttributeProfile.BASIC]: "basic",
  [SamlAttributeProfile.URN_OID]: "urnOid",
};

export function samlSettings(c: SamlConfig): SamlSettings {
  if (!(c.nameIdFormat in NAME_ID)) {
    throw invalidArgument("Errors.App.name_id_format.Invalid", `unknown name_id_format ${c.nameIdFormat}`, { field: "saml.name_id_format" });
  }
  if (!(c.attributeProfile in PROFILE)) {
    throw invalidArgument("Errors.App.Saml.AttributeProfile.Invalid", `unknown attribute_profile ${c.attributeProfile}`, { field: "saml.attribute_profile" });
  }
  return {
    kind: "saml",
    metadataXml: c.metadataXml,
    metadataUrl: c.metadataUrl || undefined,
    nameIdFormat: NAME_ID[c.nameIdFormat],
    roleKeys: c.roleKeys,
    assertionLifetimeSeconds: c.assertionLifetimeSeconds,
    signResponse: c.signResponse,
    encryptAssertions: c.encryptAssertions,
    attributeProfile: PROFILE[c.attributeProfile],
  };
}

export function samlConfigOf(c: SamlAppConfig): SamlConfig {
  return create(SamlConfigSchema, {
    metadataXml: new TextEncoder().encode(c.metadataXml),
    metadataUrl: c.metadataUrl ?? "",
    nameIdFormat: Number(Object.entries(NAME_ID).find(([, v]) => v === c.nameIdFormat)?.[0] ?? 0),
    roleKeys: c.roleKeys,
    assertionLifetimeSeconds: c.assertionLifetimeSeconds,
    signResponse: c.signResponse,
    encryptAssertions: !!c.encryptAssertions,
    hasEncryptionCertificate: !!c.encryptionCertificate,
    entityId: c.entityId,
    assertionConsumerServices: c.acs.map((a) => ({ url: a.url, binding: a.binding, index: a.index, isDefault: a.isDefault })),
    authnRequestsSigned: c.authnRequestsSigned,
    attributeProfile: c.attributeProfile === "urnOid" ? SamlAttributeProfile.URN_OID : SamlAttributeProfile.BASIC,
    hasSingleLogout: (c.slo ?? []).length > 0,
  });
}
