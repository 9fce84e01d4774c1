// OpenID Connect discovery / RFC 8414 authorization server metadata.
import { SIGNING_ALGS } from "../../domain/access/app-settings.js";
import { PROMPTS } from "../../domain/oauth/authorize/authorize.js";
import { GRANT_TYPES, SCOPE_MANAGEMENT, SCOPE_METADATA } from "../../domain/oauth/tokens.js";

const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"];
/** Public clients (auth method none, PKCE) too, at the token and revocation endpoints; introspection needs credentials. */
const TOKEN_AUTH_METHODS = [...CLIENT_AUTH_METHODS, "none"];

export function discoveryDocument(issuer: string): string {
  return JSON.stringify({
    issuer,
    authorization_endpoint: `${issuer}/oauth/v2/authorize`,
    token_endpoint: `${issuer}/oauth/v2/token`,
    device_authorization_endpoint: `${issuer}/oauth/v2/device_authorization`,
    introspection_endpoint: `${issuer}/oauth/v2/introspect`,
    revocation_endpoint: `${issuer}/oauth/v2/revoke`,
    userinfo_endpoint: `${issuer}/oidc/v1/userinfo`,
    pushed_authorization_request_endpoint: `${issuer}/oauth/v2/par`,
    // Per application (requirePushedAuthorizationRequests); not for every client of the instance.
    require_pushed_authorization_requests: false,
    end_session_endpoint: `${issuer}/oidc/v1/end_session`,
    jwks_uri: `${issuer}/oauth/v2/keys`,
    grant_types_supported: GRANT_TYPES,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    code_challenge_methods_supported: ["S256"],
    prompt_values_supported: PROMPTS,
    authorization_response_iss_parameter_supported: true,
    scopes_supported: ["openid", "profile", "email", "phone", "offline_access", SCOPE_MANAGEMENT, "urn:svc:iam:org:projects:roles", SCOPE_METADATA],
    claims_supported: [
      "sub",
      "iss",
      "aud",
      "azp",
      "exp",
      "iat",
      "auth_time",
      "nonce",
      "at_hash",
      "sid",
      "amr",
      "name",
      "given_name",
      "family_name",
      "nickname",
      "preferred_username",
      "locale",
      "updated_at",
      "email",
      "email_verified",
      "phone_number",
      "phone_number_verified",
      SCOPE_METADATA,
    ],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: SIGNING_ALGS,
    token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ["RS256"],
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: ["RS256"],
    revocation_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: ["RS256"],
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false,
    // OIDC Back-Channel Logout 1.0 (per application, backchannel_logout_uri): the logout token always has sid.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    // OIDC Front-Channel Logout 1.0 (per application, frontchannel_logout_uri), with iss and sid when it asks.
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
  });
}
