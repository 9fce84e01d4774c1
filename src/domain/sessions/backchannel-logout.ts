// Ending sessions tells the OIDC applications they signed into (Back-Channel Logout 1.0): a logout token per
// application with a backchannel_logout_uri, queued in the outbox in the transaction that ends the sessions, so it is
// delivered (with retries) exactly when the sessions are gone, and never when the transaction rolls back. Every path
// that ends sessions calls this first, while the sessions' participants still exist.

import type { Store } from "../../store/index.js";
import type { EndingSessions } from "../../store/logout-deliveries.js";

/** Attempts before a logout token is given up on (the backoff doubles from SVC_ACTIONS_DELIVERY_BACKOFF_MS, capped at an hour). */
export const LOGOUT_DELIVERY_ATTEMPTS = 12;

/** Queues the logout tokens of the sessions about to end (`tx`: the transaction that ends them); how many. */
export function queueBackchannelLogout(tx: Store, instanceId: string, ending: EndingSessions, at: Date): Promise<number> {
  return tx.logoutDeliveries.queueBackchannel(instanceId, ending, LOGOUT_DELIVERY_ATTEMPTS, at);
}
