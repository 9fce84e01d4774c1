// The SSO endpoint (SAML 2.0 Bindings §3.4 HTTP-Redirect, §3.5 HTTP-POST; Profiles §4.1.4.1): an SP-initiated
// AuthnRequest is decoded within limits, parsed without DOCTYPEs, tied to a registered SP by its Issuer, its signature
// checked with that SP's registered certificates (required when its metadata says AuthnRequestsSigned), and checked
// (Version, ID, IssueInstant window, Destination, a registered ACS). A valid one is stored for the login UI; a replayed
// ID is refused. Every refusal is an InvalidArgument the endpoint shows as a page: nothing goes to an unverified URL.
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { Element } from "@xmldom/xmldom";
import type { NewSamlRequest, SamlAppRow } from "../../store/saml.js";
import type { SamlAppConfig } from "../access/app-settings.js";
import { invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { withQuery } from "../oauth/authorize/callback.js";
import { NAME_ID_FORMATS } from "./idp-metadata.js";
import { errorResponse } from "./response.js";
import { entityIdOf, type SamlIdp, samlAppByEntityId, ssoUrlOf } from "./runtime.js";
import { envelopedSignature, RSA_SHA256, signQueryAsync, verifyEnveloped, verifyQuerySignature } from "./signatures.js";
import { chooseAcs } from "./sp-metadata.js";
import { attr, BINDINGS, child, NS, parseXml, textOf } from "./xml.js";

/** What arrived at /saml/v2/SSO: the raw query of a GET, or the form of a POST. */
export type SsoInput = { binding: "redirect"; query: string } | { binding: "post"; samlRequest?: string; relayState?: string };

export const SSO_LIMITS = {
  /** The SAMLRequest parameter as received (base64, URL-encoded for the redirect binding). */
  encoded: 48 * 1024,
  /** The XML after inflating: a deflate bomb stops here, without being buffered further. */
  xml: 64 * 1024,
  relayState: 1024,
  id: 256,
  /** How old an IssueInstant may be, and how far ahead of this clock (skew). */
  maxAgeMs: 5 * 60_000,
  skewMs: 3 * 60_000,
} as const;

export const refuse = (what: string, message: string) => invalidArgument(`Errors.Saml.Request.${what}`, message);

/** The raw (still URL-encoded) value of each query parameter; a repeated parameter is refused. */
export function rawParameters(query: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const pair of query.split("&")) {
    if (!pair) continue;
    const eq = pair.indexOf("=");
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (out.has(name)) throw refuse("Repeated", `the parameter ${name.slice(0, 40)} is repeated`);
    out.set(name, eq < 0 ? "" : pair.slice(eq + 1));
  }
  return out;
}

function urlDecode(raw: string, plusIsSpace: boolean): string {
  try {
    return decodeURIComponent(plusIsSpace ? raw.replace(/\+/g, " ") : raw);
  } catch {
    throw refuse("Malformed", "a parameter is not URL-encoded correctly");
  }
}

function base64(text: string, param = "SAMLRequest"): Buffer {
  const compact = text.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw refuse("Malformed", `${param} is not base64`);
  return Buffer.from(compact, "base64");
}

function inflated(data: Buffer, param = "SAMLRequest"): string {
  try {
    return inflateRawSync(data, { maxOutputLength: SSO_LIMITS.xml }).toString("utf8");
  } catch {
    throw refuse("Malformed", `${param} is not DEFLATE-compressed XML of at most ${SSO_LIMITS.xml} bytes`);
  }
}

export interface Decoded {
  xml: string;
  relayState: string | undefined;
  /** The HTTP-Redirect binding's query signature, with the octets it covers. */
  querySignature?: { octets: string; sigAlg: string; signature: string };
}

/** The HTTP-Redirect binding's message in `param` (SAMLRequest or SAMLResponse), its RelayState and query signature. */
export function decodeRedirect(query: string, param: "SAMLRequest" | "SAMLResponse" = "SAMLRequest"): Decoded {
  if (query.length > SSO_LIMITS.encoded + SSO_LIMITS.relayState * 3 + 4096) throw refuse("TooLarge", "the request is too large");
  const raw = rawParameters(query);
  const request = raw.get(param);
  if (!request) throw refuse("Missing", `${param} is required${param === "SAMLRequest" ? ": only SP-initiated sign-ins are supported" : ""}`);
  if (request.length > SSO_LIMITS.encoded) throw refuse("TooLarge", `${param} is too large`);
  const relayRaw = raw.get("RelayState");
  const relayState = relayRaw === undefined ? undefined : urlDecode(relayRaw, true);
  const out: Decoded = { xml: inflated(base64(urlDecode(request, false), param), param), relayState };
  const sigAlg = raw.get("SigAlg");
  const signature = raw.get("Signature");
  if (signature !== undefined || sigAlg !== undefined) {
    if (!signature || !sigAlg) throw refuse("Signature.Invalid", "Signature and SigAlg go together");
    // Bindings §3.4.4.1: the octets as received, in this order, each parameter still URL-encoded.
    const octets = `${param}=${request}${relayRaw === undefined ? "" : `&RelayState=${relayRaw}`}&SigAlg=${sigAlg}`;
    out.querySignature = { octets, sigAlg: urlDecode(sigAlg, false), signature: urlDecode(signature, false) };
  }
  return out;
}

