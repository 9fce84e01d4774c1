// OAuth 2.0 §4.1.3 with OIDC Core §3.1.3: a code from CreateCallback (or prompt=none) for tokens. The code is
// single-use and short-lived; its redemption is a conditional UPDATE in the statement that writes the tokens, so of
// two concurrent redemptions exactly one gets tokens, and any later use revokes everything issued under the code
// (OAuth 2.0 §4.1.2, Security BCP §4.5). Bound to the client and the redirect URI of the request; PKCE verified.
import { sha256 } from "../../../crypto/tokens.js";
import { verifierMatches } from "../authorize/pkce.js";
import { invalidGrant, invalidRequest } from "../errors.js";
import { clientProjects } from "../scopes.js";
import { oidcClient } from "./oidc-client.js";
import { issueForSignIn } from "./sign-in-tokens.js";
import type { Grant } from "./types.js";
import { revokeFamily } from "./user-tokens.js";

const CODE_MAX = 100;
const invalidCode = () => invalidGrant("the code is invalid, expired or was already used");

export const authorizationCode: Grant = {
  type: "authorization_code",
  parameters: ["code", "redirect_uri", "code_verifier", "client_id"],
  // Public clients (auth method none) send no credentials: oidcClient decides.
  clientAuthentication: "optional",
  async handle(rt, params, authenticated, now) {
    const client = await oidcClient(rt, authenticated, params, "authorization_code");
    const { code, redirect_uri: redirectUri, code_verifier: verifier } = params;
    if (!code) throw invalidRequest("code is required");
    if (!redirectUri) throw invalidRequest("redirect_uri is required");
    if (code.length > CODE_MAX) throw invalidCode();
    // One read: the request, its user, its session and the gates of the app's project.
    const read = await rt.store.authRequests.forGrant(rt.instanceId, sha256(code), client.clientId, clientProjects(client.clientId, client.projectId));
    const r = read.request;
    if (!r?.userId || !r.authTime || !r.codeExpiresAt) throw invalidCode();
    // Another client's code: refused, and left alone (the client it belongs to may still redeem it).
    if (r.appId !== client.appId) throw invalidCode();
    const user = read.user;
    if (r.codeUsedAt) {
      await revokeFamily(rt, r.id, { id: r.userId, orgId: user?.orgId ?? r.app.orgId }, now, "authorization_code.replayed");
      throw invalidCode();
    }
    if (r.codeExpiresAt.getTime() <= now.getTime()) throw invalidCode();
    if (redirectUri !== r.redirectUri) throw invalidGrant("redirect_uri differs from the one of the authorization request");
    if (r.codeChallenge) {
      if (!verifier) throw invalidGrant("code_verifier is required (the authorization request had a code_challenge)");
      if (!verifierMatches(r.codeChallenge, verifier)) throw invalidGrant("code_verifier does not match the code_challenge");
    } else if (verifier !== undefined) {
      // RFC 9700 §2.1.1: a verifier for a request without a challenge is an attack on a client that uses PKCE.
      throw invalidGrant("code_verifier sent, but the authorization request had no code_challenge");
    }
    return issueForSignIn(rt, client, { ...r, authTime: r.authTime }, read, now, "authorization_code");
  },
};
