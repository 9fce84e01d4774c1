// SAML 2.0 Single Logout (Profiles §4.4, front channel: HTTP-Redirect and HTTP-POST) at /saml/v2/SLO.
// - An SP's LogoutRequest: decoded within the SSO limits, parsed without DOCTYPEs, tied to a registered SP by its
//   Issuer, its signature verified with that SP's registered certificates (always required, Profiles §4.4.4.1: an SP
//   without a signing certificate cannot send one), checked (Version, ID, IssueInstant window, NotOnOrAfter,
//   Destination), its ID refused when seen before from that SP. The sessions that gave this SP this NameID (and
//   SessionIndex, when named) end; a NameID the SP was never given ends nothing (Requester/UnknownPrincipal).
// - The other SPs those sessions signed into that registered an SLO endpoint are then sent a LogoutRequest each, one
//   after the other through the browser (as Keycloak does): svc keeps the chain in a SamlLogout row, each SP's
//   LogoutResponse (to its RelayState, InResponseTo the request sent) moves it on; one that fails or does not verify
//   makes the logout partial. At the end the initiator gets a signed LogoutResponse at its SLO endpoint (Success, or
//   PartialLogout), or, for svc's own logout page, the browser goes back there.
// - SPs that registered a SOAP SingleLogoutService are left out of that chain: ending the session queues theirs in the
//   outbox (back-channel, soap-logout.ts), as for every other way a session ends, with or without a browser.
import type { Element } from "@xmldom/xmldom";
import type { LogoutParticipant, SamlAppRow, SamlLogoutRow } from "../../store/saml.js";
import type { ParticipantRow } from "../../store/sessions.js";
import type { SamlAppConfig } from "../access/app-settings.js";
import { invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { terminateSession } from "../sessions/link.js";
import { checkedInstant, type Decoded, decodePost, decodeRedirect, rawParameters } from "./authn-request.js";
import { encodeMessage, type LogoutStatus, logoutRequest, logoutResponse, type SloAnswer, samlId } from "./logout-messages.js";
import { entityIdOf, type SamlIdp, samlAppByEntityId, sloUrlOf } from "./runtime.js";
import { envelopedSignature, verifyEnveloped, verifyQuerySignature } from "./signatures.js";
import { chooseSlo, soapSlo } from "./sp-metadata.js";
import { attr, child, children, NS, parseXml, textOf } from "./xml.js";

export type { SloAnswer } from "./logout-messages.js";

/** What arrived at /saml/v2/SLO: the raw query of a GET, or the form of a POST. */
export type SloInput = { binding: "redirect"; query: string } | { binding: "post"; samlRequest?: string; samlResponse?: string; relayState?: string };

const refuse = (what: string, message: string) => invalidArgument(`Errors.Saml.Logout.${what}`, message);
const STATUS = "urn:oasis:names:tc:SAML:2.0:status:";

interface Message {
  root: Element;
  app: SamlAppRow & { config: SamlAppConfig };
  /** Whether a signature verified (false: none was given, which only a LogoutResponse of an SP without certificates may do). */
  signed: boolean;
  relayState: string | undefined;
}

/** The message as its signature covers it, with its SP; unsigned only from an SP that has no signing certificate. */
async function authentic(idp: SamlIdp, d: Decoded, binding: SloInput["binding"], name: "LogoutRequest" | "LogoutResponse"): Promise<Message> {
  const doc = parseXml(d.xml, "Errors.Saml.Logout.Malformed", name);
  let root = doc.documentElement as Element;
  if (root.namespaceURI !== NS.protocol || root.localName !== name) throw refuse("Malformed", `expected a samlp:${name}`);
  let signature: Element | undefined;
  try {
    signature = binding === "post" ? envelopedSignature(doc) : undefined;
  } catch (err) {
    throw refuse("Signature.Invalid", (err as Error).message);
  }
  const issuer = textOf(child(root, NS.assertion, "Issuer"));
  const app = issuer ? await samlAppByEntityId(idp, issuer) : null;
  if (app?.config.kind !== "saml") throw refuse("Issuer.Unknown", "the Issuer is not a registered service provider");
  const certs = app.config.signingCertificates;
  let signed = false;
  if (d.querySignature) {
    const q = d.querySignature;
    if (!verifyQuerySignature(q.octets, q.sigAlg, q.signature, certs))
      throw refuse("Signature.Invalid", "the signature does not verify with the service provider's registered certificates");
    signed = true;
  } else if (signature) {
    const verified = verifyEnveloped(doc, signature, certs);
    if (!verified) throw refuse("Signature.Invalid", "the signature does not verify with the service provider's registered certificates");
    root = verified;
    signed = true;
  } else if (certs.length > 0) {
    throw refuse("Signature.Missing", `the service provider has a signing certificate: its ${name} must be signed`);
  } else if (name === "LogoutRequest") {
    // Profiles §4.4.4.1: a LogoutRequest over HTTP-Redirect or HTTP-POST MUST be signed. Unsigned, anyone could end the
    // sessions of a NameID (an e-mail address, a user id) by naming an SP that has no signing certificate.
    throw refuse("Signature.Missing", "a LogoutRequest must be signed: register the service provider's signing certificate");
  }
  return { root, app: app as Message["app"], signed, relayState: d.relayState };
}

/** Version, ID, IssueInstant, Destination: as for AuthnRequests. */
function checkedMessage(idp: SamlIdp, root: Element, now: Date): string {
  if (attr(root, "Version") !== "2.0") throw refuse("Version.Unsupported", "Version must be 2.0");
  const id = attr(root, "ID") ?? "";
  if (!/^[A-Za-z_][\w.-]*$/.test(id) || id.length > 256) throw refuse("Id.Invalid", "ID must be an xs:ID of at most 256 characters");
  checkedInstant(root, now);
  const destination = attr(root, "Destination");
  if (destination !== undefined && destination !== sloUrlOf(idp.externalUrl)) throw refuse("Destination.Mismatch", "Destination is not this SLO endpoint");
  return id;
}

/**
 * The SAML participants (other than `except`) of these sessions to be told through the browser: they registered an
 * HTTP-Redirect or HTTP-POST SLO endpoint and no SOAP one (those are sent theirs over SOAP from the outbox when the
 * session ends: backchannel-logout.ts, soap-logout.ts).
 */
async function toTell(idp: Pick<SamlIdp, "store" | "instanceId">, participants: readonly ParticipantRow[], except?: string): Promise<LogoutParticipant[]> {
  const saml = participants.filter((p) => p.protocol === "saml" && p.appId !== except && p.nameId);
  const apps = await idp.store.saml.appsById(idp.instanceId, [...new Set(saml.map((p) => p.appId))]);
  const withSlo = new Set(apps.filter((a) => a.config.kind === "saml" && chooseSlo(a.config.slo) && !soapSlo(a.config.slo)).map((a) => a.id));
  const out: LogoutParticipant[] = [];
  for (const p of saml) {
    if (!withSlo.has(p.appId)) continue;
    if (out.some((o) => o.appId === p.appId && o.nameId === p.nameId && o.sessionIndex === p.sessionIndex)) continue;
    out.push({ appId: p.appId, nameId: p.nameId as string, nameIdFormat: p.nameIdFormat, sessionIndex: p.sessionIndex });
  }
  return out;
}

/** How long a logout svc's logout page started may take (the SPs' answers pass through the browser). */
const STARTED_LIFETIME_MS = 10 * 60_000;
const lifetime = (idp: SamlIdp, now: Date) => new Date(now.getTime() + idp.requestLifetime * 1000);

/** The signed LogoutResponse to the initiator of `row`. */
async function answerInitiator(idp: SamlIdp, row: SamlLogoutRow, status: LogoutStatus, now: Date): Promise<SloAnswer> {
  const message = logoutResponse({ issuer: entityIdOf(idp.externalUrl), destination: row.returnUrl, inResponseTo: row.requestId as string, status }, now);
  return encodeMessage(row.returnBinding ?? "", row.returnUrl, "SAMLResponse", message, row.relayState, await idp.certificates.active());
}

/** The next hop of a logout whose previous one is answered (`row.sentId` null): the next SP's LogoutRequest, or the end. */
async function next(idp: SamlIdp, row: SamlLogoutRow, now: Date): Promise<SloAnswer> {
  let { pending, partial } = row;
  while (pending.length > 0) {
    const p = pending[0] as LogoutParticipant;
    const [app] = await idp.store.saml.appsById(idp.instanceId, [p.appId]);
    const slo = app?.config.kind === "saml" ? chooseSlo(app.config.slo) : undefined;
    if (!slo) {
      // Its application was removed or its metadata changed meanwhile: it cannot be told.
      pending = pending.slice(1);
      partial = true;
      continue;
    }
    const sentId = samlId();
    if (!(await idp.store.saml.advanceLogout(idp.instanceId, row.id, null, { pending, sentId, partial }))) {
      throw refuse("AlreadyAnswered", "this logout has already moved on");
    }
    const message = logoutRequest({ id: sentId, issuer: entityIdOf(idp.externalUrl), destination: slo.url, ...p, notOnOrAfter: lifetime(idp, now) }, now);
    return encodeMessage(slo.binding, slo.url, "SAMLRequest", message, row.id, await idp.certificates.active());
  }
  if (row.appId === null) return { url: row.returnUrl, redirect: true };
  return answerInitiator(idp, row, partial ? "PartialLogout" : "Success", now);
}

/** An SP's LogoutRequest: ends the sessions that gave it this NameID, then tells the others (next). */
async function logoutRequested(idp: SamlIdp, m: Message, binding: string, now: Date): Promise<SloAnswer> {
  const requestId = checkedMessage(idp, m.root, now);
  const notOnOrAfter = attr(m.root, "NotOnOrAfter");
  if (notOnOrAfter !== undefined && !(Date.parse(notOnOrAfter) > now.getTime())) throw refuse("Expired", "the LogoutRequest's NotOnOrAfter has passed");
  const nameId = textOf(child(m.root, NS.assertion, "NameID"));
  if (!nameId) throw refuse("NameId.Missing", "the LogoutRequest must name the subject with a NameID (EncryptedID is not supported)");
  const indexes = children(m.root, NS.protocol, "SessionIndex").map((e) => textOf(e));
  if ((m.relayState?.length ?? 0) > 1024) throw refuse("RelayState.TooLong", "RelayState must be at most 1024 characters");
  const returnTo = chooseSlo(m.app.config.slo, binding);
  if (!returnTo) throw refuse("Slo.Unregistered", "the service provider's metadata has no SingleLogoutService to answer to");
  const hits = (await idp.store.sessions.samlParticipantsByNameId(idp.instanceId, m.app.id, nameId)).filter(
    (p) => indexes.length === 0 || indexes.includes(p.sessionIndex ?? ""),
  );
  const sessionIds = [...new Set(hits.map((p) => p.sessionId))];
  const pending = await toTell(idp, await idp.store.sessions.participants(idp.instanceId, sessionIds), m.app.id);
  const row: SamlLogoutRow = {
    id: newId(),
    instanceId: idp.instanceId,
    appId: m.app.id,
    requestId,
    relayState: m.relayState ?? null,
    returnUrl: returnTo.responseUrl ?? returnTo.url,
    returnBinding: returnTo.binding,
    pending,
    sentId: null,
    partial: false,
    createdAt: now,
    expiresAt: lifetime(idp, now),
  };
  await idp.store.transaction(async (tx) => {
    await tx.saml.createLogout(row, () => refuse("Replayed", "this LogoutRequest ID was already received"));
    for (const id of sessionIds) await terminateSession(tx, idp.instanceId, id, now, { editor: null, reason: "saml_logout", exceptApp: m.app.id });
  });
  if (sessionIds.length === 0) return answerInitiator(idp, row, "UnknownPrincipal", now);
  return next(idp, row, now);
}

/** An SP's LogoutResponse to the LogoutRequest svc sent it: the logout moves on to the next SP (partial if it failed). */
async function logoutAnswered(idp: SamlIdp, m: Message, now: Date): Promise<SloAnswer> {
  checkedMessage(idp, m.root, now);
  const row = m.relayState ? await idp.store.saml.findLogout(idp.instanceId, m.relayState.slice(0, 200)) : null;
  const inResponseTo = attr(m.root, "InResponseTo");
  if (!row || row.sentId === null || row.pending[0]?.appId !== m.app.id || inResponseTo !== row.sentId || row.expiresAt <= now) {
    throw refuse("Unknown", "this LogoutResponse answers no logout in progress");
  }
  const code = child(m.root, NS.protocol, "Status");
  const top = code ? attr(child(code, NS.protocol, "StatusCode") ?? code, "Value") : undefined;
  const failed = top !== `${STATUS}Success` || (!m.signed && m.app.config.signingCertificates.length > 0);
  const moved = { pending: row.pending.slice(1), sentId: null, partial: row.partial || failed };
  if (!(await idp.store.saml.advanceLogout(idp.instanceId, row.id, row.sentId, moved)))
    throw refuse("AlreadyAnswered", "this LogoutResponse was already received");
  return next(idp, { ...row, ...moved }, now);
}

/** /saml/v2/SLO: an SP's LogoutRequest or LogoutResponse, or (`?logout=`) the first hop of a logout svc started. */
export async function receiveLogout(idp: SamlIdp, input: SloInput): Promise<SloAnswer> {
  const now = idp.clock();
  if (input.binding === "redirect") {
    const params = rawParameters(input.query);
    const started = params.get("logout");
    if (started !== undefined && !params.has("SAMLRequest") && !params.has("SAMLResponse")) return continueStarted(idp, decodeURIComponent(started), now);
    if (params.has("SAMLResponse"))
      return logoutAnswered(idp, await authentic(idp, decodeRedirect(input.query, "SAMLResponse"), "redirect", "LogoutResponse"), now);
    return logoutRequested(
      idp,
      await authentic(idp, decodeRedirect(input.query), "redirect", "LogoutRequest"),
      "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect",
      now,
    );
  }
  if (input.samlResponse !== undefined && input.samlRequest === undefined) {
    const d = decodePost(input.samlResponse, input.relayState, "SAMLResponse");
    return logoutAnswered(idp, await authentic(idp, d, "post", "LogoutResponse"), now);
  }
  const d = decodePost(input.samlRequest, input.relayState);
  return logoutRequested(idp, await authentic(idp, d, "post", "LogoutRequest"), "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST", now);
}

async function continueStarted(idp: SamlIdp, id: string, now: Date): Promise<SloAnswer> {
  const row = id.length <= 200 ? await idp.store.saml.findLogout(idp.instanceId, id) : null;
  if (!row || row.appId !== null || row.sentId !== null || row.expiresAt <= now) throw refuse("Unknown", "no logout in progress has this id");
  return next(idp, row, now);
}

/** The SAML SPs these sessions signed into that can be told of their end: read before the sessions end. */
export async function samlParticipantsOf(idp: Pick<SamlIdp, "store" | "instanceId">, sessionIds: readonly string[]): Promise<LogoutParticipant[]> {
  return toTell(idp, await idp.store.sessions.participants(idp.instanceId, sessionIds));
}

/**
 * Starts an IdP-initiated logout of ended sessions' SPs (svc's logout page): the URL the browser goes to next (the SLO
 * endpoint, which sends the first LogoutRequest), or undefined when no SP is to be told. `returnUrl`: where it ends.
 */
export async function startLogout(
  idp: Pick<SamlIdp, "store" | "instanceId" | "clock" | "externalUrl">,
  pending: LogoutParticipant[],
  returnUrl: string,
): Promise<string | undefined> {
  if (pending.length === 0) return undefined;
  const now = idp.clock();
  const id = newId();
  await idp.store.saml.createLogout(
    {
      id,
      instanceId: idp.instanceId,
      appId: null,
      requestId: null,
      relayState: null,
      returnUrl,
      returnBinding: null,
      pending,
      sentId: null,
      partial: false,
      createdAt: now,
      expiresAt: new Date(now.getTime() + STARTED_LIFETIME_MS),
    },
    () => new Error("logout id collision"),
  );
  return `${sloUrlOf(idp.externalUrl)}?logout=${encodeURIComponent(id)}`;
}