/** The HTTP-POST binding's message (the form field named `param`) and RelayState. */
export function decodePost(samlRequest: string | undefined, relayState: string | undefined, param: "SAMLRequest" | "SAMLResponse" = "SAMLRequest"): Decoded {
  if (!samlRequest) throw refuse("Missing", `${param} is required${param === "SAMLRequest" ? ": only SP-initiated sign-ins are supported" : ""}`);
  if (samlRequest.length > SSO_LIMITS.encoded) throw refuse("TooLarge", `${param} is too large`);
  const xml = base64(samlRequest, param);
  if (xml.length > SSO_LIMITS.xml) throw refuse("TooLarge", `${param} is too large`);
  return { xml: xml.toString("utf8"), relayState };
}

/** The AuthnRequest element as the signature covers it (or as sent, when unsigned and allowed), with its SP. */
async function authenticRequest(idp: SamlIdp, d: Decoded, binding: SsoInput["binding"]): Promise<{ root: Element; app: SamlAppRow; config: SamlAppConfig }> {
  const doc = parseXml(d.xml, "Errors.Saml.Request.Malformed", "SAMLRequest");
  let root = doc.documentElement as Element;
  if (root.namespaceURI !== NS.protocol || root.localName !== "AuthnRequest") throw refuse("Malformed", "SAMLRequest must be a samlp:AuthnRequest");
  let signature: Element | undefined;
  try {
    signature = binding === "post" ? envelopedSignature(doc) : undefined;
  } catch (err) {
    throw refuse("Signature.Invalid", (err as Error).message);
  }
  const issuer = textOf(child(root, NS.assertion, "Issuer"));
  if (!issuer) throw refuse("Issuer.Missing", "the AuthnRequest has no Issuer");
  const app = await samlAppByEntityId(idp, issuer);
  if (app?.config.kind !== "saml") throw refuse("Issuer.Unknown", "the Issuer is not a registered service provider");
  if (!app.active) throw refuse("Issuer.Inactive", "the service provider's application is not active");
  const config = app.config;
  if (d.querySignature) {
    const q = d.querySignature;
    if (!verifyQuerySignature(q.octets, q.sigAlg, q.signature, config.signingCertificates)) {
      throw refuse("Signature.Invalid", "the signature does not verify with the service provider's registered certificates");
    }
  } else if (signature) {
    const signed = verifyEnveloped(doc, signature, config.signingCertificates);
    if (!signed) throw refuse("Signature.Invalid", "the signature does not verify with the service provider's registered certificates");
    root = signed;
  } else if (config.authnRequestsSigned) {
    throw refuse("Signature.Missing", "the service provider's metadata says its AuthnRequests are signed: this one is not");
  } else if (idp.wantAuthnRequestsSigned) {
    throw refuse("Signature.Missing", "this identity provider accepts signed AuthnRequests only");
  }
  return { root, app, config };
}

/** An xs:boolean attribute, false when absent. */
const flag = (e: Element, name: string) => ["true", "1"].includes(attr(e, name) ?? "");

export function checkedInstant(root: Element, now: Date): void {
  const raw = attr(root, "IssueInstant") ?? "";
  const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(at)) throw refuse("IssueInstant.Invalid", "IssueInstant must be a UTC dateTime");
  if (at < now.getTime() - SSO_LIMITS.maxAgeMs || at > now.getTime() + SSO_LIMITS.skewMs) {
    throw refuse("IssueInstant.OutOfWindow", "IssueInstant is outside the accepted window (5 minutes old, 3 minutes ahead)");
  }
}

function checkedAcs(root: Element, config: SamlAppConfig) {
  const url = attr(root, "AssertionConsumerServiceURL");
  const indexRaw = attr(root, "AssertionConsumerServiceIndex");
  const binding = attr(root, "ProtocolBinding");
  if (url !== undefined && indexRaw !== undefined)
    throw refuse("Acs.Invalid", "AssertionConsumerServiceURL and AssertionConsumerServiceIndex exclude each other");
  if (binding !== undefined && binding !== BINDINGS.post && binding !== BINDINGS.redirect) {
    throw refuse("Binding.Unsupported", "ProtocolBinding must be HTTP-POST or HTTP-Redirect");
  }
  const index = indexRaw === undefined ? undefined : /^\d{1,5}$/.test(indexRaw) ? Number(indexRaw) : -1;
  const acs = chooseAcs(config.acs, { url, binding, index });
  if (!acs) throw refuse("Acs.Unregistered", "the assertion consumer service is not registered in the service provider's metadata");
  return acs;
}

