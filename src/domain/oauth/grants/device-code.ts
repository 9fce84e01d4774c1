// RFC 8628 §3.4–3.5: the device polls with its device code. Until the user has signed in and allowed the application
// on the hosted login: authorization_pending (slow_down when it polls before its interval is over, which also raises
// the interval); then the tokens, once. The auth request the user signed in with holds the sign-in, and its
// redemption is the same conditional UPDATE as an authorization code's, written with the tokens: a second poll after
// the tokens (a replayed device code) is invalid_grant and revokes what the first got, as a replayed code does.
import { sha256 } from "../../../crypto/tokens.js";
import { GRANT_DEVICE_CODE, SLOW_DOWN_STEP } from "../device.js";
import { accessDenied, authorizationPending, expiredToken, invalidGrant, invalidRequest, slowDown } from "../errors.js";
import { clientProjects } from "../scopes.js";
import { oidcClient } from "./oidc-client.js";
import { issueForSignIn } from "./sign-in-tokens.js";
import type { Grant } from "./types.js";
import { revokeFamily } from "./user-tokens.js";

const DEVICE_CODE_MAX = 100;
/** A poll this much before the interval is over still counts as on time (a client's timer, the network). */
const POLL_SLACK_MS = 1_000;
const invalidCode = () => invalidGrant("the device code is invalid, or was already used");

export const deviceCode: Grant = {
  type: GRANT_DEVICE_CODE,
  parameters: ["device_code", "client_id"],
  // Public clients (auth method none) name themselves with client_id: oidcClient decides.
  clientAuthentication: "optional",
  async handle(rt, params, authenticated, now) {
    const client = await oidcClient(rt, authenticated, params, GRANT_DEVICE_CODE);
    const code = params.device_code;
    if (!code) throw invalidRequest("device_code is required");
    if (code.length > DEVICE_CODE_MAX) throw invalidCode();
    const projects = clientProjects(client.clientId, client.projectId);
    const poll = await rt.store.deviceAuthorizations.poll(rt.instanceId, client.appId, sha256(code), now, {
      raiseBy: SLOW_DOWN_STEP,
      slackMs: POLL_SLACK_MS,
      projects,
      clientId: client.clientId,
    });
    if (!poll) throw invalidCode();
    const r = poll.request;
    const user = poll.user;
    if (r?.codeUsedAt && r.userId) {
      await revokeFamily(rt, r.id, { id: r.userId, orgId: user?.orgId ?? r.app.orgId }, now, "device_code.replayed");
      throw invalidCode();
    }
    if (poll.expiresAt.getTime() <= now.getTime()) throw expiredToken();
    if (!r?.finishedAt) throw poll.tooFast ? slowDown(poll.interval) : authorizationPending();
    if (!r.userId || !r.authTime) throw accessDenied("the user did not allow the device");
    // RFC 8628 has no nonce: the device's ID token carries none.
    return issueForSignIn(rt, client, { ...r, authTime: r.authTime, nonce: null }, poll, now, "device_code");
  },
};
