// The SAML Response (Core §3.2.2, §2; Profiles §4.1.4.2) sent to the ACS of a request: a signed Assertion for the
// signed-in user (NameID, bearer SubjectConfirmation, Conditions with the SP as audience, AuthnStatement with the
// context class of the factors used, the attributes), or only a Status (RequestDenied and the like). Built as a DOM
// and serialised by xmldom, then signed with xml-crypto: the Assertion always, the Response when the app asks.
import { randomBytes } from "node:crypto";
import type { Element } from "@xmldom/xmldom";
import type { SamlAppConfig } from "../access/app-settings.js";
import type { UserView } from "../identity/users.js";
import type { LinkedSession } from "../sessions/link.js";
import { authTime } from "../sessions/link.js";
import { NAME_ID_FORMATS } from "./idp-metadata.js";
import type { IdpCertificate } from "./runtime.js";
import { signElement } from "./signatures.js";
import { add, NS, newDocument, serialize } from "./xml.js";

const STATUS = "urn:oasis:names:tc:SAML:2.0:status:";
const AC = "urn:oasis:names:tc:SAML:2.0:ac:classes:";
const BASIC = "urn:oasis:names:tc:SAML:2.0:attrname-format:basic";

export const SAML_ERRORS = ["AuthnFailed", "RequestDenied", "NoPassive"] as const;
export type SamlError = (typeof SAML_ERRORS)[number];

/** What the Response answers. */
export interface Answering {
  requestId: string;
  acsUrl: string;
  /** The SP's entity id (the audience). */
  issuer: string;
}

export interface Signing {
  entityId: string;
  cert: IdpCertificate;
  /** Whether the Response element is signed too (never for HTTP-Redirect, whose query is signed instead). */
  signResponse: boolean;
}

/** xs:ID values: a letter first, 160 random bits. */
export const samlId = () => `_${randomBytes(20).toString("hex")}`;
const instant = (d: Date) => d.toISOString();

/** The context class of the factors the session verified. */
export function contextClass(s: LinkedSession): string {
  const f = s.factors;
  const second = f.totp ?? f.otpEmail ?? (f.password ? f.webauthn : undefined);
  if ((f.password && second) || (f.webauthn && f.webauthnUserVerified)) return `${AC}MobileTwoFactorContract`;
  if (f.password) return `${AC}PasswordProtectedTransport`;
  return `${AC}unspecified`;
}

function nameId(user: UserView, format: SamlAppConfig["nameIdFormat"]): { format: string; value: string } {
  if (format === "persistent") return { format: NAME_ID_FORMATS.persistent, value: user.id };
  if (format === "emailAddress" && user.email) return { format: NAME_ID_FORMATS.emailAddress, value: user.email };
  return { format: NAME_ID_FORMATS.unspecified, value: user.username };
}

function responseRoot(a: Answering, s: Signing, now: Date) {
  const doc = newDocument(NS.protocol, "samlp:Response");
  const root = doc.documentElement as Element;
  root.setAttribute("xmlns:saml", NS.assertion);
  const id = samlId();
  for (const [k, v] of Object.entries({ ID: id, InResponseTo: a.requestId, Version: "2.0", IssueInstant: instant(now), Destination: a.acsUrl })) {
    root.setAttribute(k, v);
  }
  add(root, NS.assertion, "saml:Issuer", {}, s.entityId);
  return { doc, root, id };
}

function attributes(parent: Element, user: UserView, roles: string[]): void {
  const statement = add(parent, NS.assertion, "saml:AttributeStatement");
  const fullName = user.displayName ?? ([user.givenName, user.familyName].filter(Boolean).join(" ") || null);
  const values: [string, (string | null)[]][] = [
    ["UserID", [user.id]],
    ["UserName", [user.username]],
    ["Email", [user.email]],
    ["FirstName", [user.givenName]],
    ["SurName", [user.familyName]],
    ["FullName", [fullName]],
    ["Roles", roles],
  ];
  for (const [name, vs] of values) {
    const present = vs.filter((v): v is string => !!v);
    if (present.length === 0) continue;
    const attribute = add(statement, NS.assertion, "saml:Attribute", { Name: name, NameFormat: BASIC });
    for (const v of present) add(attribute, NS.assertion, "saml:AttributeValue", {}, v);
  }
}

export interface Signed {
  user: UserView;
  session: LinkedSession;
  config: SamlAppConfig;
  /** The app's chosen role keys the user holds in its project. */
  roles: string[];
}

/** A Success Response with a signed Assertion about the session's user. */
export function successResponse(a: Answering, s: Signing, who: Signed, now: Date): string {
  const { doc, root, id } = responseRoot(a, s, now);
  add(add(root, NS.protocol, "samlp:Status"), NS.protocol, "samlp:StatusCode", { Value: `${STATUS}Success` });
  const assertionId = samlId();
  const until = instant(new Date(now.getTime() + who.config.assertionLifetimeSeconds * 1000));
  const assertion = add(root, NS.assertion, "saml:Assertion", { ID: assertionId, Version: "2.0", IssueInstant: instant(now) });
  add(assertion, NS.assertion, "saml:Issuer", {}, s.entityId);
  const subject = add(assertion, NS.assertion, "saml:Subject");
  const nid = nameId(who.user, who.config.nameIdFormat);
  add(subject, NS.assertion, "saml:NameID", { Format: nid.format }, nid.value);
  const confirmation = add(subject, NS.assertion, "saml:SubjectConfirmation", { Method: "urn:oasis:names:tc:SAML:2.0:cm:bearer" });
  add(confirmation, NS.assertion, "saml:SubjectConfirmationData", { NotOnOrAfter: until, Recipient: a.acsUrl, InResponseTo: a.requestId });
  const conditions = add(assertion, NS.assertion, "saml:Conditions", { NotBefore: instant(now), NotOnOrAfter: until });
  add(add(conditions, NS.assertion, "saml:AudienceRestriction"), NS.assertion, "saml:Audience", {}, a.issuer);
  const authn = add(assertion, NS.assertion, "saml:AuthnStatement", {
    AuthnInstant: instant(authTime(who.session)),
    SessionIndex: who.session.id,
    SessionNotOnOrAfter: who.session.expiresAt ? instant(who.session.expiresAt) : undefined,
  });
  add(add(authn, NS.assertion, "saml:AuthnContext"), NS.assertion, "saml:AuthnContextClassRef", {}, contextClass(who.session));
  attributes(assertion, who.user, who.roles);
  let xml = signElement(serialize(doc), assertionId, "Assertion", s.cert.privateKey, s.cert.pem);
  if (s.signResponse) xml = signElement(xml, id, "Response", s.cert.privateKey, s.cert.pem);
  return xml;
}

/** A Response with only a Status: Responder with `error` under it, and the message. */
export function errorResponse(a: Answering, s: Signing, error: SamlError, message: string | undefined, now: Date): string {
  const { doc, root, id } = responseRoot(a, s, now);
  const status = add(root, NS.protocol, "samlp:Status");
  const top = add(status, NS.protocol, "samlp:StatusCode", { Value: `${STATUS}Responder` });
  add(top, NS.protocol, "samlp:StatusCode", { Value: `${STATUS}${error}` });
  if (message) add(status, NS.protocol, "samlp:StatusMessage", {}, message);
  const xml = serialize(doc);
  return s.signResponse ? signElement(xml, id, "Response", s.cert.privateKey, s.cert.pem) : xml;
}
