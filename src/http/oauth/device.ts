// RFC 8628 §3.1–3.2: the device authorization endpoint. The client authenticates as it is registered (a public client
// names itself with client_id), under the same brute-force limits as the token endpoint; the answer is never cached.
import { deviceClient, startDeviceAuthorization } from "../../domain/oauth/device.js";
import type { OAuthRuntime } from "../../domain/oauth/tokens.js";
import { authenticated, type Handler, hasCredentials, limited } from "./endpoints.js";
import { NO_STORE, sendJson } from "./errors.js";
import { postedForm } from "./form.js";

export const DEVICE_AUTHORIZATION_PATH = "/oauth/v2/device_authorization";

export function deviceAuthorization(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const form = await postedForm(req);
    const answer = await limited(rt, req, form, DEVICE_AUTHORIZATION_PATH, async () => {
      const client = hasCredentials(req, form) ? await authenticated(rt, req, form, DEVICE_AUTHORIZATION_PATH) : undefined;
      return startDeviceAuthorization(rt, await deviceClient(rt, client, form), form, rt.clock());
    });
    sendJson(res, 200, answer, NO_STORE);
  };
}
