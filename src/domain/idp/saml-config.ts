// A SAML 2.0 identity provider as svc's service-provider half keeps it: what its metadata (SAML 2.0 Metadata §2.4.3)
// declares — the entity id, the SSO endpoints per binding, the signing certificates (the only keys its Responses are
// ever verified with) and WantAuthnRequestsSigned — and the provider's settings (binding, signed requests, NameID
// format, the attribute that identifies its users). svc's own URLs as its SP are derived from the provider's id.
import { X509Certificate } from "node:crypto";
import type { Element } from "@xmldom/xmldom";
import { invalidArgument } from "../errors.js";
import { rsaKeyProblem } from "../saml/signatures.js";
import { attr, BINDINGS, child, children, NS, parseXml, textOf } from "../saml/xml.js";
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

function signingCertificates(idp: Element): string[] {
  const out: string[] = [];
  for (const kd of children(idp, NS.metadata, "KeyDescriptor")) {
    const use = attr(kd, "use");
    if (use !== undefined && use !== "signing") continue;
    const keyInfo = child(kd, NS.dsig, "KeyInfo");
    for (const data of keyInfo ? children(keyInfo, NS.dsig, "X509Data") : []) {
      for (const c of children(data, NS.dsig, "X509Certificate")) {
        const b64 = textOf(c).replace(/\s+/g, "");
        let cert: X509Certificate;
        try {
          cert = new X509Certificate(Buffer.from(b64, "base64"));
        } catch {
          throw bad("a KeyDescriptor's X509Certificate is not a certificate");
        }
        const problem = rsaKeyProblem(cert);
        if (problem) throw bad(problem);
        if (!out.includes(b64)) out.push(b64);
      }
    }
  }
  if (out.length === 0) throw bad("no signing certificate: svc verifies the provider's Responses with the certificates of its metadata only");
  if (out.length > MAX_CERTIFICATES) throw bad(`at most ${MAX_CERTIFICATES} signing certificates`);
  return out;
}

/** Reads an EntityDescriptor with one IDPSSODescriptor supporting SAML 2.0. */
export function parseIdpMetadata(xml: Uint8Array): SamlIdpMetadata {
  if (xml.length === 0) throw bad("required");
  if (xml.length > MAX_IDP_METADATA_BYTES) throw bad(`at most ${MAX_IDP_METADATA_BYTES} bytes`);
  const root = parseXml(Buffer.from(xml).toString("utf8"), "Errors.IDP.Saml.Metadata.Invalid", "metadata_xml").documentElement as Element;
  if (root.namespaceURI !== NS.metadata || root.localName !== "EntityDescriptor") throw bad("the root element must be an md:EntityDescriptor");
  const entityId = attr(root, "entityID") ?? "";
  if (!entityId || entityId.length > 1024) throw bad("entityID is required (at most 1024 characters)");
  const idps = children(root, NS.metadata, "IDPSSODescriptor").filter((e) => (attr(e, "protocolSupportEnumeration") ?? "").split(/\s+/).includes(NS.protocol));
  if (idps.length !== 1) throw bad("exactly one IDPSSODescriptor supporting urn:oasis:names:tc:SAML:2.0:protocol is required");
  const idp = idps[0] as Element;
  const out: SamlIdpMetadata = {
    entityId,
    certificates: signingCertificates(idp),
    wantAuthnRequestsSigned: ["true", "1"].includes(attr(idp, "WantAuthnRequestsSigned") ?? ""),
  };
  for (const sso of children(idp, NS.metadata, "SingleSignOnService")) {
    const binding = attr(sso, "Binding");
    if (binding === BINDINGS.redirect && !out.ssoRedirect) out.ssoRedirect = endpoint(attr(sso, "Location") ?? "");
    if (binding === BINDINGS.post && !out.ssoPost) out.ssoPost = endpoint(attr(sso, "Location") ?? "");
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
