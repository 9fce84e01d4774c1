// OAuth 2.0 / OpenID Connect endpoints (discovery, JWKS, authorization, token,
// introspection, revocation, userinfo, end session): routing and the one error
// answer. The endpoints are in endpoints.ts and browser.ts, the body reader in
// form.ts, the error mapping in errors.ts.
//
// Served on Node's request and response directly (HTTP/1.1 and HTTP/2): these
// are the hottest endpoints of the service, and Express's per-request routing
// cost as much CPU as a cached userinfo answer.
import { asDomainError } from "../../domain/errors.js";
import type { OAuthRuntime } from "../../domain/oauth/tokens.js";
import { authorizeEndpoint, endSessionEndpoint } from "./browser.js";
import { DEVICE_AUTHORIZATION_PATH, deviceAuthorization } from "./device.js";
import { discovery, type Handler, introspection, jwks, revocation, token, userinfoEndpoint } from "./endpoints.js";
import { NO_STORE, type Res, sendJson, sendOAuthError } from "./errors.js";
import type { Req } from "./form.js";

import { PAR_PATH, pushedAuthorizationRequest } from "./par.js";
export type OAuthHandler = (req: Req, res: Res) => Promise<void>;

/** The endpoints by lower-cased path; Express-era routing kept: case-insensitive, one trailing slash ignored. */
const OAUTH_PATHS = new Set([
  "/.well-known/openid-configuration",
  "/.well-known/oauth-authorization-server",
  "/oauth/v2/keys",
  "/oauth/v2/token",
  "/oauth/v2/introspect",
  PAR_PATH,
  "/oauth/v2/revoke",
  "/oidc/v1/userinfo",
  "/oauth/v2/authorize",
  "/oidc/v1/end_session",
  DEVICE_AUTHORIZATION_PATH,
]);

function endpointOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const q = url.indexOf("?");
  let path = (q < 0 ? url : url.slice(0, q)).toLowerCase();
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  return OAUTH_PATHS.has(path) ? path : undefined;
}

/** Whether the request is for one of the OAuth/OIDC endpoints. */
export function isOAuthPath(url: string | undefined): boolean {
  return endpointOf(url) !== undefined;
}

export function oauthHandler(rt: OAuthRuntime): OAuthHandler {
  const sendDiscovery = discovery(rt);
  const userinfo = userinfoEndpoint(rt);
  const authorize = authorizeEndpoint(rt);
  const endSession = endSessionEndpoint(rt);
  const routes: Record<string, Record<string, Handler>> = {
    "/.well-known/openid-configuration": { GET: sendDiscovery },
    "/.well-known/oauth-authorization-server": { GET: sendDiscovery },
    "/oauth/v2/keys": { GET: jwks(rt) },
    "/oauth/v2/token": { POST: token(rt) },
    "/oauth/v2/introspect": { POST: introspection(rt) },
    "/oauth/v2/revoke": { POST: revocation(rt) },
    [PAR_PATH]: { POST: pushedAuthorizationRequest(rt) },
    "/oidc/v1/userinfo": { GET: userinfo, POST: userinfo },
    "/oauth/v2/authorize": { GET: authorize, POST: authorize },
    "/oidc/v1/end_session": { GET: endSession, POST: endSession },
    [DEVICE_AUTHORIZATION_PATH]: { POST: deviceAuthorization(rt) },
  };

  return async (req, res) => {
    const methods = routes[endpointOf(req.url) ?? ""] ?? {};
    const handler = methods[req.method === "HEAD" ? "GET" : (req.method ?? "")];
    try {
      if (!handler) {
        req.resume();
        const allowed = Object.keys(methods);
        sendJson(res, 405, { error: "invalid_request", error_description: `use ${allowed.join(" or ")}` }, { allow: allowed.join(", ") });
        return;
      }
      await handler(req, res);
    } catch (err) {
      failed(rt, req, res, err);
    }
  };
}

function failed(rt: OAuthRuntime, req: Req, res: Res, err: unknown): void {
  // A body left unread (an early error) must not be taken for the next request on this connection.
  if (!req.readableEnded) req.resume();
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const domain = asDomainError(err);
  if (domain && sendOAuthError(res, domain, /^basic /i.test(req.headers.authorization ?? ""))) return;
  rt.log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error in an OAuth endpoint");
  sendJson(res, 500, { error: "server_error", error_description: "internal error" }, NO_STORE);
}