const UNSPECIFIED_FORMAT = "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified";
const GIVEN_FORMATS = new Set<string>([NAME_ID_FORMATS.emailAddress, NAME_ID_FORMATS.persistent, NAME_ID_FORMATS.transient]);

/** NameIDPolicy's Format (Core §3.4.1.1): null for none or unspecified (the app's), the URI of one svc gives, or "unsupported". */
function requestedFormat(root: Element): string | null | "unsupported" {
  const policy = child(root, NS.protocol, "NameIDPolicy");
  const format = policy ? attr(policy, "Format") : undefined;
  if (format === undefined || format === UNSPECIFIED_FORMAT) return null;
  return GIVEN_FORMATS.has(format) ? format : "unsupported";
}

/** The answer to a request svc refuses at the ACS it registered (a NameIDPolicy it cannot meet): a signed error Response. */
async function refusedAtAcs(idp: SamlIdp, r: NewSamlRequest, config: SamlAppConfig): Promise<SsoAnswer> {
  const cert = await idp.certificates.active();
  const post = r.binding === BINDINGS.post;
  const a = { requestId: r.requestId, acsUrl: r.acsUrl, issuer: r.issuer };
  const signing = { entityId: entityIdOf(idp.externalUrl), cert, signResponse: post };
  const xml = await errorResponse(
    a,
    signing,
    "InvalidNameIDPolicy",
    "svc gives NameIDs in the emailAddress, persistent, transient or unspecified formats",
    r.createdAt,
  );
  await idp.store.saml.finishRequest(idp.instanceId, r.id, r.createdAt);
  idp.log.info({ issuer: config.entityId }, "SAML AuthnRequest with an unsupported NameIDPolicy answered InvalidNameIDPolicy");
  if (post) return { url: r.acsUrl, post: { name: "SAMLResponse", value: Buffer.from(xml).toString("base64"), relayState: r.relayState } };
  const e = encodeURIComponent;
  let octets = `SAMLResponse=${e(deflateRawSync(Buffer.from(xml)).toString("base64"))}`;
  if (r.relayState !== null) octets += `&RelayState=${e(r.relayState)}`;
  octets += `&SigAlg=${e(RSA_SHA256)}`;
  const query = `${octets}&Signature=${e(await signQueryAsync(octets, cert.privateKey))}`;
  return { url: `${r.acsUrl}${r.acsUrl.includes("?") ? "&" : "?"}${query}`, redirect: true };
}

/** Where the browser goes next: the login UI, or (a request refused at its ACS) a Response to post or redirect. */
export type SsoAnswer = { url: string; redirect: true } | { url: string; post: { name: "SAMLResponse"; value: string; relayState: string | null } };

/** Validates and stores an AuthnRequest; where the browser goes next (the login UI, with the request's id). */
export async function receiveAuthnRequest(idp: SamlIdp, input: SsoInput, now: Date): Promise<SsoAnswer> {
  const decoded = input.binding === "redirect" ? decodeRedirect(input.query) : decodePost(input.samlRequest, input.relayState);
  if (decoded.relayState !== undefined && decoded.relayState.length > SSO_LIMITS.relayState) {
    throw refuse("RelayState.TooLong", `RelayState must be at most ${SSO_LIMITS.relayState} characters`);
  }
  const { root, app, config } = await authenticRequest(idp, decoded, input.binding);
  if (attr(root, "Version") !== "2.0") throw refuse("Version.Unsupported", "Version must be 2.0");
  const requestId = attr(root, "ID") ?? "";
  if (!/^[A-Za-z_][\w.-]*$/.test(requestId) || requestId.length > SSO_LIMITS.id) throw refuse("Id.Invalid", "ID must be an xs:ID of at most 256 characters");
  checkedInstant(root, now);
  const destination = attr(root, "Destination");
  if (destination !== undefined && destination !== ssoUrlOf(idp.externalUrl)) throw refuse("Destination.Mismatch", "Destination is not this SSO endpoint");
  const acs = checkedAcs(root, config);
  const format = requestedFormat(root);
  const id = newId();
  const row: NewSamlRequest = {
    id,
    instanceId: idp.instanceId,
    appId: app.id,
    requestId,
    issuer: config.entityId,
    acsUrl: acs.url,
    binding: acs.binding,
    relayState: decoded.relayState ?? null,
    forceAuthn: flag(root, "ForceAuthn"),
    isPassive: flag(root, "IsPassive"),
    nameIdFormat: format === "unsupported" ? null : format,
    createdAt: now,
    expiresAt: new Date(now.getTime() + idp.requestLifetime * 1000),
  };
  await idp.store.saml.createRequest(row, () => refuse("Replayed", "this AuthnRequest ID was already received"));
  if (format === "unsupported") return refusedAtAcs(idp, row, config);
  return { url: withQuery(idp.loginUrl, { samlRequest: id }), redirect: true };
}
