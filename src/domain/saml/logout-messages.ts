// The messages of SAML Single Logout that svc sends (Core §3.7): a LogoutRequest to an SP of an ended session (its
// NameID and SessionIndex as it was given them) and the LogoutResponse to the SP that asked. Always signed: the query
// for HTTP-Redirect (Bindings §3.4.4.1), an enveloped signature for HTTP-POST. Written in exclusive canonical form
// (canonical.ts), like the Responses.
import { deflateRawSync } from "node:zlib";
import { el, open, type Signable, signEnveloped, textEl, xmlns } from "./canonical.js";
import { samlId } from "./response.js";
import type { IdpCertificate } from "./runtime.js";
import { RSA_SHA256, signQueryAsync } from "./signatures.js";
import { BINDINGS, NS } from "./xml.js";

const STATUS = "urn:oasis:names:tc:SAML:2.0:status:";

/** Where a message goes: a URL to send the browser to, or a form to post there. */
export type SloAnswer =
  | { url: string; redirect: true }
  | { url: string; post: { name: "SAMLRequest" | "SAMLResponse"; value: string; relayState: string | null } };

export type LogoutStatus = "Success" | "PartialLogout" | "UnknownPrincipal" | "RequestDenied";

/** The message in `binding` to `url`: POST (base64 of the XML, signed inside) or Redirect (deflated, the query signed). */
export async function encodeMessage(
  binding: string,
  url: string,
  name: "SAMLRequest" | "SAMLResponse",
  message: Signable,
  relayState: string | null,
  cert: IdpCertificate,
): Promise<SloAnswer> {
  if (binding === BINDINGS.post) {
    const xml = await signEnveloped(message, cert.privateKey, cert.base64);
    return { url, post: { name, value: Buffer.from(xml).toString("base64"), relayState } };
  }
  const e = encodeURIComponent;
  let octets = `${name}=${e(deflateRawSync(Buffer.from(message.head + message.tail)).toString("base64"))}`;
  if (relayState !== null) octets += `&RelayState=${e(relayState)}`;
  octets += `&SigAlg=${e(RSA_SHA256)}`;
  const query = `${octets}&Signature=${e(await signQueryAsync(octets, cert.privateKey))}`;
  return { url: `${url}${url.includes("?") ? "&" : "?"}${query}`, redirect: true };
}

/** A LogoutRequest from svc (`issuer`) to an SP's SLO endpoint, naming the subject as the SP knows it. */
export function logoutRequest(
  o: { id: string; issuer: string; destination: string; nameId: string; nameIdFormat: string | null; sessionIndex: string | null; notOnOrAfter: Date },
  now: Date,
): Signable {
  const attrs = { Destination: o.destination, ID: o.id, IssueInstant: now.toISOString(), NotOnOrAfter: o.notOnOrAfter.toISOString(), Version: "2.0" };
  const subject =
    textEl("saml:NameID", { Format: o.nameIdFormat ?? undefined }, o.nameId, xmlns("saml", NS.assertion)) +
    (o.sessionIndex ? textEl("samlp:SessionIndex", {}, o.sessionIndex) : "");
  return {
    id: o.id,
    head: open("samlp:LogoutRequest", attrs, xmlns("samlp", NS.protocol)) + textEl("saml:Issuer", {}, o.issuer, xmlns("saml", NS.assertion)),
    tail: `${subject}</samlp:LogoutRequest>`,
  };
}

/** A LogoutResponse to the SP's LogoutRequest `inResponseTo`: Success, Success/PartialLogout, or a Requester/Responder failure. */
export function logoutResponse(o: { issuer: string; destination: string; inResponseTo: string; status: LogoutStatus }, now: Date): Signable {
  const id = samlId();
  const attrs = { Destination: o.destination, ID: id, InResponseTo: o.inResponseTo, IssueInstant: now.toISOString(), Version: "2.0" };
  const top = o.status === "Success" || o.status === "PartialLogout" ? "Success" : o.status === "UnknownPrincipal" ? "Requester" : "Responder";
  const second = o.status === "Success" ? "" : el("samlp:StatusCode", { Value: `${STATUS}${o.status}` }, "");
  const status = el("samlp:Status", {}, el("samlp:StatusCode", { Value: `${STATUS}${top}` }, second));
  return {
    id,
    head: open("samlp:LogoutResponse", attrs, xmlns("samlp", NS.protocol)) + textEl("saml:Issuer", {}, o.issuer, xmlns("saml", NS.assertion)),
    tail: `${status}</samlp:LogoutResponse>`,
  };
}

export { samlId };
