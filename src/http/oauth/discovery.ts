// OpenID Connect discovery / RFC 8414 authorization server metadata.
import { GRANT_TYPES, SCOPE_MANAGEMENT, SCOPE_METADATA } from "../../domain/oauth/tokens.js";

const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"];

export function discoveryDocument(issuer: string): string {
  return JSON.stringify({
    issuer,
    token_endpoint: `${issuer}/oauth/v2/token`,
    introspection_endpoint: `${issuer}/oauth/v2/introspect`,
    revocation_endpoint: `${issuer}/oauth/v2/revoke`,
    userinfo_endpoint: `${issuer}/oidc/v1/userinfo`,
    jwks_uri: `${issuer}/oauth/v2/keys`,
    grant_types_supported: GRANT_TYPES,
    // RFC 8414 requires the member; no authorization endpoint exists (yet), so no response type is served.
    response_types_supported: [],
    scopes_supported: ["openid", "profile", "email", "phone", SCOPE_MANAGEMENT, "urn:svc:iam:org:projects:roles", SCOPE_METADATA],
    claims_supported: [
      "sub",
      "iss",
      "aud",
      "exp",
      "iat",
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
    id_token_signing_alg_values_supported: ["RS256"],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ["RS256"],
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: ["RS256"],
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: ["RS256"],
    request_parameter_supported: false,
    claims_parameter_supported: false,
  });
}
