// RFC 9126 §2: the pushed authorization request endpoint. The client authenticates as at the token endpoint (a public
// client names itself with client_id), under the same brute-force limits; a request it may not make is answered with
// the authorization endpoint's error in JSON (400), never through a browser.
import { pushAuthorizationRequest } from "../../domain/oauth/authorize/par.js";
import type { OAuthRuntime } from "../../domain/oauth/tokens.js";
import { authenticated, type Handler, hasCredentials, limited } from "./endpoints.js";
import { NO_STORE, sendJson } from "./errors.js";
import { postedForm } from "./form.js";

export const PAR_PATH = "/oauth/v2/par";

export function pushedAuthorizationRequest(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const form = await postedForm(req);
    const outcome = await limited(rt, req, form, PAR_PATH, async () => {
      const client = hasCredentials(req, form) ? await authenticated(rt, req, form, PAR_PATH) : undefined;
      return pushAuthorizationRequest(rt, client, form, rt.clock());
    });
    if (outcome.kind === "error") return sendJson(res, 400, { error: outcome.error, error_description: outcome.error_description }, NO_STORE);
    sendJson(res, 201, { request_uri: outcome.request_uri, expires_in: outcome.expires_in }, NO_STORE);
  };
}
