// SAML 2.0 Single Logout over the SOAP binding (Bindings §3.2, SOAP 1.1): how svc tells an SP that a session ended
// when there is no browser to carry the message (DeleteSession, the account page ending another session, a user
// deactivated, locked or deleted, a password change, an organization deactivated or deleted, OIDC end_session, and
// svc's own logout pages too, for SPs that registered a SOAP SingleLogoutService). The outbox delivers it
// (src/actions/saml-logout-delivery.ts); here are the messages:
// - the request: svc's LogoutRequest (logout-messages.ts: the NameID, its Format and the SessionIndex as that SP was
//   given them), enveloped-signed with the IdP's active certificate like every message svc sends, in a SOAP Envelope's
//   Body (§3.2.3.1: nothing else in it, no SOAP headers);
// - the answer: a SOAP Envelope whose Body holds the SP's LogoutResponse, parsed as any untrusted SAML message (no
//   DOCTYPE, size-limited by the caller), InResponseTo the request sent, its Issuer (when given) the SP's entity id,
//   and an enveloped signature, when it has one, verified with the SP's registered certificates only. Unsigned is
//   accepted: Profiles §4.4.4.2 lets the responder authenticate through the binding (TLS to the registered https
//   endpoint). Only a top-level Success status counts as delivered; Requester (the SP refuses this request, e.g. it
//   does not know the subject) is final, anything else is tried again.
import type { Document, Element } from "@xmldom/xmldom";
import { signEnveloped } from "./canonical.js";
import { logoutRequest } from "./logout-messages.js";
import type { IdpCertificate } from "./runtime.js";
import { envelopedSignature, verifyEnveloped } from "./signatures.js";
import { attr, child, children, NS, parseXml, serialize, textOf } from "./xml.js";

export const SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/";
/** The SOAPAction SAML SOAP requests carry (Bindings §3.2.3.3). */
export const SAML_SOAP_ACTION = "http://www.oasis-open.org/committees/security";
const STATUS = "urn:oasis:names:tc:SAML:2.0:status:";

export interface SoapLogoutRequest {
  id: string;
  /** The IdP's entity id. */
  issuer: string;
  /** The SP's SOAP SingleLogoutService. */
  destination: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
  notOnOrAfter: Date;
}

/** The SOAP envelope of svc's signed LogoutRequest (exclusive c14n: the signature holds inside the envelope as alone). */
export async function soapLogoutRequest(o: SoapLogoutRequest, now: Date, cert: IdpCertificate): Promise<string> {
  const signed = await signEnveloped(logoutRequest(o, now), cert.privateKey, cert.base64);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<soap11:Envelope xmlns:soap11="${SOAP11_NS}"><soap11:Body>${signed}</soap11:Body></soap11:Envelope>`;
}

/** What the SP's answer means: delivered, or why not, and whether trying again could change it. */
export type SoapLogoutOutcome = { delivered: true } | { delivered: false; error: string; final: boolean };

const failed = (error: string, final = false): SoapLogoutOutcome => ({ delivered: false, error, final });

/** The one element in the Envelope's Body (a LogoutResponse or a Fault), or why the answer is not a SOAP envelope. */
function bodyOf(text: string): Element | string {
  let doc: Document;
  try {
    doc = parseXml(text, "Errors.Saml.Logout.Malformed", "the SOAP answer");
  } catch (err) {
    return (err as Error).message;
  }
  const root = doc.documentElement as Element;
  if (root.namespaceURI !== SOAP11_NS || root.localName !== "Envelope") return "the answer is not a SOAP 1.1 Envelope";
  const body = child(root, SOAP11_NS, "Body");
  const inside = body ? children(body) : [];
  if (inside.length !== 1) return "the SOAP Body must hold exactly one element";
  return inside[0] as Element;
}

/**
 * Reads the SP's answer to the LogoutRequest `requestId` (HTTP `status`, `text` its body): delivered when it is a
 * LogoutResponse to that request with a top-level Success status, its signature (if any) verifying with `certs`.
 */
export function readSoapLogoutAnswer(
  status: number,
  text: string,
  expected: { requestId: string; spEntityId: string; certs: readonly string[] },
): SoapLogoutOutcome {
  const found = bodyOf(text);
  if (typeof found === "string") return failed(status === 200 ? found : `answered ${status}`);
  if (found.namespaceURI === SOAP11_NS && found.localName === "Fault") {
    const reason = textOf(children(found).find((e) => e.localName === "faultstring")).slice(0, 200);
    return failed(`SOAP fault${reason ? `: ${reason}` : ""} (HTTP ${status})`);
  }
  if (found.namespaceURI !== NS.protocol || found.localName !== "LogoutResponse") return failed("the SOAP Body holds no samlp:LogoutResponse");
  if (status !== 200) return failed(`answered ${status}`);
  // The LogoutResponse as a document of its own (its namespaces carried over): its signature must be its root's.
  let doc: Document;
  try {
    doc = parseXml(serialize(found as unknown as Document), "Errors.Saml.Logout.Malformed", "the LogoutResponse");
  } catch (err) {
    return failed((err as Error).message);
  }
  let root = doc.documentElement as Element;
  let signature: Element | undefined;
  try {
    signature = envelopedSignature(doc);
  } catch (err) {
    return failed((err as Error).message);
  }
  if (signature) {
    const verified = verifyEnveloped(doc, signature, expected.certs);
    if (!verified) return failed("the LogoutResponse's signature does not verify with the service provider's registered certificates");
    root = verified;
  }
  if (attr(root, "Version") !== "2.0") return failed("the LogoutResponse's Version is not 2.0");
  if (attr(root, "InResponseTo") !== expected.requestId) return failed("the LogoutResponse does not answer the LogoutRequest sent (InResponseTo)");
  const issuer = child(root, NS.assertion, "Issuer");
  if (issuer && textOf(issuer) !== expected.spEntityId) return failed("the LogoutResponse's Issuer is not the service provider");
  const code = child(root, NS.protocol, "Status");
  const top = code ? child(code, NS.protocol, "StatusCode") : undefined;
  const value = top ? (attr(top, "Value") ?? "") : "";
  if (value === `${STATUS}Success`) return { delivered: true };
  const second = top ? child(top, NS.protocol, "StatusCode") : undefined;
  const named = [value, second ? attr(second, "Value") : undefined].filter(Boolean).join(" / ") || "no status";
  return failed(`the service provider answered ${named.slice(0, 300)}`, value === `${STATUS}Requester`);
}
