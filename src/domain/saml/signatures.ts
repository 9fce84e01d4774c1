// XML and query-string signatures of SAML messages. Verification uses only the certificates registered in the SP's
// metadata (KeyInfo in a message is never read), RSA and digests with SHA-256 or SHA-512 only. An enveloped signature counts only
// when it is the document's one signature, a child of the root, over the root's ID with the enveloped transform: the
// digest then covers the whole root but the signature, and the message is read from that root, so nothing can be
// wrapped around what was signed. xml-crypto's canonicalizers are used directly (no XPath, no re-parse).
import { createHash, type KeyObject, sign, timingSafeEqual, verify, X509Certificate } from "node:crypto";
import type { Document, Element, Node } from "@xmldom/xmldom";
import { C14nCanonicalization, ExclusiveCanonicalization, SignedXml } from "xml-crypto";
import { findAncestorNsForElement } from "xml-crypto/lib/utils.js";
import { attr, children, NS, textOf } from "./xml.js";

export const SIG_ALGS: Record<string, "sha256" | "sha512"> = {
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256": "sha256",
  "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": "sha512",
};
export const RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256";
const DIGESTS = new Set([SHA256, "http://www.w3.org/2001/04/xmlenc#sha512"]);
const EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#";
const ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";

function publicKeys(certs: readonly string[]): KeyObject[] {
  return certs.map(keyOf);
}

/**
 * Whether `signature` over `data` verifies with one of the registered certificates. On the event loop, deliberately:
 * an RSA public-key operation with a registered key (2048 to 8192 bits, a small exponent: see rsaKeyProblem) costs
 * 20 to 250 µs, and here a round trip through libuv's thread pool costs more CPU than that (moving these checks there
 * cut the bench's SAML responses per second by 18 %). Signing, ten times dearer, runs in the thread pool.
 */
function verifiesWithAny(hash: "sha256" | "sha512", data: Buffer, certs: readonly string[], signature: Buffer): boolean {
  return publicKeys(certs).some((key) => verify(hash, data, key, signature));
}

/** RSA keys svc accepts in a registered certificate: what is wrong with this one ("" when nothing is). */
export function rsaKeyProblem(cert: X509Certificate): string {
  const key = cert.publicKey;
  if (key.asymmetricKeyType !== "rsa") return "certificates must hold RSA keys";
  const { modulusLength = 0, publicExponent = 0n } = key.asymmetricKeyDetails ?? {};
  if (modulusLength < 2048 || modulusLength > 8192) return `RSA keys must have 2048 to 8192 bits (this one has ${modulusLength})`;
  // A large public exponent makes every verification as dear as a signature: the usual 65537, or up to 2^32.
  if (publicExponent < 3n || publicExponent > 0xffffffffn) return "the RSA key's public exponent must be at most 2^32 (65537 as usual)";
  return "";
}

