// Ending sessions tells the applications they signed into, without a browser: OIDC applications with a
// backchannel_logout_uri get a logout token (Back-Channel Logout 1.0), SAML SPs with a SOAP SingleLogoutService a
// LogoutRequest over SOAP (SAML Bindings §3.2). Both are queued in the outbox in the transaction that ends the
// sessions, so they are delivered (with retries) exactly when the sessions are gone, and never when the transaction
// rolls back. Every path that ends sessions calls this first, while the sessions' participants still exist. SAML SPs
// with only HTTP-Redirect/POST SLO endpoints need the browser: svc's logout pages send them their LogoutRequests
// (src/domain/saml/logout.ts); a session that ends without a browser cannot tell them.

import type { Store } from "../../store/index.js";
import type { EndingSessions } from "../../store/logout-deliveries.js";

/** Attempts before a logout token is given up on (the backoff doubles from SVC_ACTIONS_DELIVERY_BACKOFF_MS, capped at an hour). */
export const LOGOUT_DELIVERY_ATTEMPTS = 12;

/**
 * Queues the logout tokens and SOAP LogoutRequests of the sessions about to end (`tx`: the transaction that ends them);
 * how many. `exceptApp`: a SAML SP that asked for this logout itself (it gets the LogoutResponse instead).
 */
export async function queueBackchannelLogout(tx: Store, instanceId: string, ending: EndingSessions, at: Date, exceptApp?: string): Promise<number> {
  const tokens = await tx.logoutDeliveries.queueBackchannel(instanceId, ending, LOGOUT_DELIVERY_ATTEMPTS, at);
  return tokens + (await tx.logoutDeliveries.queueSamlSoap(instanceId, ending, LOGOUT_DELIVERY_ATTEMPTS, at, exceptApp));
}
