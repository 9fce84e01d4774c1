// The one reader of SAML 2.0 metadata (SAML 2.0 Metadata §2.3-2.4): an md:EntityDescriptor of bounded size with
// exactly one role descriptor of the kind asked for (an SP's SPSSODescriptor, an IdP's IDPSSODescriptor) supporting
// SAML 2.0, its entityID, the RSA certificates of its KeyDescriptors by use, and its endpoints by name. What each role
// keeps of it (ACS URLs, SSO endpoints, whether requests are signed) is decided by its caller: the SAML applications
// (sp-metadata.ts) and svc's SAML providers (idp/saml-config.ts).
import { X509Certificate } from "node:crypto";
import type { Element } from "@xmldom/xmldom";
import type { DomainError } from "../errors.js";
import { rsaKeyProblem } from "./signatures.js";
import { attr, child, children, NS, parseXml, textOf } from "./xml.js";

export interface MetadataEndpoint {
  binding: string;
  location: string;
  /** The `index` attribute (indexed endpoints), as written. */
  index?: string;
  /** The `ResponseLocation` attribute (where responses go, when not to `location`). */
  responseLocation?: string;
  isDefault: boolean;
}

export interface EntityMetadata {
  entityId: string;
  role: Element;
  /** Base64 DER of the certificates of KeyDescriptors for signing (or without a use), in order, without repeats. */
  signing: string[];
  /** Base64 DER of the certificates of KeyDescriptors for encryption (or without a use). */
  encryption: string[];
  /** The role's endpoints named `name` (AssertionConsumerService, SingleSignOnService, SingleLogoutService, ...). */
  endpoints(name: string): MetadataEndpoint[];
}

export interface MetadataRules {
  role: "SPSSODescriptor" | "IDPSSODescriptor";
  maxBytes: number;
  /** The error id and field of a refusal. */
  errorId: string;
  field: string;
  /** The error for what is wrong. */
  bad(message: string): DomainError;
}

const MAX_ENTITY_ID = 1024;

function certificates(kd: Element, rules: MetadataRules): string[] {
  const out: string[] = [];
  const keyInfo = child(kd, NS.dsig, "KeyInfo");
  for (const data of keyInfo ? children(keyInfo, NS.dsig, "X509Data") : []) {
    for (const c of children(data, NS.dsig, "X509Certificate")) {
      const b64 = textOf(c).replace(/\s+/g, "");
      if (!b64) continue;
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(Buffer.from(b64, "base64"));
      } catch {
        throw rules.bad("a KeyDescriptor's X509Certificate is not a certificate");
      }
      const problem = rsaKeyProblem(cert);
      if (problem) throw rules.bad(problem);
      out.push(b64);
    }
  }
  return out;
}

export function readEntityMetadata(xml: Uint8Array, rules: MetadataRules): EntityMetadata {
  if (xml.length === 0) throw rules.bad("required");
  if (xml.length > rules.maxBytes) throw rules.bad(`at most ${rules.maxBytes} bytes`);
  const root = parseXml(Buffer.from(xml).toString("utf8"), rules.errorId, rules.field).documentElement as Element;
  if (root.namespaceURI !== NS.metadata || root.localName !== "EntityDescriptor") throw rules.bad("the root element must be an md:EntityDescriptor");
  const entityId = attr(root, "entityID") ?? "";
  if (!entityId || entityId.length > MAX_ENTITY_ID) throw rules.bad(`entityID is required (at most ${MAX_ENTITY_ID} characters)`);
  const roles = children(root, NS.metadata, rules.role).filter((e) => (attr(e, "protocolSupportEnumeration") ?? "").split(/\s+/).includes(NS.protocol));
  if (roles.length !== 1) throw rules.bad(`exactly one ${rules.role} supporting urn:oasis:names:tc:SAML:2.0:protocol is required`);
  const role = roles[0] as Element;
  const signing: string[] = [];
  const encryption: string[] = [];
  for (const kd of children(role, NS.metadata, "KeyDescriptor")) {
    const use = attr(kd, "use");
    for (const cert of certificates(kd, rules)) {
      if ((use === undefined || use === "signing") && !signing.includes(cert)) signing.push(cert);
      if ((use === undefined || use === "encryption") && !encryption.includes(cert)) encryption.push(cert);
    }
  }
  return {
    entityId,
    role,
    signing,
    encryption,
    endpoints: (name) =>
      children(role, NS.metadata, name).map((e) => {
        const index = attr(e, "index");
        const responseLocation = attr(e, "ResponseLocation");
        return {
          binding: attr(e, "Binding") ?? "",
          location: attr(e, "Location") ?? "",
          ...(index !== undefined ? { index } : {}),
          ...(responseLocation !== undefined ? { responseLocation } : {}),
          isDefault: attr(e, "isDefault") === "true",
        };
      }),
  };
}
