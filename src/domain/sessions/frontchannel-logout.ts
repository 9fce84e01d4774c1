// OIDC Front-Channel Logout 1.0: the logout page svc shows when sessions end in the browser loads each front-channel
// logout URI of the OIDC applications they signed into in an iframe, with iss and sid when the application asked
// (frontchannel_logout_session_required, §2). Read before the sessions end: their participants go with them.
import type { Store } from "../../store/index.js";

/** The iframe URLs for the sessions about to end (each application once per session). */
export async function frontchannelLogoutUrls(store: Store, instanceId: string, issuer: string, sessionIds: readonly string[]): Promise<string[]> {
  const targets = await store.logoutDeliveries.frontchannelTargets(instanceId, sessionIds);
  const urls = targets.map((t) => {
    // As the URL parser reads it (the registered text may differ in case, default port, stray whitespace).
    const u = new URL(t.uri);
    if (!t.sessionRequired) return u.toString();
    u.searchParams.set("iss", issuer);
    u.searchParams.set("sid", t.sid);
    return u.toString();
  });
  return [...new Set(urls)];
}
