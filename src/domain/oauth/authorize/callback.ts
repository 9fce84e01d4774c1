// Where the browser goes back to the client: the redirect URI with the authorization response in its query
// (OAuth 2.0 §4.1.2, with RFC 9207's iss so a client talking to several issuers can tell who answered).

/** The OAuth `error` values an authorization response may carry (OAuth 2.0 §4.1.2.1, OIDC Core §3.1.2.6). */
export const AUTHORIZATION_ERRORS = [
  "invalid_request",
  "unauthorized_client",
  "access_denied",
  "unsupported_response_type",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
  "interaction_required",
  "login_required",
  "account_selection_required",
  "consent_required",
  "request_not_supported",
  "request_uri_not_supported",
] as const;
export type AuthorizationError = (typeof AUTHORIZATION_ERRORS)[number];

/**
 * The redirect URI with `params` added to its query. Appended to the registered string as it is (never parsed and
 * re-serialised: URL would drop a default port or re-encode the path the client registered).
 */
export function withQuery(uri: string, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, v);
  const query = q.toString();
  if (!query) return uri;
  return `${uri}${uri.includes("?") ? (uri.endsWith("?") || uri.endsWith("&") ? "" : "&") : "?"}${query}`;
}

export const successCallback = (r: { redirectUri: string; state: string | null }, code: string, issuer: string) =>
  withQuery(r.redirectUri, { code, state: r.state ?? undefined, iss: issuer });

export const errorCallback = (r: { redirectUri: string; state: string | null }, error: AuthorizationError, description: string | undefined, issuer: string) =>
  withQuery(r.redirectUri, { error, error_description: description, state: r.state ?? undefined, iss: issuer });
