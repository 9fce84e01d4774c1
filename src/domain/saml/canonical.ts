// XML that is its own exclusive canonical form (Exclusive XML Canonicalization 1.0, without comments), for what svc
// signs: each element is written as exc-c14n would write it in place, so the digest of an element is the SHA-256 of
// the very text sent, with no parse, XPath or canonicalization pass. The rules this relies on:
// - a namespace declaration is written only on the element whose own name uses the prefix, unless an ancestor in the
//   output already declared it (callers pass `ns` for exactly those elements), and declarations come before attributes;
// - attributes have no prefix and are sorted by name (code point order; names here are ASCII);
// - empty elements are written as a start and an end tag, no XML declaration, no whitespace between elements;
// - text escapes & < > and CR; attribute values escape & < " TAB LF CR (c14n §2.3), and characters that XML 1.0 does
//   not allow at all are replaced by U+FFFD (they could not be sent in any form).
// xmlsec1, pysaml2, node-saml and samlify verifying these signatures are the proof (test/integration/saml-*.test.ts).
import { createHash, type KeyObject, sign } from "node:crypto";

// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters XML 1.0 forbids are what this finds
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const TEXT_SPECIAL = /[&<>\r]/g;
const ATTR_SPECIAL = /[&<"\t\n\r]/g;
const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#x9;", "\n": "&#xA;", "\r": "&#xD;" };
const escaped = (c: string) => ESCAPES[c] as string;

/** Character content in canonical form. */
export function text(value: string): string {
  return value.replace(NOT_XML, "\uFFFD").replace(TEXT_SPECIAL, escaped);
}

/** An attribute value in canonical form. */
export function attrValue(value: string): string {
  return value.replace(NOT_XML, "\uFFFD").replace(ATTR_SPECIAL, escaped);
}

export type Attrs = Record<string, string | undefined>;

/** A start tag: `ns` is the namespace declaration(s) this element renders (already canonical), attributes sorted. */
export function open(qname: string, attrs: Attrs = {}, ns = ""): string {
  let out = `<${qname}${ns}`;
  for (const name of Object.keys(attrs).sort()) {
    const v = attrs[name];
    if (v !== undefined) out += ` ${name}="${attrValue(v)}"`;
  }
  return `${out}>`;
}

/** A whole element whose content is already canonical markup. */
export const el = (qname: string, attrs: Attrs, content: string, ns = ""): string => `${open(qname, attrs, ns)}${content}</${qname}>`;

/** A whole element with text content. */
export const textEl = (qname: string, attrs: Attrs, value: string, ns = ""): string => el(qname, attrs, text(value), ns);

export const xmlns = (prefix: string, uri: string): string => ` xmlns:${prefix}="${attrValue(uri)}"`;

const DS = "http://www.w3.org/2000/09/xmldsig#";
export const RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256";
const EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#";
const ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";

/** RSA-SHA256 in libuv's thread pool (crypto.sign with a callback), so signing does not hold the event loop. */
export function rsaSha256(data: string, key: KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) => sign("sha256", Buffer.from(data, "utf8"), key, (err, sig) => (err ? reject(err) : resolve(sig))));
}

/** An element split where its enveloped signature goes (right after its Issuer): canonical text before and after. */
export interface Signable {
  id: string;
  head: string;
  tail: string;
}

/**
 * The ds:Signature for an enveloped signature over `s` (RSA-SHA256, SHA-256, exclusive c14n, one Reference to its
 * ID), as written in place (ds declared on Signature), with the certificate in KeyInfo; and the signed element whole.
 */
export async function signEnveloped(s: Signable, key: KeyObject, certBase64: string): Promise<string> {
  const digest = createHash("sha256").update(s.head).update(s.tail).digest("base64");
  const inner =
    el("ds:CanonicalizationMethod", { Algorithm: EXC_C14N }, "") +
    el("ds:SignatureMethod", { Algorithm: RSA_SHA256 }, "") +
    el(
      "ds:Reference",
      { URI: `#${s.id}` },
      el("ds:Transforms", {}, el("ds:Transform", { Algorithm: ENVELOPED }, "") + el("ds:Transform", { Algorithm: EXC_C14N }, "")) +
        el("ds:DigestMethod", { Algorithm: SHA256 }, "") +
        textEl("ds:DigestValue", {}, digest),
    );
  // SignedInfo canonicalized on its own declares ds itself; in place, its parent Signature does.
  const value = await rsaSha256(el("ds:SignedInfo", {}, inner, xmlns("ds", DS)), key);
  const signature = el(
    "ds:Signature",
    {},
    el("ds:SignedInfo", {}, inner) +
      textEl("ds:SignatureValue", {}, value.toString("base64")) +
      el("ds:KeyInfo", {}, el("ds:X509Data", {}, textEl("ds:X509Certificate", {}, certBase64))),
    xmlns("ds", DS),
  );
  return `${s.head}${signature}${s.tail}`;
}
