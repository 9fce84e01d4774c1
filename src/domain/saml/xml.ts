// XML for SAML: the one parser (no DOCTYPE, so no entity expansion and nothing fetched; any parse error refuses the
// document), the namespaces, and small readers over xmldom's DOM. Documents are built with the DOM and serialised by
// xmldom, so values are always escaped, never concatenated into markup.
import { DOMImplementation, DOMParser, type Document, type Element, XMLSerializer } from "@xmldom/xmldom";
import { invalidArgument } from "../errors.js";

export const NS = {
  protocol: "urn:oasis:names:tc:SAML:2.0:protocol",
  assertion: "urn:oasis:names:tc:SAML:2.0:assertion",
  metadata: "urn:oasis:names:tc:SAML:2.0:metadata",
  dsig: "http://www.w3.org/2000/09/xmldsig#",
} as const;

export const BINDINGS = {
  post: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST",
  redirect: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect",
  /** SAML SOAP binding (Bindings §3.2): svc's back-channel LogoutRequests, with no browser (soap-logout.ts). */
  soap: "urn:oasis:names:tc:SAML:2.0:bindings:SOAP",
} as const;

// One parser for every document: constructing xmldom's DOMParser with options costs as much as parsing a small
// message, and parseFromString keeps no state between calls (each makes its own reader and handler).
const parser = new DOMParser({
  onError: (level) => {
    if (level !== "warning") throw new Error(level);
  },
});

/** Parses untrusted XML: a DOCTYPE (and so any entity declaration) or any error or fatal error refuses it. */
export function parseXml(text: string, errorId: string, what: string): Document {
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw invalidArgument(errorId, `${what}: a DOCTYPE is not accepted`);
  let doc: Document;
  try {
    doc = parser.parseFromString(text, "text/xml");
  } catch {
    throw invalidArgument(errorId, `${what} is not well-formed XML`);
  }
  if (!doc.documentElement || doc.doctype) throw invalidArgument(errorId, `${what} is not well-formed XML`);
  return doc;
}

/** The element children of `parent` (in namespace `ns` and named `name`, when given). */
export function children(parent: Element, ns?: string, name?: string): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType !== 1) continue;
    const e = n as Element;
    if ((ns === undefined || e.namespaceURI === ns) && (name === undefined || e.localName === name)) out.push(e);
  }
  return out;
}

export const child = (parent: Element, ns: string, name: string): Element | undefined => children(parent, ns, name)[0];

/** The text content of an element, trimmed. */
export const textOf = (e: Element | undefined): string => (e?.textContent ?? "").trim();

/** An attribute's value, or undefined when absent. */
export const attr = (e: Element, name: string): string | undefined => (e.hasAttribute(name) ? (e.getAttribute(name) ?? "") : undefined);

/** A new document whose root is `qualifiedName` in `ns`. */
export function newDocument(ns: string, qualifiedName: string): Document {
  return new DOMImplementation().createDocument(ns, qualifiedName, null);
}

/** Appends a new element `qualifiedName` (in `ns`) to `parent`, with attributes and text; returns it. */
export function add(parent: Element, ns: string, qualifiedName: string, attrs: Record<string, string | undefined> = {}, text?: string): Element {
  const doc = parent.ownerDocument as Document;
  const e = doc.createElementNS(ns, qualifiedName);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  if (text !== undefined) e.appendChild(doc.createTextNode(text));
  parent.appendChild(e);
  return e;
}

export const serialize = (doc: Document): string => new XMLSerializer().serializeToString(doc);
