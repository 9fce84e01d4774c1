// A SAML 2.0 identity provider as svc's service-provider half keeps it: what its metadata (SAML 2.0 Metadata §2.4.3)
// declares — the entity id, the SSO endpoints per binding, the signing certificates (the only keys its Responses are
// ever verified with) and WantAuthnRequestsSigned — and the provider's settings (binding, signed requests, NameID
// format, the attribute that identifies its users). svc's own URLs as its SP are derived from the provider's id.
import { invalidArgument } from "../errors.js";
import { readEntityMetadata } from "../saml/metadata.js";
import { attr, BINDINGS } from "../saml/xml.js";
import { isLoopback } from "./providers.js";

export type SamlBinding = "unspecified" | "post" | "redirect";
export type SamlNameIdFormat = "unspecified" | "emailAddress" | "persistent" | "transient";

export const NAME_ID_FORMAT_URNS: Record<SamlNameIdFormat, string> = {
  unspecified: "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
  emailAddress: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  persistent: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  transient: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
};

/** What the provider's metadata says. */
export interface SamlIdpMetadata {
  entityId: string;
  ssoRedirect?: string;
  ssoPost?: string;
  /** Base64 DER of the signing certificates (RSA). */
  certificates: string[];
  wantAuthnRequestsSigned: boolean;
}

export interface SamlSettings {
  binding: SamlBinding;
  withSignedRequest: boolean;
  nameIdFormat: SamlNameIdFormat;
  transientMappingAttributeName: string;
}

/** The `saml` column of a SAML provider. */
export type SamlProviderConfig = SamlIdpMetadata & SamlSettings;

export const MAX_IDP_METADATA_BYTES = 256 * 1024;
const MAX_CERTIFICATES = 10;
const FIELD = { field: "metadata_xml" };

const bad = (message: string) => invalidArgument("Errors.IDP.Saml.Metadata.Invalid", `metadata_xml: ${message}`, FIELD);

/** An endpoint svc sends browsers to: https, or http on a loopback host; no fragment, no credentials. */
function endpoint(url: string): string {
  if (!url || url.length > 2000 || !URL.canParse(url)) throw bad(`SingleSignOnService Location ${url.slice(0, 100)} is not an absolute URL`);
  const u = new URL(url);
  if (!(u.protocol === "https:" || (u.protocol === "http:" && isLoopback(u.hostname))) || u.hash || u.username || u.password) {
    throw bad(`SingleSignOnService Location ${url.slice(0, 100)} must be https (http only on a loopback host), without fragment or credentials`);
  }
  return url;
}

/** Reads an EntityDescriptor with one IDPSSODescriptor supporting SAML 2.0 (saml/metadata.ts). */
export function parseIdpMetadata(xml: Uint8Array): SamlIdpMetadata {
  const idp = readEntityMetadata(xml, {
    role: "IDPSSODescriptor",
    maxBytes: MAX_IDP_METADATA_BYTES,
    errorId: "Errors.IDP.Saml.Metadata.Invalid",
    field: "metadata_xml",
    bad,
  });
  if (idp.signing.length === 0) throw bad("no signing certificate: svc verifies the provider's Responses with the certificates of its metadata only");
  if (idp.signing.length > MAX_CERTIFICATES) throw bad(`at most ${MAX_CERTIFICATES} signing certificates`);
  const out: SamlIdpMetadata = {
    entityId: idp.entityId,
    certificates: idp.signing,
    wantAuthnRequestsSigned: ["true", "1"].includes(attr(idp.role, "WantAuthnRequestsSigned") ?? ""),
  };
  for (const sso of idp.endpoints("SingleSignOnService")) {
    if (sso.binding === BINDINGS.redirect && !out.ssoRedirect) out.ssoRedirect = endpoint(sso.location);
    if (sso.binding === BINDINGS.post && !out.ssoPost) out.ssoPost = endpoint(sso.location);
  }
  if (!out.ssoRedirect && !out.ssoPost) throw bad("no SingleSignOnService with the HTTP-Redirect or HTTP-POST binding");
  return out;
}

/** The stored configuration (validated when it was written). */
export function storedSamlConfig(stored: unknown): SamlProviderConfig {
  const s = (stored && typeof stored === "object" ? stored : {}) as Partial<SamlProviderConfig>;
  return {
    entityId: s.entityId ?? "",
    ...(s.ssoRedirect ? { ssoRedirect: s.ssoRedirect } : {}),
    ...(s.ssoPost ? { ssoPost: s.ssoPost } : {}),
    certificates: Array.isArray(s.certificates) ? s.certificates : [],
    wantAuthnRequestsSigned: s.wantAuthnRequestsSigned === true,
    binding: s.binding ?? "unspecified",
    withSignedRequest: s.withSignedRequest === true,
    nameIdFormat: s.nameIdFormat ?? "unspecified",
    transientMappingAttributeName: s.transientMappingAttributeName ?? "",
  };
}

/** The SSO endpoint and binding svc sends its AuthnRequest with. */
export function ssoEndpoint(c: SamlProviderConfig): { binding: "post" | "redirect"; url: string } {
  if (c.binding === "post" && c.ssoPost) return { binding: "post", url: c.ssoPost };
  if (c.binding !== "post" && c.ssoRedirect) return { binding: "redirect", url: c.ssoRedirect };
  if (c.ssoPost) return { binding: "post", url: c.ssoPost };
  return { binding: "redirect", url: c.ssoRedirect as string };
}

/** svc's URLs as the service provider of the provider `idpId`: its metadata URL is also its entity id. */
export const spUrls = (externalUrl: string, idpId: string) => ({
  entityId: `${externalUrl}/idps/${encodeURIComponent(idpId)}/saml/metadata`,
  acsUrl: `${externalUrl}/idps/${encodeURIComponent(idpId)}/saml/acs`,
});
