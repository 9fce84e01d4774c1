// Delivering a queued SAML LogoutRequest over SOAP (src/store/logout-deliveries.ts, SAML_SOAP_LOGOUT_KIND) for the
// outbox's worker: at each attempt a fresh LogoutRequest (new ID, IssueInstant, NotOnOrAfter) is made and signed with
// the IdP's active certificate (src/domain/saml/soap-logout.ts) and POSTed to the SP's SOAP SingleLogoutService as
// text/xml with the SAML SOAPAction; the SP's LogoutResponse in the answer decides (Success: delivered). The
// application is read again first: a deleted or deactivated one is not told (as the queueing leaves them out). The
// endpoint is held to the actions' SSRF rule like the logout tokens' (public only, unless SVC_ACTIONS_ALLOW_PRIVATE).
import { samlId } from "../domain/saml/logout-messages.js";
import { readSoapLogoutAnswer, SAML_SOAP_ACTION, soapLogoutRequest } from "../domain/saml/soap-logout.js";
import type { Store } from "../store/index.js";
import type { SamlSoapLogoutPayload } from "../store/logout-deliveries.js";
import type { DeliveryRow } from "../store/outbox.js";
import { CallFailure, postToTarget } from "./http.js";
import type { LogoutTokenSigner } from "./logout-tokens.js";

/** How long the LogoutRequest is valid: the SP acts on it at once; each retry sends a new one. */
const REQUEST_SECONDS = 120;
const TIMEOUT_MS = 10_000;
/** A LogoutResponse is a few KiB, signed; more than this is not one. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface SamlLogoutSender {
  store: Store;
  instanceId: string;
  clock: () => Date;
  allowPrivate: boolean;
  logoutTokens?: LogoutTokenSigner;
}

/** One attempt: undefined when delivered, else why not (`final`: trying again cannot help). */
export async function sendSamlLogout(o: SamlLogoutSender, row: DeliveryRow): Promise<{ error: string; final: boolean } | undefined> {
  const idp = o.logoutTokens?.saml;
  if (!idp) return { error: "no SAML signing certificate", final: true };
  const p = row.payload as unknown as SamlSoapLogoutPayload;
  const [app] = await o.store.saml.appsById(o.instanceId, [p.appId]);
  if (!app?.active || app.config.kind !== "saml") return { error: "the application was deleted or deactivated", final: true };
  const now = o.clock();
  const id = samlId();
  const request = { id, issuer: idp.entityId, destination: p.uri, nameId: p.nameId, nameIdFormat: p.nameIdFormat, sessionIndex: p.sessionIndex };
  const body = await soapLogoutRequest({ ...request, notOnOrAfter: new Date(now.getTime() + REQUEST_SECONDS * 1000) }, now, await idp.certificate());
  let answer: { status: number; body: Buffer };
  try {
    answer = await postToTarget(p.uri, {
      headers: { "content-type": "text/xml; charset=utf-8", soapaction: `"${SAML_SOAP_ACTION}"`, "cache-control": "no-store" },
      body,
      timeoutMs: TIMEOUT_MS,
      allowPrivate: o.allowPrivate,
      maxAnswerBytes: MAX_ANSWER_BYTES,
    });
  } catch (err) {
    return { error: err instanceof CallFailure ? err.message : String(err), final: false };
  }
  const outcome = readSoapLogoutAnswer(answer.status, answer.body.toString("utf8"), {
    requestId: id,
    spEntityId: app.config.entityId,
    certs: app.config.signingCertificates,
  });
  return outcome.delivered ? undefined : { error: outcome.error, final: outcome.final };
}
