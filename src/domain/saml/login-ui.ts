// The login UI's half of SAML SSO (svc.saml.v2.SAMLService): read a stored AuthnRequest to render the sign-in, and
// answer it with a session (a signed assertion) or an error status, sent to the ACS the request was registered for,
// with the binding of that ACS. Login UIs hold IAM_LOGIN_CLIENT (permission session.link). A request is answered at
// most once: the write is conditional on it being open, so of two concurrent answers one wins.
import { type KeyObject, randomBytes } from "node:crypto";
import { deflateRawSync } from "node:zlib";
import type { SamlRequestRow } from "../../store/saml.js";
import type { SamlResponseRead } from "../../store/saml-sign-in.js";
import type { NewParticipant } from "../../store/sessions.js";
import type { SamlAppConfig, SamlNameIdFormat } from "../access/app-settings.js";
import { authorize } from "../access/permissions.js";
import { roleClaims } from "../access/role-claims.js";
import { appendedAttributes, type SamlAttribute } from "../actions/functions.js";
import { storeAnsweredMetadata } from "../actions/metadata.js";
import { userContext } from "../actions/payload.js";
import type { ActionTargets } from "../actions/ports.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import type { UserView } from "../identity/users.js";
import { assertSignInComplete, authTime, type LinkedSession, provenSession } from "../sessions/link.js";
import { answerOnce, type RequestKind, reauthenticationProblem, stillOpenRequest } from "../sessions/pending-requests.js";
import { NAME_ID_FORMATS } from "./idp-metadata.js";
import { type Answering, errorResponse, type NameId, SAML_ERRORS, type SamlError, STANDARD_ATTRIBUTES, subjectNameId, successResponse } from "./response.js";
import { entityIdOf, type IdpCertificates } from "./runtime.js";
import { RSA_SHA256, signQueryAsync } from "./signatures.js";
import { BINDINGS } from "./xml.js";

export const SamlRequestErrors = {
  NotFound: "Errors.SamlRequest.NotFound",
  Expired: "Errors.SamlRequest.Expired",
  AlreadyFinished: "Errors.SamlRequest.AlreadyFinished",
  ReauthenticationRequired: "Errors.SamlRequest.ReauthenticationRequired",
} as const;

export interface SamlRequestView {
  id: string;
  createdAt: Date;
  expiresAt: Date;
  issuer: string;
  acsUrl: string;
  relayState: string | null;
  binding: string;
  /** The SP asked for a new authentication (a factor verified after the request). */
  forceAuthn: boolean;
  /** The SP asked that the user not be asked anything (NoPassive when the sign-in would need it). */
  isPassive: boolean;
}

/** Where the answer goes: a form to post, or a URL to send the browser to. */
export type SamlAnswer = { url: string; post: { samlResponse: string; relayState: string | null } } | { url: string; redirect: true };

/** What answering needs besides the context: the IdP's entity id base and its certificates. */
export interface SamlAnswerer {
  externalUrl: string;
  certificates: IdpCertificates;
  /** The targets of the presamlresponse function (absent: none run). */
  actions?: ActionTargets;
}

const MAX_ID = 200;
const MAX_MESSAGE = 500;

/** SAML requests in the one lifecycle of sign-in requests (sessions/pending-requests.ts). */
const SAML_REQUEST: RequestKind = { name: "SAML request", errors: SamlRequestErrors, starter: "the SP" };

type OpenSamlRequest = SamlRequestRow & { app: { config: SamlAppConfig } };

/** The request if it is a SAML app's and still open (NotFound, Expired, AlreadyFinished otherwise). */
function stillOpenSaml(r: SamlRequestRow | null, now: Date): OpenSamlRequest {
  return stillOpenRequest(SAML_REQUEST, r?.app.config.kind === "saml" ? r : null, now) as OpenSamlRequest;
}

async function openRequest(ctx: Ctx, id: string, now: Date): Promise<OpenSamlRequest> {
  return stillOpenSaml(id && id.length <= MAX_ID ? await ctx.store.saml.findRequest(ctx.instanceId, id) : null, now);
}

/** What answering with a session reads, in one statement (store/saml-sign-in.ts); an over-long id finds nothing. */
async function readForResponse(ctx: Ctx, id: string, sessionId: string): Promise<SamlResponseRead> {
  if (!id || id.length > MAX_ID) return { request: null, session: null, facts: null, gate: null, user: null };
  return ctx.store.samlSignIn.forResponse(ctx.instanceId, id, sessionId);
}

export async function getSamlRequest(ctx: Ctx, id: string): Promise<SamlRequestView> {
  authorize(ctx, "session.link", null);
  const r = await openRequest(ctx, id, ctx.clock());
  const { id: rid, createdAt, expiresAt, issuer, acsUrl, relayState, binding, forceAuthn, isPassive } = r;
  return { id: rid, createdAt, expiresAt, issuer, acsUrl, relayState, binding, forceAuthn, isPassive };
}

