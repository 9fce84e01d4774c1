// The IdP's metadata (SAML 2.0 Metadata §2.4.3): entity id, the signing certificate(s) (both during a rotation's
// overlap), the SLO and SSO endpoints for both bindings, the NameID formats. Valid against saml-schema-metadata-2.0.xsd.

import { entityIdOf, type SamlIdp, sloUrlOf, ssoUrlOf } from "./runtime.js";
import { add, BINDINGS, NS, newDocument, serialize } from "./xml.js";

export const NAME_ID_FORMATS = {
  emailAddress: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  persistent: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  unspecified: "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
  transient: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
} as const;

export async function idpMetadata(idp: SamlIdp): Promise<string> {
  const certs = await idp.certificates.listed();
  const doc = newDocument(NS.metadata, "md:EntityDescriptor");
  const root = doc.documentElement as NonNullable<typeof doc.documentElement>;
  root.setAttribute("xmlns:ds", NS.dsig);
  root.setAttribute("entityID", entityIdOf(idp.externalUrl));
  const sso = add(root, NS.metadata, "md:IDPSSODescriptor", {
    WantAuthnRequestsSigned: String(idp.wantAuthnRequestsSigned),
    protocolSupportEnumeration: NS.protocol,
  });
  for (const cert of certs) {
    const kd = add(sso, NS.metadata, "md:KeyDescriptor", { use: "signing" });
    const data = add(add(kd, NS.dsig, "ds:KeyInfo"), NS.dsig, "ds:X509Data");
    add(data, NS.dsig, "ds:X509Certificate", {}, cert.base64);
  }
  // Single Logout (Profiles §4.4) at one endpoint for both bindings; the schema puts it before NameIDFormat.
  for (const binding of [BINDINGS.redirect, BINDINGS.post])
    add(sso, NS.metadata, "md:SingleLogoutService", { Binding: binding, Location: sloUrlOf(idp.externalUrl) });
  for (const format of Object.values(NAME_ID_FORMATS)) add(sso, NS.metadata, "md:NameIDFormat", {}, format);
  for (const binding of [BINDINGS.redirect, BINDINGS.post])
    add(sso, NS.metadata, "md:SingleSignOnService", { Binding: binding, Location: ssoUrlOf(idp.externalUrl) });
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(doc)}`;
}

/** The signing certificate (PEM). */
export async function idpCertificatePem(idp: SamlIdp): Promise<string> {
  return (await idp.certificates.active()).pem;
}
