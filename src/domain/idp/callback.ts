// The provider's answer at /idps/callback: the intent is found by its state, the code redeemed with the intent's
// PKCE verifier and nonce, the provider's user read and mapped, and the browser sent on to the login client's success
// URL with the intent's id and one-time token, or to its failure URL with an error. Without an intent there is no
// URL to trust: the answer is an error page.
import { intentVerifierAad } from "../../crypto/sealer.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { IntentRow } from "../../store/idps.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { authnSettings } from "../identity/authn/access.js";
import { type ExternalProfile, externalUserName, profileOf, storedMapping } from "./claims.js";
import { CALLBACK_PATH, callbackUrl, INTENT_LIFETIME_MS, relyingParty } from "./intents.js";
import { ProviderError } from "./ports.js";
import { relyingPartyView } from "./providers.js";

/** What the callback needs: no caller is authenticated there. */
/** An external provider's answer arrives in no one's name: svc acts on it as the system principal (request-context.ts systemContext). */
export type CallbackCtx = Ctx;

export type CallbackAnswer = { redirect: string } | { page: { status: number; title: string; message: string } };

export const withQuery = (base: string, params: Record<string, string>) => {
  const url = new URL(base);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
};

export const noIntent = (message: string): CallbackAnswer => ({ page: { status: 400, title: "Sign-in failed", message } });

/**
 * Whether `s` can be an intent's state (and so its SAML RelayState): svc makes them as opaque tokens (base64url). Any
 * other text names no intent and is not looked up (a NUL, which PostgreSQL text cannot hold, would fail the query).
 */
export const isIntentState = (s: string): boolean => /^[A-Za-z0-9_-]{1,200}$/.test(s);

export async function finishIntent(ctx: CallbackCtx, query: URLSearchParams): Promise<CallbackAnswer> {
  const state = query.get("state");
  if (!state) return noIntent("The identity provider's answer carries no state: start the sign-in again.");
  if (!isIntentState(state)) return noIntent("This sign-in is unknown or over: start it again.");
  const intent = await ctx.store.idps.intentByState(ctx.instanceId, state);
  // A SAML provider's intent is answered at its ACS only.
  if (!intent || intent.samlRequestId) return noIntent("This sign-in is unknown or over: start it again.");
  const now = ctx.clock();
  const fail = async (error: string, description: string): Promise<CallbackAnswer> => {
    await ctx.store.idps.failIntent(intent.id, error, now);
    return { redirect: withQuery(intent.failureUrl, { id: intent.id, error, error_description: description }) };
  };
  // A replayed answer never overwrites the first one.
  if (intent.succeededAt || intent.failedAt) {
    return { redirect: withQuery(intent.failureUrl, { id: intent.id, error: "invalid_state", error_description: "the sign-in was finished already" }) };
  }
  if (intent.expiresAt.getTime() <= now.getTime()) return fail("expired", "the sign-in took too long");
  const providerError = query.get("error");
  if (providerError) return fail(providerError.slice(0, 100), (query.get("error_description") ?? "the identity provider refused the sign-in").slice(0, 500));
  const idp = await ctx.store.idps.find(ctx.instanceId, intent.idpId);
  if (!idp) return fail("invalid_request", "the identity provider was removed");
  let claims: Record<string, unknown>;
  try {
    claims = await relyingParty(ctx).exchange(relyingPartyView(ctx, idp), answerUrl(ctx, query), checksOf(ctx, intent));
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    ctx.log.warn({ err, idpId: idp.id, intentId: intent.id }, "an external sign-in failed at the provider");
    return fail(err.code, err.message.slice(0, 500));
  }
  const sub = typeof claims.sub === "string" ? claims.sub : "";
  if (!sub) return { redirect: withQuery(intent.failureUrl, { id: intent.id, error: "invalid_response", error_description: "no sub claim" }) };
  return succeedIntent(ctx, intent, sub, profileOf(claims, storedMapping(idp.claimMapping)), claims, now);
}

/** The callback URL as the provider was told it, with the answer's parameters (what the relying party checks). */
function answerUrl(ctx: CallbackCtx, query: URLSearchParams): URL {
  const url = new URL(callbackUrl(ctx));
  for (const [k, v] of query) url.searchParams.append(k, v);
  return url;
}

function checksOf(ctx: CallbackCtx, intent: IntentRow) {
  const verifier = authnSettings(ctx).sealer.open(intent.codeVerifierEnc, intentVerifierAad(ctx.instanceId, intent.id));
  return { redirectUri: callbackUrl(ctx), state: intent.state, nonce: intent.nonce, codeVerifier: verifier.toString() };
}

/** Records the provider's user on the intent (once) and sends the browser to the success URL with the intent's token. */
export async function succeedIntent(
  ctx: CallbackCtx,
  intent: IntentRow,
  sub: string,
  profile: ExternalProfile,
  claims: Record<string, unknown>,
  now: Date,
): Promise<CallbackAnswer> {
  const userId = await ctx.store.idps.linkedUser(ctx.instanceId, intent.idpId, sub);
  const token = newOpaqueToken();
  const done = await ctx.store.transaction(async (tx) => {
    const ok = await tx.idps.succeedIntent(intent.id, {
      tokenHash: sha256(token),
      externalUserId: sub,
      externalUserName: externalUserName(profile, sub),
      profile: { ...profile },
      rawClaims: claims,
      userId,
      at: now,
      expiresAt: new Date(now.getTime() + INTENT_LIFETIME_MS),
    });
    if (ok) {
      const event = { aggregateType: "idp_intent", aggregateId: intent.id, type: "idp.intent.succeeded", payload: { idpId: intent.idpId, userId } };
      await tx.events.append(eventRow(ctx, event));
    }
    return ok;
  });
  if (!done)
    return { redirect: withQuery(intent.failureUrl, { id: intent.id, error: "invalid_state", error_description: "the sign-in was finished already" }) };
  return { redirect: withQuery(intent.successUrl, { id: intent.id, token, ...(userId ? { user: userId } : {}) }) };
}

export { CALLBACK_PATH };