export type ResponseInput =
  | { samlRequestId: string; session: { sessionId: string; sessionToken: string } }
  | { samlRequestId: string; error: { error: SamlError | undefined; description?: string } };

/** The answer in the ACS's binding: POST (base64 of the XML) or Redirect (deflated, the query signed). */
async function encode(r: SamlRequestRow, xml: string, key: KeyObject): Promise<SamlAnswer> {
  if (r.binding === BINDINGS.post) return { url: r.acsUrl, post: { samlResponse: Buffer.from(xml).toString("base64"), relayState: r.relayState } };
  const e = encodeURIComponent;
  let octets = `SAMLResponse=${e(deflateRawSync(Buffer.from(xml)).toString("base64"))}`;
  if (r.relayState !== null) octets += `&RelayState=${e(r.relayState)}`;
  octets += `&SigAlg=${e(RSA_SHA256)}`;
  const query = `${octets}&Signature=${e(await signQueryAsync(octets, key))}`;
  return { url: `${r.acsUrl}${r.acsUrl.includes("?") ? "&" : "?"}${query}`, redirect: true };
}

/**
 * Marks the request answered with its audit event and, for an assertion, the session's participant (the SP, its
 * NameID): one statement (store/saml-sign-in.ts), so that all or none of them are kept.
 */
async function finish(ctx: Ctx, r: SamlRequestRow, now: Date, type: string, payload: Record<string, unknown>, participant?: NewParticipant): Promise<void> {
  const event = eventRow(ctx, { aggregateType: "saml.request", aggregateId: r.id, orgId: r.app.orgId, type, payload });
  await answerOnce(
    SAML_REQUEST,
    () => ctx.store.samlSignIn.finish(ctx.instanceId, r.id, now, event, participant),
    () => ctx.store.saml.findRequest(ctx.instanceId, r.id),
    now,
  );
  ctx.signals?.finished("saml", type === "saml.request.succeeded" ? "success" : "error");
}

function checkedError(e: { error: SamlError | undefined; description?: string }): { error: SamlError; description?: string } {
  if (!e.error || !SAML_ERRORS.includes(e.error)) {
    throw invalidArgument("Errors.SamlRequest.Error.Invalid", "error must name a SAML status (AUTHN_FAILED, REQUEST_DENIED, NO_PASSIVE)", { field: "error" });
  }
  if (e.description !== undefined && (e.description.length > MAX_MESSAGE || /[^\x20-\x7e]/.test(e.description))) {
    throw invalidArgument("Errors.SamlRequest.ErrorDescription.Invalid", `error_description: at most ${MAX_MESSAGE} printable ASCII characters`, {
      field: "error_description",
    });
  }
  return { error: e.error, description: e.description };
}

/** The user's roles among the app's chosen role keys, in its project. */
async function chosenRoles(ctx: Ctx, r: SamlRequestRow & { app: { config: SamlAppConfig } }, userId: string): Promise<string[]> {
  if (r.app.config.roleKeys.length === 0) return [];
  const claim = (await roleClaims(ctx.store, ctx.instanceId, userId, [r.app.projectId])).get(r.app.projectId) ?? {};
  return r.app.config.roleKeys.filter((k) => k in claim);
}

/** The attributes the presamlresponse function's targets add for this user and SP (none without targets). */
async function actionAttributes(ctx: Ctx, idp: SamlAnswerer, user: UserView, serviceProvider: string): Promise<SamlAttribute[]> {
  if (!idp.actions || !(await idp.actions.has("presamlresponse"))) return [];
  const answers = await idp.actions.call("presamlresponse", {
    serviceProvider,
    attributes: [...STANDARD_ATTRIBUTES],
    ...(await userContext(ctx.store, ctx.instanceId, user)),
  });
  await storeAnsweredMetadata(ctx, user, answers);
  const { attributes, notes } = appendedAttributes(STANDARD_ATTRIBUTES, answers);
  if (notes.length) ctx.log.warn({ notes, serviceProvider }, "presamlresponse: some attributes were not added");
  return attributes;
}

/** The NameID format of this answer: the one the request's NameIDPolicy asked for (svc gives it), else the app's. */
function formatFor(asked: string | null | undefined, configured: SamlNameIdFormat): SamlNameIdFormat {
  if (asked === NAME_ID_FORMATS.emailAddress) return "emailAddress";
  if (asked === NAME_ID_FORMATS.transient) return "transient";
  if (asked === NAME_ID_FORMATS.persistent) return configured === "persistent" ? "persistent" : "pairwise";
  return configured;
}