/** HTTP-Redirect (Bindings §3.4.4.1): the signature over the query octets as received, with a registered certificate. */
export function verifyQuerySignature(octets: string, sigAlg: string, signatureB64: string, certs: readonly string[]): boolean {
  const hash = SIG_ALGS[sigAlg];
  if (!hash) return false;
  return verifiesWithAny(hash, Buffer.from(octets, "utf8"), certs, Buffer.from(signatureB64, "base64"));
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

const C14N = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315";
const CANONICALIZERS: Record<string, () => { process(node: Node, options: Record<string, unknown>): string }> = {
  [EXC_C14N]: () => new ExclusiveCanonicalization(),
  [C14N]: () => new C14nCanonicalization(),
};
const TRANSFORMS = new Set([ENVELOPED, EXC_C14N, C14N]);

/** The one child of `parent` named `name` in the dsig namespace; undefined when there is none or several. */
function only(parent: Element, name: string): Element | undefined {
  const found = children(parent, NS.dsig, name);
  return found.length === 1 ? found[0] : undefined;
}

/** What a signature over the root must say: SignedInfo's canonicalization, the algorithms, the one Reference. */
function readSignedInfo(root: Element, signature: Element) {
  const signedInfo = only(signature, "SignedInfo");
  const signatureValue = only(signature, "SignatureValue");
  if (!signedInfo || !signatureValue) return undefined;
  const c14n = attr(only(signedInfo, "CanonicalizationMethod") ?? signedInfo, "Algorithm") ?? "";
  const hash = SIG_ALGS[attr(only(signedInfo, "SignatureMethod") ?? signedInfo, "Algorithm") ?? ""];
  const refs = children(signedInfo, NS.dsig, "Reference");
  const ref = refs[0];
  const id = attr(root, "ID");
  if (!CANONICALIZERS[c14n] || !hash || refs.length !== 1 || !ref || !id || attr(ref, "URI") !== `#${id}`) return undefined;
  const digestMethod = attr(only(ref, "DigestMethod") ?? ref, "Algorithm") ?? "";
  const transformsElement = only(ref, "Transforms");
  const transforms = transformsElement ? children(transformsElement, NS.dsig, "Transform") : [];
  const algorithms = transforms.map((t) => attr(t, "Algorithm") ?? "");
  // The enveloped transform is required (the signature is inside what it signs); then at most one canonicalization.
  if (!DIGESTS.has(digestMethod) || algorithms[0] !== ENVELOPED || algorithms.length > 2 || !algorithms.every((a) => TRANSFORMS.has(a))) return undefined;
  if (algorithms[1] === ENVELOPED) return undefined;
  const last = transforms[1];
  const prefixes = last ? attr(children(last).find((e) => e.localName === "InclusiveNamespaces") ?? last, "PrefixList") : undefined;
  return {
    signedInfo,
    c14n,
    hash,
    signatureValue: Buffer.from(textOf(signatureValue).replace(/\s+/g, ""), "base64"),
    digestHash: digestMethod === SHA256 ? "sha256" : "sha512",
    digestValue: Buffer.from(textOf(only(ref, "DigestValue")).replace(/\s+/g, ""), "base64"),
    // Without a canonicalization transform the node-set becomes octets by inclusive c14n (XML-DSig §4.3.3.2).
    referenceC14n: algorithms[1] ?? C14N,
    inclusivePrefixes: prefixes ? prefixes.split(/\s+/).filter(Boolean) : [],
  };
}

/** Public keys of registered certificates (base64 DER), parsed once. */
const spKeys = new Map<string, KeyObject>();
function keyOf(certBase64: string): KeyObject {
  let key = spKeys.get(certBase64);
  if (!key) {
    key = new X509Certificate(Buffer.from(certBase64, "base64")).publicKey;
    if (spKeys.size > 1000) spKeys.clear();
    spKeys.set(certBase64, key);
  }
  return key;
}

/**
 * Verifies the root's enveloped signature (the document's only signature, a child of the root) with the registered
 * certificates: RSA-SHA256/512 over SignedInfo canonicalized as it says (exclusive or inclusive c14n), one Reference to
 * the root's ID with the enveloped transform, its SHA-256/512 digest over the root without the signature. Returns the
 * root, the signature removed, to read the message from (everything left in it is what was signed), or undefined.
 */
export function verifyEnveloped(doc: Document, signature: Element, certs: readonly string[]): Element | undefined {
  const root = doc.documentElement as Element;
  const info = readSignedInfo(root, signature);
  if (!info) return undefined;
  const canonicalizer = CANONICALIZERS[info.c14n] as () => { process(node: Node, options: Record<string, unknown>): string };
  const signedInfo = canonicalizer().process(info.signedInfo as unknown as Node, { ancestorNamespaces: findAncestorNsForElement(info.signedInfo as never) });
  if (!verifiesWithAny(info.hash, Buffer.from(signedInfo, "utf8"), certs, info.signatureValue)) return undefined;
  root.removeChild(signature);
  const referenced = (CANONICALIZERS[info.referenceC14n] as typeof canonicalizer)().process(root as unknown as Node, {
    inclusiveNamespacesPrefixList: info.inclusivePrefixes,
    ancestorNamespaces: [],
  });
  const digest = createHash(info.digestHash).update(referenced, "utf8").digest();
  return digest.length === info.digestValue.length && timingSafeEqual(digest, info.digestValue) ? root : undefined;
}

/** signQuery in libuv's thread pool, off the event loop. */
export function signQueryAsync(octets: string, key: KeyObject): Promise<string> {
  return new Promise((resolve, reject) =>
    sign("sha256", Buffer.from(octets, "utf8"), key, (err, signature) => (err ? reject(err) : resolve(signature.toString("base64")))),
  );
}

const pemOf = (base64: string) => `-----BEGIN CERTIFICATE-----\n${base64.replace(/(.{64})/g, "$1\n")}\n-----END CERTIFICATE-----\n`;

/**
 * The enveloped signature of `element` (a Response, or the Assertion inside it), verified with xml-crypto against the
 * registered certificates: what the SP half (brokering to an external SAML IdP) uses. Returns the signed XML of the
 * element (what its one Reference covers), to be parsed again and read from, or undefined.
 */
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
