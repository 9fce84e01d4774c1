// XML and query-string signatures of SAML messages. Verification uses only the certificates registered in the SP's
// metadata (KeyInfo in a message is never read), RSA and digests with SHA-256 or SHA-512 only. An enveloped signature counts only
// when it is the document's one signature, a child of the root, over the root's ID; what is then read is the XML the
// signature covers (xml-crypto's signed reference), never the original tree, so nothing can be wrapped around it.
import { type KeyObject, sign, verify, X509Certificate } from "node:crypto";
import type { Document, Element } from "@xmldom/xmldom";
import { SignedXml } from "xml-crypto";
import { attr, children, NS } from "./xml.js";

export const SIG_ALGS: Record<string, "sha256" | "sha512"> = {
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256": "sha256",
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": "sha512",
};
export const RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256";
const DIGESTS = new Set([SHA256, "http://www.w3.org/2001/04/xmlenc#sha512"]);
const EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#";
const ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";

const pemOf = (base64: string) => `-----BEGIN CERTIFICATE-----\n${base64.replace(/(.{64})/g, "$1\n")}\n-----END CERTIFICATE-----\n`;

function publicKeys(certs: readonly string[]): KeyObject[] {
  return certs.map((b64) => new X509Certificate(Buffer.from(b64, "base64")).publicKey);
}

/** HTTP-Redirect (Bindings §3.4.4.1): the signature over the query octets as received, with a registered certificate. */
export function verifyQuerySignature(octets: string, sigAlg: string, signatureB64: string, certs: readonly string[]): boolean {
  const hash = SIG_ALGS[sigAlg];
  if (!hash) return false;
  const signature = Buffer.from(signatureB64, "base64");
  return publicKeys(certs).some((key) => verify(hash, Buffer.from(octets, "utf8"), key, signature));
}

/** Signs redirect-binding query octets (RSA-SHA256); the signature in base64. */
export function signQuery(octets: string, key: KeyObject): string {
  return sign("sha256", Buffer.from(octets, "utf8"), key).toString("base64");
}

/** signQuery in libuv's thread pool, off the event loop. */
export function signQueryAsync(octets: string, key: KeyObject): Promise<string> {
  return new Promise((resolve, reject) =>
    sign("sha256", Buffer.from(octets, "utf8"), key, (err, signature) => (err ? reject(err) : resolve(signature.toString("base64")))),
  );
}

/** The root's enveloped signature element, or undefined when the document holds none. Throws when it holds another. */
export function envelopedSignature(doc: Document): Element | undefined {
  const all = doc.getElementsByTagNameNS(NS.dsig, "Signature");
  if (all.length === 0) return undefined;
  const root = doc.documentElement as Element;
  const direct = children(root, NS.dsig, "Signature");
  if (all.length !== 1 || direct.length !== 1) throw new Error("the message must hold exactly one signature, on its root element");
  return direct[0];
}

/**
 * Verifies the root's enveloped signature with the registered certificates: RSA-SHA256/512, one reference, to the
 * root's ID. Returns the signed XML (the root without its signature) to read the message from, or undefined.
 */
export function verifyEnveloped(xml: string, doc: Document, signature: Element, certs: readonly string[]): string | undefined {
  return verifyEnvelopedOn(xml, doc.documentElement as Element, signature, certs);
}

/** verifyEnveloped for the signature of `element` (the root, or an Assertion inside a Response): over that element's ID. */
export function verifyEnvelopedOn(xml: string, element: Element, signature: Element, certs: readonly string[]): string | undefined {
  const method = signature.getElementsByTagNameNS(NS.dsig, "SignatureMethod")[0];
  if (!method || !SIG_ALGS[attr(method, "Algorithm") ?? ""]) return undefined;
  const digests = signature.getElementsByTagNameNS(NS.dsig, "DigestMethod");
  for (let i = 0; i < digests.length; i++) if (!DIGESTS.has(attr(digests[i] as Element, "Algorithm") ?? "")) return undefined;
  const refs = signature.getElementsByTagNameNS(NS.dsig, "Reference");
  const id = attr(element, "ID");
  if (refs.length !== 1 || !id || attr(refs[0] as Element, "URI") !== `#${id}`) return undefined;
  for (const cert of certs) {
    const sx = new SignedXml({ publicCert: pemOf(cert), getCertFromKeyInfo: () => null });
    try {
      sx.loadSignature(signature as unknown as Parameters<SignedXml["loadSignature"]>[0]);
      if (!sx.checkSignature(xml)) continue;
    } catch {
      continue;
    }
    const signed = sx.getSignedReferences();
    if (signed.length === 1) return signed[0];
  }
  return undefined;
}

/**
 * Adds an enveloped signature (RSA-SHA256, SHA-256 digest, exclusive c14n) over the element with `id`, placed after
 * that element's Issuer (where the schema wants it), with the certificate in KeyInfo.
 */
/** KeyInfo's X509Data of a certificate, built once per certificate (xml-crypto would parse the PEM per signature). */
const keyInfos = new Map<string, string>();
function keyInfoOf(certPem: string, prefix: string): string {
  const key = `${prefix}\u0000${certPem}`;
  let info = keyInfos.get(key);
  if (info === undefined) {
    const p = prefix ? `${prefix}:` : "";
    const base64 = new X509Certificate(certPem).raw.toString("base64");
    info = `<${p}X509Data><${p}X509Certificate>${base64}</${p}X509Certificate></${p}X509Data>`;
    if (keyInfos.size > 100) keyInfos.clear();
    keyInfos.set(key, info);
  }
  return info;
}

export function signElement(xml: string, id: string, localName: "Assertion" | "Response" | "AuthnRequest", key: KeyObject, certPem: string): string {
  const sx = new SignedXml({
    getKeyInfoContent: (args) => keyInfoOf(certPem, args?.prefix ?? ""),
    // The KeyObject itself: a PEM would be parsed again for every signature (three times the RSA work).
    privateKey: key,
    publicCert: certPem,
    signatureAlgorithm: RSA_SHA256,
    canonicalizationAlgorithm: EXC_C14N,
  });
  // Absolute paths (the Response is the root, its Assertion a child of it): xpath's "//" walks the whole document,
  // and did so twice per signature, costing more than the RSA signature itself.
  const element = localName === "Assertion" ? `/*/*[local-name(.)='Assertion' and @ID='${id}']` : `/*[local-name(.)='${localName}' and @ID='${id}']`;
  sx.addReference({ xpath: element, digestAlgorithm: SHA256, transforms: [ENVELOPED, EXC_C14N] });
  sx.computeSignature(xml, { prefix: "ds", location: { reference: `${element}/*[local-name(.)='Issuer']`, action: "after" } });
  return sx.getSignedXml();
}
