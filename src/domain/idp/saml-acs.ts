// A SAML provider's answer at /idps/{idpId}/saml/acs (HTTP-POST binding): the intent is found by the RelayState (its
// state) and must be this provider's and still pending; the Response is validated against it (saml-response.ts) and
// the provider's user — the configured attribute, or the NameID — recorded on the intent exactly as an OpenID
// provider's is, so a session check takes it the same way. Each intent takes one answer: a replayed Response finds it
// finished. Without an intent there is no URL to trust: the answer is an error page.
import type { IdpRow } from "../../store/idps.js";
import { authnSettings } from "../identity/authn/access.js";
import { type CallbackAnswer, type CallbackCtx, isIntentState, noIntent, succeedIntent, withQuery } from "./callback.js";
import { profileOf, SAML_ATTRIBUTES, storedMapping } from "./claims.js";
import { spUrls, storedSamlConfig } from "./saml-config.js";
import { type SamlAssertion, SamlResponseError, validateResponse } from "./saml-response.js";

/** The ACS form: SAMLResponse (base64) and RelayState. */
export interface AcsForm {
  samlResponse?: string;
  relayState?: string;
}

/** The form's SAMLResponse as XML; throws SamlResponseError. */
function responseXml(encoded: string | undefined, maxBytes: number): string {
  const compact = (encoded ?? "").replace(/\s+/g, "");
  if (!compact) throw new SamlResponseError("invalid_response", "no SAMLResponse in the form");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw new SamlResponseError("invalid_response", "the SAMLResponse is not base64");
  if ((compact.length * 3) / 4 > maxBytes + 3) throw new SamlResponseError("invalid_response", `the SAMLResponse is larger than ${maxBytes} bytes`);
  return Buffer.from(compact, "base64").toString("utf8");
}

/** The provider's attributes as claims: one value as a string, several as a list. */
function claimsOf(a: SamlAssertion): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const [name, values] of Object.entries(a.attributes)) claims[name] = values.length === 1 ? values[0] : values;
  return { ...claims, NameID: a.nameId, NameIDFormat: a.nameIdFormat };
}

function externalUserId(idp: IdpRow, a: SamlAssertion): string {
  const attribute = storedSamlConfig(idp.saml).transientMappingAttributeName;
  const id = attribute ? (a.attributes[attribute]?.[0] ?? "") : a.nameId;
  if (!id || id.length > 255) {
    throw new SamlResponseError(
      "invalid_response",
      attribute ? `the Assertion has no attribute ${attribute} to identify the user` : "the Assertion has no NameID",
    );
  }
  return id;
}

export async function finishSamlIntent(ctx: CallbackCtx, idpId: string, form: AcsForm, maxXmlBytes: number): Promise<CallbackAnswer> {
  const relayState = form.relayState ?? "";
  if (!relayState) return noIntent("The identity provider's answer carries no RelayState: start the sign-in again.");
  if (!isIntentState(relayState)) return noIntent("This sign-in is unknown or over: start it again.");
  const intent = await ctx.store.idps.intentByState(ctx.instanceId, relayState);
  if (!intent || intent.idpId !== idpId || !intent.samlRequestId) return noIntent("This sign-in is unknown or over: start it again.");
  const now = ctx.clock();
  const fail = async (error: string, description: string): Promise<CallbackAnswer> => {
    await ctx.store.idps.failIntent(intent.id, error, now);
    return { redirect: withQuery(intent.failureUrl, { id: intent.id, error, error_description: description }) };
  };
  // A replayed Response never overwrites the first answer.
  if (intent.succeededAt || intent.failedAt) {
    return { redirect: withQuery(intent.failureUrl, { id: intent.id, error: "invalid_state", error_description: "the sign-in was finished already" }) };
  }
  if (intent.expiresAt.getTime() <= now.getTime()) return fail("expired", "the sign-in took too long");
  const idp = await ctx.store.idps.find(ctx.instanceId, intent.idpId);
  if (idp?.type !== "saml") return fail("invalid_request", "the identity provider was removed");
  const c = storedSamlConfig(idp.saml);
  const sp = spUrls(authnSettings(ctx).externalUrl, idp.id);
  let sub: string;
  let claims: Record<string, unknown>;
  try {
    const xml = responseXml(form.samlResponse, maxXmlBytes);
    const assertion = validateResponse(xml, {
      acsUrl: sp.acsUrl,
      spEntityId: sp.entityId,
      idpEntityId: c.entityId,
      requestId: intent.samlRequestId,
      certificates: c.certificates,
      now,
    });
    sub = externalUserId(idp, assertion);
    claims = claimsOf(assertion);
  } catch (err) {
    if (!(err instanceof SamlResponseError)) throw err;
    ctx.log.warn({ idpId: idp.id, intentId: intent.id, reason: err.message }, "a SAML provider's Response was refused");
    return fail(err.code, err.message);
  }
  return succeedIntent(ctx, intent, sub, profileOf(claims, storedMapping(idp.claimMapping, SAML_ATTRIBUTES)), claims, now);
}
