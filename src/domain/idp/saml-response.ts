// A SAML provider's Response at svc's ACS, checked from the service provider's side (Core §3.2.2, §2.3–2.7; Profiles
// §4.1.4.2–3) with the hardening of svc's IdP half: no DOCTYPE, bounded size, Version 2.0, Destination = the ACS,
// InResponseTo = the intent's AuthnRequest, Issuer = the provider's entity id, Status Success. The Response or its one
// Assertion must be signed (RSA-SHA256/512) and the signature verify with the provider's registered certificates only
// (never KeyInfo); the Assertion is then read from the signed XML itself, never from the tree around it, and a document
// with more than that one Assertion or with signatures elsewhere is refused (signature wrapping). The Assertion's
// Conditions (time window with a small skew, AudienceRestriction = svc's SP entity id), its bearer
// SubjectConfirmation (Recipient, NotOnOrAfter, InResponseTo: the Assertion answers this request) and an AuthnStatement
// are required.
import type { Element } from "@xmldom/xmldom";
import { DomainError } from "../errors.js";
import { verifyEnvelopedOn } from "../saml/signatures.js";
import { attr, child, children, NS, parseXml, textOf } from "../saml/xml.js";

export const RESPONSE_LIMITS = {
  /** The XML of a Response (after base64). */
  xml: 128 * 1024,
  /** The clock difference tolerated with the provider. */
  skewMs: 90_000,
} as const;

const SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success";
const BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer";
/** OneTimeUse holds by itself (an intent takes one answer); ProxyRestriction concerns others. */
const KNOWN_CONDITIONS = new Set(["AudienceRestriction", "OneTimeUse", "ProxyRestriction"]);

/** A refused Response: `code` goes to the login client's failure URL as `error`. */
export class SamlResponseError extends Error {
  constructor(
    readonly code: "invalid_response" | "access_denied",
    message: string,
  ) {
    super(message);
    this.name = "SamlResponseError";
  }
}

const refuse = (message: string) => new SamlResponseError("invalid_response", message);

export interface Expected {
  acsUrl: string;
  spEntityId: string;
  idpEntityId: string;
  requestId: string;
  certificates: readonly string[];
  now: Date;
}

export interface SamlAssertion {
  nameId: string;
  nameIdFormat: string;
  /** Each attribute's values by its Name. */
  attributes: Record<string, string[]>;
}

function parsed(xml: string): Element {
  try {
    return parseXml(xml, "Errors.Saml.Response.Malformed", "the SAMLResponse").documentElement as Element;
  } catch (err) {
    if (err instanceof DomainError) throw refuse(err.message);
    throw err;
  }
}

function instant(e: Element, name: string, required: boolean): number | undefined {
  const raw = attr(e, name);
  if (raw === undefined) {
    if (required) throw refuse(`${e.localName} has no ${name}`);
    return undefined;
  }
  const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(at)) throw refuse(`${e.localName} ${name} is not a UTC dateTime`);
  return at;
}

/** The Response element's own values (checked on the signed copy too, when the Response is signed). */
function checkEnvelope(root: Element, e: Expected): void {
  if (root.namespaceURI !== NS.protocol || root.localName !== "Response") throw refuse("the SAMLResponse must be a samlp:Response");
  if (attr(root, "Version") !== "2.0") throw refuse("the Response's Version must be 2.0");
  if (attr(root, "Destination") !== e.acsUrl) throw refuse("the Response's Destination is not this assertion consumer service");
  if (attr(root, "InResponseTo") !== e.requestId) throw refuse("the Response's InResponseTo is not this sign-in's AuthnRequest");
  const issuer = child(root, NS.assertion, "Issuer");
  if (issuer && textOf(issuer) !== e.idpEntityId) throw refuse("the Response's Issuer is not the identity provider");
}

function checkStatus(root: Element): void {
  const status = child(root, NS.protocol, "Status");
  const top = status && child(status, NS.protocol, "StatusCode");
  const code = top ? (attr(top, "Value") ?? "") : "";
  if (code === SUCCESS) return;
  const second = top && child(top, NS.protocol, "StatusCode");
  const message = textOf(status && child(status, NS.protocol, "StatusMessage")).slice(0, 200);
  const detail = [code, second && attr(second, "Value")].filter(Boolean).join(" / ") || "no status";
  throw new SamlResponseError("access_denied", `the identity provider did not sign the user in: ${detail}${message ? ` (${message})` : ""}`);
}

/** The one Assertion as its signature covers it (the Response's, or its own). */
function signedAssertion(xml: string, root: Element, e: Expected): Element {
  const doc = root.ownerDocument as NonNullable<Element["ownerDocument"]>;
  if (children(root, NS.assertion, "EncryptedAssertion").length) throw refuse("encrypted assertions are not supported");
  const assertions = children(root, NS.assertion, "Assertion");
  if (assertions.length !== 1 || doc.getElementsByTagNameNS(NS.assertion, "Assertion").length !== 1) {
    throw refuse("the Response must hold exactly one Assertion, as a child of the Response");
  }
  const assertion = assertions[0] as Element;
  const onResponse = children(root, NS.dsig, "Signature");
  const onAssertion = children(assertion, NS.dsig, "Signature");
  const all = doc.getElementsByTagNameNS(NS.dsig, "Signature").length;
  if (onResponse.length > 1 || onAssertion.length > 1 || all !== onResponse.length + onAssertion.length) {
    throw refuse("signatures are accepted on the Response and on its Assertion only, one each");
  }
  if (onResponse.length === 0 && onAssertion.length === 0) throw refuse("neither the Response nor its Assertion is signed");
  if (onResponse.length) {
    const signed = verifyEnvelopedOn(xml, root, onResponse[0] as Element, e.certificates);
    if (!signed) throw refuse("the Response's signature does not verify with the identity provider's registered certificates");
    const signedRoot = parsed(signed);
    checkEnvelope(signedRoot, e);
    const inside = children(signedRoot, NS.assertion, "Assertion");
    if (inside.length !== 1) throw refuse("the signed Response must hold exactly one Assertion");
    return inside[0] as Element;
  }
  const signed = verifyEnvelopedOn(xml, assertion, onAssertion[0] as Element, e.certificates);
  if (!signed) throw refuse("the Assertion's signature does not verify with the identity provider's registered certificates");
  return parsed(signed);
}

