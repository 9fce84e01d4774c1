// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): the client names the sign-in with an ID token it
// was given (id_token_hint, accepted expired), svc ends that session and everything issued from it, and sends the
// browser back to a registered post-logout redirect URI, or to a signed-out page when there is none to trust. The
// session's applications are told like for any other end of a session (OIDC back-channel logout tokens and SAML SOAP
// LogoutRequests from the outbox), and, through this browser, the OIDC front-channel URIs and the SAML SPs with only
// HTTP-Redirect/POST SLO endpoints (the HTTP layer starts that chain: src/domain/saml/logout.ts startLogout).

import type { LogoutParticipant } from "../../store/saml.js";
import { samlParticipantsOf } from "../saml/logout.js";
import { frontchannelLogoutUrls } from "../sessions/frontchannel-logout.js";
import { liveSession, terminateSession } from "../sessions/link.js";
import { withQuery } from "./authorize/callback.js";
import { findClient } from "./client-auth.js";
import { hintClient, readIdTokenHint } from "./id-token.js";
import type { OAuthRuntime } from "./runtime.js";

export type EndSessionOutcome =
  | { kind: "page"; status: 400; message: string }
  /**
   * Signed out with no redirect URI to trust: `ended` whether a session was ended (else the browser's may remain).
   * `frames`: the front-channel logout URIs to load first (frontchannel-logout.ts), with `redirect` too; `saml`: the
   * SAML SPs of the ended session to send LogoutRequests through the browser (those with only HTTP-Redirect/POST SLO
   * endpoints: the SOAP ones are told from the outbox, as the OIDC back-channel ones).
   */
  | { kind: "signedOut"; ended: boolean; frames: string[]; saml: LogoutParticipant[] }
  | { kind: "redirect"; location: string; frames: string[]; saml: LogoutParticipant[] };

const STATE_MAX = 2048;

export async function endSession(rt: OAuthRuntime, params: Record<string, string | undefined>, now: Date): Promise<EndSessionOutcome> {
  const bad = (message: string): EndSessionOutcome => ({ kind: "page", status: 400, message });
  const { id_token_hint: hintToken, client_id: namedClient, post_logout_redirect_uri: redirectUri, state } = params;
  const hint = hintToken === undefined ? undefined : await readIdTokenHint(rt, hintToken);
  if (hintToken !== undefined && !hint) return bad("The id_token_hint is not an ID token issued by this server.");
  if (namedClient !== undefined && hint && !hint.aud.includes(namedClient)) return bad("The id_token_hint was issued to another client.");
  if (state !== undefined && state.length > STATE_MAX) return bad(`The state must be at most ${STATE_MAX} characters.`);
  const clientId = namedClient ?? (hint ? hintClient(hint) : undefined);
  const client = clientId ? await findClient(rt, clientId) : null;
  if (namedClient !== undefined && !client?.oidc) return bad("Unknown client_id.");
  // Only the session the hint names, and only while it is still its user's: without a hint there is nothing to end
  // (svc keeps no browser cookie of its own).
  let ended = false;
  let frames: string[] = [];
  let saml: LogoutParticipant[] = [];
  if (hint?.sid) {
    const session = await liveSession(rt.store, rt.instanceId, hint.sid, now);
    if (session && session.userId === hint.sub) {
      frames = await frontchannelLogoutUrls(rt.store, rt.instanceId, rt.issuer, [session.id]);
      saml = await samlParticipantsOf(rt, [session.id]);
      ended = await terminateSession(rt.store, rt.instanceId, session.id, now);
      if (!ended) {
        frames = [];
        saml = [];
      }
    }
  }
  if (redirectUri !== undefined && client?.oidc?.postLogoutRedirectUris.includes(redirectUri)) {
    return { kind: "redirect", location: withQuery(redirectUri, { state }), frames, saml };
  }
  return { kind: "signedOut", ended, frames, saml };
}
