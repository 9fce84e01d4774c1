// The SAML Response (Core §3.2.2, §2; Profiles §4.1.4.2) sent to the ACS of a request: a signed Assertion for the
// signed-in user (NameID, bearer SubjectConfirmation, Conditions with the SP as audience, AuthnStatement with the
// context class of the factors used, the attributes), or only a Status (RequestDenied and the like). Written as text in
// exclusive canonical form (canonical.ts), so each signature digests the text as sent and signs a SignedInfo string:
// the Assertion always (before it is encrypted, when the app asks for that), the Response when the app asks.
import { randomBytes } from "node:crypto";
import type { SamlAppConfig } from "../access/app-settings.js";
import type { SamlAttribute } from "../actions/functions.js";
import type { UserView } from "../identity/users.js";
import type { LinkedSession } from "../sessions/link.js";
import { authTime } from "../sessions/link.js";
import { el, open, type Signable, signEnveloped, textEl, xmlns } from "./canonical.js";
import { encryptedData } from "./encryption.js";
import { NAME_ID_FORMATS } from "./idp-metadata.js";
import type { IdpCertificate } from "./runtime.js";
import { NS } from "./xml.js";

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

export interface NameId {
  format: string;
  value: string;
}

/**
 * The NameID the SP is given for the user in `format`: `opaque` is the pairwise persistent id (pairwise) or the
 * session's transient id (transient).
 */
export function subjectNameId(user: UserView, format: SamlAppConfig["nameIdFormat"], opaque?: string): NameId {
  if (format === "persistent") return { format: NAME_ID_FORMATS.persistent, value: user.id };
  if (format === "pairwise" && opaque) return { format: NAME_ID_FORMATS.persistent, value: opaque };
  if (format === "transient" && opaque) return { format: NAME_ID_FORMATS.transient, value: opaque };
  if (format === "emailAddress" && user.email) return { format: NAME_ID_FORMATS.emailAddress, value: user.email };
  return { format: NAME_ID_FORMATS.unspecified, value: user.username };
}

/** The Response around `body` (Status and Assertion), split where its signature would go. */
function responseParts(a: Answering, s: Signing, now: Date, body: string): Signable {
  const id = samlId();
  const attrs = { ID: id, InResponseTo: a.requestId, Version: "2.0", IssueInstant: instant(now), Destination: a.acsUrl };
  return {
    id,
    head: open("samlp:Response", attrs, xmlns("samlp", NS.protocol)) + textEl("saml:Issuer", {}, s.entityId, xmlns("saml", NS.assertion)),
    tail: `${body}</samlp:Response>`,
  };
}

/** The Response whole: signed when the app asks (never for HTTP-Redirect, whose query is signed instead). */
async function finished(r: Signable, s: Signing): Promise<string> {
  return s.signResponse ? signEnveloped(r, s.cert.privateKey, s.cert.base64) : r.head + r.tail;
}

/** The attributes svc sets itself (an action's target may add others, never these). */
export const STANDARD_ATTRIBUTES = ["UserID", "UserName", "Email", "FirstName", "SurName", "FullName", "Roles"] as const;

const URI = "urn:oasis:names:tc:SAML:2.0:attrname-format:uri";

/** The urn:oid profile (eduPerson, X.500, inetOrgPerson: what pysaml2's and Shibboleth's default maps know). */
export const URN_OID_ATTRIBUTES = {
  uid: "urn:oid:0.9.2342.19200300.100.1.1",
  mail: "urn:oid:0.9.2342.19200300.100.1.3",
  givenName: "urn:oid:2.5.4.42",
  sn: "urn:oid:2.5.4.4",
  displayName: "urn:oid:2.16.840.1.113730.3.1.241",
  eduPersonPrincipalName: "urn:oid:1.3.6.1.4.1.5923.1.1.1.6",
  eduPersonEntitlement: "urn:oid:1.3.6.1.4.1.5923.1.1.1.7",
} as const;

/** Each attribute as [Name, FriendlyName (urn:oid only), values] in the app's profile. */
function profileValues(user: UserView, roles: string[], profile: SamlAppConfig["attributeProfile"]): [string, string | undefined, (string | null)[]][] {
  const fullName = user.displayName ?? ([user.givenName, user.familyName].filter(Boolean).join(" ") || null);
  if (profile === "urnOid") {
    const o = URN_OID_ATTRIBUTES;
    return [
      [o.uid, "uid", [user.username]],
      [o.mail, "mail", [user.email]],
      [o.givenName, "givenName", [user.givenName]],
      [o.sn, "sn", [user.familyName]],
      [o.displayName, "displayName", [fullName]],
      [o.eduPersonPrincipalName, "eduPersonPrincipalName", [user.preferredLoginName]],
      [o.eduPersonEntitlement, "eduPersonEntitlement", roles],
    ];
  }
  return [
    ["UserID", undefined, [user.id]],
    ["UserName", undefined, [user.username]],
    ["Email", undefined, [user.email]],
    ["FirstName", undefined, [user.givenName]],
    ["SurName", undefined, [user.familyName]],
    ["FullName", undefined, [fullName]],
    ["Roles", undefined, roles],
  ];
}