function checkConditions(a: Element, e: Expected): void {
  const now = e.now.getTime();
  const conditions = child(a, NS.assertion, "Conditions");
  if (!conditions) throw refuse("the Assertion has no Conditions");
  // Core §2.5.1.1: an assertion with a condition svc does not understand is not valid to it.
  const unknown = children(conditions).find((c) => c.namespaceURI !== NS.assertion || !KNOWN_CONDITIONS.has(c.localName ?? ""));
  if (unknown) throw refuse(`the Assertion has a condition this service provider does not understand (${(unknown.localName ?? "").slice(0, 50)})`);
  const notBefore = instant(conditions, "NotBefore", false);
  const notOnOrAfter = instant(conditions, "NotOnOrAfter", true) as number;
  if (notBefore !== undefined && notBefore > now + RESPONSE_LIMITS.skewMs) throw refuse("the Assertion is not valid yet (Conditions NotBefore)");
  if (notOnOrAfter <= now - RESPONSE_LIMITS.skewMs) throw refuse("the Assertion has expired (Conditions NotOnOrAfter)");
  const restrictions = children(conditions, NS.assertion, "AudienceRestriction");
  if (!restrictions.length) throw refuse("the Assertion has no AudienceRestriction");
  for (const r of restrictions) {
    if (!children(r, NS.assertion, "Audience").some((aud) => textOf(aud) === e.spEntityId)) {
      throw refuse("the Assertion's AudienceRestriction does not name this service provider");
    }
  }
}

/** What is wrong with one bearer SubjectConfirmation for this ACS and request ("" when nothing is). */
function confirmationProblem(c: Element, e: Expected): string {
  const data = child(c, NS.assertion, "SubjectConfirmationData");
  if (!data) return "the bearer SubjectConfirmation has no SubjectConfirmationData";
  if (attr(data, "Recipient") !== e.acsUrl) return "the bearer SubjectConfirmation's Recipient is not this assertion consumer service";
  if ((instant(data, "NotOnOrAfter", true) as number) <= e.now.getTime() - RESPONSE_LIMITS.skewMs) {
    return "the bearer SubjectConfirmation has expired (NotOnOrAfter)";
  }
  // Profiles §4.1.4.2: required in answer to an AuthnRequest. Without it a signed Assertion, wrapped in a Response
  // whose envelope is not signed, could answer any sign-in at this ACS while it is valid.
  const inResponseTo = attr(data, "InResponseTo");
  if (inResponseTo === undefined) return "the bearer SubjectConfirmation has no InResponseTo";
  if (inResponseTo !== e.requestId) return "the bearer SubjectConfirmation answers another AuthnRequest";
  return "";
}

/** A bearer SubjectConfirmation for this ACS and request, still valid; the NameID. */
function checkSubject(a: Element, e: Expected): { nameId: string; nameIdFormat: string } {
  const subject = child(a, NS.assertion, "Subject");
  if (!subject) throw refuse("the Assertion has no Subject");
  const bearer = children(subject, NS.assertion, "SubjectConfirmation").filter((c) => attr(c, "Method") === BEARER);
  if (!bearer.length) throw refuse("the Assertion has no bearer SubjectConfirmation");
  const problems = bearer.map((c) => confirmationProblem(c, e));
  if (!problems.includes("")) throw refuse(problems[0] as string);
  const nameId = child(subject, NS.assertion, "NameID");
  return { nameId: textOf(nameId).slice(0, 255), nameIdFormat: nameId ? (attr(nameId, "Format") ?? "") : "" };
}

function attributesOf(a: Element): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const statement of children(a, NS.assertion, "AttributeStatement")) {
    for (const attribute of children(statement, NS.assertion, "Attribute")) {
      const name = (attr(attribute, "Name") ?? "").slice(0, 200);
      if (!name || Object.keys(out).length >= 100) continue;
      const values = children(attribute, NS.assertion, "AttributeValue").map((v) => textOf(v).slice(0, 1000));
      out[name] = [...(out[name] ?? []), ...values].slice(0, 50);
    }
  }
  return out;
}

/** Validates the Response XML; what its Assertion says about the user. Throws SamlResponseError. */
export function validateResponse(xml: string, e: Expected): SamlAssertion {
  if (Buffer.byteLength(xml) > RESPONSE_LIMITS.xml) throw refuse(`the SAMLResponse is larger than ${RESPONSE_LIMITS.xml} bytes`);
  const root = parsed(xml);
  checkEnvelope(root, e);
  checkStatus(root);
  const a = signedAssertion(xml, root, e);
  if (a.namespaceURI !== NS.assertion || a.localName !== "Assertion" || attr(a, "Version") !== "2.0")
    throw refuse("the Assertion must be a SAML 2.0 Assertion");
  if (textOf(child(a, NS.assertion, "Issuer")) !== e.idpEntityId) throw refuse("the Assertion's Issuer is not the identity provider");
  checkConditions(a, e);
  const subject = checkSubject(a, e);
  if (!children(a, NS.assertion, "AuthnStatement").length) throw refuse("the Assertion has no AuthnStatement");
  return { ...subject, attributes: attributesOf(a) };
}
