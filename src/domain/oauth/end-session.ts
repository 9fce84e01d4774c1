// RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): the client names the sign-in with an ID token it
// was given (id_token_hint, accepted expired), svc ends that session and everything issued from it, and sends the
// browser back to a registered post-logout redirect URI, or to a signed-out page when there is none to trust.
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
   * `frames`: the front-channel logout URIs to load first (frontchannel-logout.ts), with `redirect` too.
   */
  | { kind: "signedOut"; ended: boolean; frames: string[] }
  | { kind: "redirect"; location: string; frames: string[] };

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
  if (hint?.sid) {
    const session = await liveSession(rt.store, rt.instanceId, hint.sid, now);
    if (session && session.userId === hint.sub) {
      frames = await frontchannelLogoutUrls(rt.store, rt.instanceId, rt.issuer, [session.id]);
      ended = await terminateSession(rt.store, rt.instanceId, session.id, now);
      if (!ended) frames = [];
    }
  }
  if (redirectUri !== undefined && client?.oidc?.postLogoutRedirectUris.includes(redirectUri)) {
    return { kind: "redirect", location: withQuery(redirectUri, { state }), frames };
  }
  return { kind: "signedOut", ended, frames };
}
