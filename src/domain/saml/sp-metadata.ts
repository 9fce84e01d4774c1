// A service provider's metadata (SAML 2.0 Metadata §2.3.2, §2.4.4): what svc keeps of it when a SAML application is
// registered. Only what the metadata declares is ever used: the ACS URLs (matched exactly), the signing certificates
// that verify its AuthnRequests (never one from a request's KeyInfo) and whether it signs them.
import { X509Certificate } from "node:crypto";
import type { Element } from "@xmldom/xmldom";
import { invalidArgument } from "../errors.js";
import { rsaKeyProblem } from "./signatures.js";
import { attr, BINDINGS, child, children, NS, parseXml, textOf } from "./xml.js";

export interface AssertionConsumerService {
  url: string;
  binding: string;
  index: number;
  isDefault: boolean;
}

export interface SpMetadata {
  entityId: string;
  acs: AssertionConsumerService[];
  /** Base64 DER of the signing certificates. */
  signingCertificates: string[];
  /** Base64 DER of the encryption certificate, kept for encrypted assertions. */
  encryptionCertificate?: string;
  authnRequestsSigned: boolean;
}

export const MAX_METADATA_BYTES = 256 * 1024;
const MAX_ACS = 20;
const MAX_URL = 2000;
const SUPPORTED = new Set<string>([BINDINGS.post, BINDINGS.redirect]);

const bad = (message: string) => invalidArgument("Errors.App.Saml.Metadata.Invalid", `saml.metadata_xml: ${message}`, { field: "saml.metadata_xml" });

function certificate(keyDescriptor: Element): string | undefined {
  const keyInfo = child(keyDescriptor, NS.dsig, "KeyInfo");
  const data = keyInfo && child(keyInfo, NS.dsig, "X509Data");
  const b64 = textOf(data && child(data, NS.dsig, "X509Certificate")).replace(/\s+/g, "");
  if (!b64) return undefined;
  try {
    const problem = rsaKeyProblem(new X509Certificate(Buffer.from(b64, "base64")));
    if (problem) throw bad(problem);
  } catch (err) {
    if (err instanceof Error && "id" in err) throw err;
    throw bad("a KeyDescriptor's X509Certificate is not a certificate");
  }
  return b64;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** https, or http on a loopback host (an SP under development): assertions are bearer tokens. */
function acsUrlAllowed(url: string): boolean {
  if (!url || url.length > MAX_URL || /[\s#]/.test(url) || !URL.canParse(url)) return false;
  const u = new URL(url);
  return u.protocol === "https:" || (u.protocol === "http:" && LOOPBACK.has(u.hostname));
}

function consumerServices(sp: Element): AssertionConsumerService[] {
  const acs: AssertionConsumerService[] = [];
  for (const e of children(sp, NS.metadata, "AssertionConsumerService")) {
    const binding = attr(e, "Binding") ?? "";
    const url = attr(e, "Location") ?? "";
    const index = Number(attr(e, "index"));
    if (!SUPPORTED.has(binding)) continue;
    if (!acsUrlAllowed(url)) throw bad(`ACS Location ${url.slice(0, 100)} must be an absolute https URL (http only on a loopback host), no fragment`);
    if (!Number.isInteger(index) || index < 0 || index > 65535) throw bad("every AssertionConsumerService needs an index (0 to 65535)");
    acs.push({ url, binding, index, isDefault: attr(e, "isDefault") === "true" });
  }
  if (acs.length === 0) throw bad("no AssertionConsumerService with the HTTP-POST or HTTP-Redirect binding");
  if (acs.length > MAX_ACS) throw bad(`at most ${MAX_ACS} AssertionConsumerServices`);
  if (new Set(acs.map((a) => a.index)).size !== acs.length) throw bad("AssertionConsumerService indexes must be unique");
  return acs;
}

/** Reads an EntityDescriptor with one SPSSODescriptor supporting SAML 2.0. */
export function parseSpMetadata(xml: Uint8Array): SpMetadata {
  if (xml.length === 0) throw bad("required");
  if (xml.length > MAX_METADATA_BYTES) throw bad(`at most ${MAX_METADATA_BYTES} bytes`);
  const root = parseXml(Buffer.from(xml).toString("utf8"), "Errors.App.Saml.Metadata.Invalid", "saml.metadata_xml").documentElement as Element;
  if (root.namespaceURI !== NS.metadata || root.localName !== "EntityDescriptor") throw bad("the root element must be an md:EntityDescriptor");
  const entityId = attr(root, "entityID") ?? "";
  if (!entityId || entityId.length > 1024) throw bad("entityID is required (at most 1024 characters)");
  const sps = children(root, NS.metadata, "SPSSODescriptor").filter((e) => (attr(e, "protocolSupportEnumeration") ?? "").split(/\s+/).includes(NS.protocol));
  if (sps.length !== 1) throw bad("exactly one SPSSODescriptor supporting urn:oasis:names:tc:SAML:2.0:protocol is required");
  const sp = sps[0] as Element;
  const signingCertificates: string[] = [];
  let encryptionCertificate: string | undefined;
  for (const kd of children(sp, NS.metadata, "KeyDescriptor")) {
    const use = attr(kd, "use");
    const cert = certificate(kd);
    if (!cert) continue;
    if (use === undefined || use === "signing") signingCertificates.push(cert);
    if ((use === undefined || use === "encryption") && !encryptionCertificate) encryptionCertificate = cert;
  }
  const authnRequestsSigned = attr(sp, "AuthnRequestsSigned") === "true" || attr(sp, "AuthnRequestsSigned") === "1";
  if (authnRequestsSigned && signingCertificates.length === 0) throw bad("AuthnRequestsSigned is true but no signing certificate is given");
  const out: SpMetadata = { entityId, acs: consumerServices(sp), signingCertificates, authnRequestsSigned };
  if (encryptionCertificate) out.encryptionCertificate = encryptionCertificate;
  return out;
}

/** The ACS a Response goes to: the one named by URL (exactly) and binding, or by index, or the default. */
export function chooseAcs(
  registered: readonly AssertionConsumerService[],
  asked: { url?: string; binding?: string; index?: number },
): AssertionConsumerService | undefined {
  if (asked.url !== undefined) {
    const byUrl = registered.filter((a) => a.url === asked.url);
    return asked.binding ? byUrl.find((a) => a.binding === asked.binding) : (byUrl.find((a) => a.binding === BINDINGS.post) ?? byUrl[0]);
  }
  if (asked.index !== undefined) return registered.find((a) => a.index === asked.index);
  return registered.find((a) => a.isDefault) ?? [...registered].sort((a, b) => a.index - b.index)[0];
}
