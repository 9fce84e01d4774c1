// The OAuth token service's public surface. Each concern lives in its own
// module: client-auth (client authentication), assertions (RFC 7523),
// scopes, token-formats (opaque and JWT strategies), issue, grants/ (one
// module per grant type), resolve (the one bearer-token resolution path),
// claims, introspection, revocation, runtime (caches and signing keys).
// HTTP lives in src/http/oauth; none of this knows of it.
export { CLIENT_ASSERTION_TYPE, GRANT_JWT_BEARER } from "./assertions.js";
export { tokenRoleClaims, userClaims } from "./claims.js";
export { authenticateClient, basicCredentials, type ClientAuthInput, type ClientRecord, findClient, publicClient } from "./client-auth.js";
export { OAuthErrors } from "./errors.js";
export { GRANT_TYPES, type Grant, grantFor } from "./grants/index.js";
export { introspect, userinfo } from "./introspection.js";
export { issueTokens, type TokenResponse } from "./issue.js";
export { type AppToken, type ResolvedToken, resolveToken, type UserInfoSource, type UserToken } from "./resolve.js";
export { purgeExpiredTokens, revoke } from "./revocation.js";
export type { AuthCache, OAuthRuntime } from "./runtime.js";
export { type GrantedScopes, grantAppScopes, grantScopes, MANAGEMENT_AUDIENCE, SCOPE_MANAGEMENT, SCOPE_METADATA } from "./scopes.js";