function attributes(user: UserView, roles: string[], extra: readonly SamlAttribute[], profile: SamlAppConfig["attributeProfile"]): string {
  let out = "";
  for (const [name, friendly, vs] of profileValues(user, roles, profile)) {
    const present = vs.filter((v): v is string => !!v);
    if (present.length === 0) continue;
    const attrs = { Name: name, NameFormat: friendly ? URI : BASIC, FriendlyName: friendly };
    out += el("saml:Attribute", attrs, present.map((v) => textEl("saml:AttributeValue", {}, v)).join(""));
  }
  for (const a of extra) {
    out += el("saml:Attribute", { Name: a.name, NameFormat: a.nameFormat }, a.values.map((v) => textEl("saml:AttributeValue", {}, v)).join(""));
  }
  return el("saml:AttributeStatement", {}, out);
}

export interface Signed {
  user: UserView;
  session: LinkedSession;
  config: SamlAppConfig;
  /** The app's chosen role keys the user holds in its project. */
  roles: string[];
  /** What the presamlresponse function's targets added. */
  extra?: readonly SamlAttribute[];
  /** The Subject's NameID (subjectNameId of the app's format when absent). */
  nameId?: NameId;
}

/** The Assertion about the session's user, split where its signature goes (after its Issuer). */
function assertionParts(a: Answering, s: Signing, who: Signed, now: Date): Signable {
  const id = samlId();
  const until = instant(new Date(now.getTime() + who.config.assertionLifetimeSeconds * 1000));
  const nid = who.nameId ?? subjectNameId(who.user, who.config.nameIdFormat);
  const subject = el(
    "saml:Subject",
    {},
    textEl("saml:NameID", { Format: nid.format }, nid.value) +
      el(
        "saml:SubjectConfirmation",
        { Method: "urn:oasis:names:tc:SAML:2.0:cm:bearer" },
        el("saml:SubjectConfirmationData", { NotOnOrAfter: until, Recipient: a.acsUrl, InResponseTo: a.requestId }, ""),
      ),
  );
  const conditions = el(
    "saml:Conditions",
    { NotBefore: instant(now), NotOnOrAfter: until },
    el("saml:AudienceRestriction", {}, textEl("saml:Audience", {}, a.issuer)),
  );
  const authn = el(
    "saml:AuthnStatement",
    {
      AuthnInstant: instant(authTime(who.session)),
      SessionIndex: who.session.id,
      SessionNotOnOrAfter: who.session.expiresAt ? instant(who.session.expiresAt) : undefined,
    },
    el("saml:AuthnContext", {}, textEl("saml:AuthnContextClassRef", {}, contextClass(who.session))),
  );
  return {
    id,
    head: open("saml:Assertion", { ID: id, Version: "2.0", IssueInstant: instant(now) }, xmlns("saml", NS.assertion)) + textEl("saml:Issuer", {}, s.entityId),
    tail: `${subject}${conditions}${authn}${attributes(who.user, who.roles, who.extra ?? [], who.config.attributeProfile)}</saml:Assertion>`,
  };
}

/**
 * A Success Response with a signed Assertion about the session's user, encrypted for the SP when its app asks
 * (`encryptFor`: the SP's encryption certificate); the Response signed too when the app asks.
 */
export async function successResponse(a: Answering, s: Signing, who: Signed, now: Date, encryptFor?: string): Promise<string> {
  const assertion = await signEnveloped(assertionParts(a, s, who, now), s.cert.privateKey, s.cert.base64);
  const carried = encryptFor ? el("saml:EncryptedAssertion", {}, encryptedData(assertion, encryptFor), xmlns("saml", NS.assertion)) : assertion;
  const status = el("samlp:Status", {}, el("samlp:StatusCode", { Value: `${STATUS}Success` }, ""));
  return finished(responseParts(a, s, now, status + carried), s);
}

/** A Response with only a Status: Responder (Requester for a NameIDPolicy svc cannot meet) with `error` under it, and the message. */
export async function errorResponse(
  a: Answering,
  s: Signing,
  error: SamlError | "InvalidNameIDPolicy",
  message: string | undefined,
  now: Date,
): Promise<string> {
  const top = error === "InvalidNameIDPolicy" ? "Requester" : "Responder";
  const code = el("samlp:StatusCode", { Value: `${STATUS}${top}` }, el("samlp:StatusCode", { Value: `${STATUS}${error}` }, ""));
  const status = el("samlp:Status", {}, code + (message ? textEl("samlp:StatusMessage", {}, message) : ""));
  return finished(responseParts(a, s, now, status), s);
}