/**
 * The Subject's NameID for the SP: a pairwise persistent id is made once per user and SP (stored); a transient one once
 * per session and SP (the session's participant row keeps it). Undefined: the SP asked for an e-mail address the user
 * does not have.
 */
async function nameIdFor(ctx: Ctx, r: OpenSamlRequest, user: UserView, sessionId: string, now: Date): Promise<NameId | undefined> {
  const format = formatFor(r.nameIdFormat, r.app.config.nameIdFormat);
  if (format === "emailAddress" && r.nameIdFormat === NAME_ID_FORMATS.emailAddress && !user.email) return undefined;
  if (format === "pairwise") return subjectNameId(user, format, await ctx.store.saml.persistentId(r.app.id, user.id, opaqueId(), now));
  if (format === "transient") {
    const known = await ctx.store.sessions.participant(sessionId, r.app.id);
    const value = known?.nameIdFormat === NAME_ID_FORMATS.transient && known.nameId ? known.nameId : opaqueId();
    return subjectNameId(user, format, value);
  }
  return subjectNameId(user, format);
}

/** An opaque NameID: 160 random bits, URL-safe. */
const opaqueId = () => randomBytes(20).toString("base64url");

/**
 * Answers a SAML request: with a session whose token the caller proves (its user signed in completely and passes the
 * project's gates: otherwise a RequestDenied status, never an assertion), or with an error status for the SP.
 */
export async function createResponse(ctx: Ctx, idp: SamlAnswerer, input: ResponseInput): Promise<{ answer: SamlAnswer; at: Date }> {
  authorize(ctx, "session.link", null);
  const now = ctx.clock();
  const error = "error" in input ? checkedError(input.error) : undefined;
  // With a session: one read of the request, the session, its user's sign-in facts and the project's gate.
  const read = !error && "session" in input ? await readForResponse(ctx, input.samlRequestId, input.session.sessionId) : undefined;
  const r = read ? stillOpenSaml(read.request, now) : await openRequest(ctx, input.samlRequestId, now);
  if (!r.app.active) throw failedPrecondition("Errors.SamlRequest.AppInactive", "the service provider's application was deactivated");
  const cert = await idp.certificates.active();
  const answering: Answering = { requestId: r.requestId, acsUrl: r.acsUrl, issuer: r.issuer };
  const signing = { entityId: entityIdOf(idp.externalUrl), cert, signResponse: r.app.config.signResponse && r.binding === BINDINGS.post };
  const denied = async (e: SamlError | "InvalidNameIDPolicy", description: string | undefined) => {
    const xml = await errorResponse(answering, { ...signing, signResponse: r.binding === BINDINGS.post }, e, description, now);
    await finish(ctx, r, now, "saml.request.failed", { issuer: r.issuer, error: e });
    return { answer: await encode(r, xml, cert.privateKey), at: now };
  };
  if (error) return denied(error.error, error.description);
  if (!("session" in input) || !read) throw invalidArgument("Errors.SamlRequest.Response.Missing", "give either session or error");
  const session: LinkedSession = provenSession(input.session.sessionId, input.session.sessionToken, read.session, now);
  await assertSignInComplete(ctx, session, read.facts);
  const stale = reauthenticationProblem(SAML_REQUEST, { createdAt: r.createdAt, fresh: r.forceAuthn, maxAge: null }, authTime(session), now);
  if (stale) throw stale;
  if (read.gate !== true) return denied("RequestDenied", "the user may not sign in to this application");
  // The session's user as the assertion shows it, read with the rest (the same user as `facts`, of the instance).
  const user = read.user;
  if (!user || user.id !== session.userId) throw notFound("Errors.User.NotFound", "the session's user no longer exists");
  const roles = await chosenRoles(ctx, r, user.id);
  const config = r.app.config;
  const encryptFor = config.encryptAssertions ? config.encryptionCertificate : undefined;
  const extra = await actionAttributes(ctx, idp, user, r.issuer);
  const nid = await nameIdFor(ctx, r, user, session.id, now);
  if (!nid) return denied("InvalidNameIDPolicy", "the service provider asked for the user's e-mail address: the user has none");
  const xml = await successResponse(answering, signing, { user, session, config, roles, extra, nameId: nid }, now, encryptFor);
  await finish(
    ctx,
    r,
    now,
    "saml.request.succeeded",
    { issuer: r.issuer, userId: user.id, sessionId: session.id },
    {
      sessionId: session.id,
      appId: r.app.id,
      instanceId: ctx.instanceId,
      protocol: "saml",
      nameId: nid.value,
      nameIdFormat: nid.format,
      sessionIndex: session.id,
    },
  );
  return { answer: await encode(r, xml, cert.privateKey), at: now };
}
