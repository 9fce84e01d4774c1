// The OAuth domain's error reasons. They are DomainErrors like every other;
// the OAuth adapter (src/http/oauth/errors.ts) picks RFC 6749 §5.2's `error`
// and the HTTP status from the id, in one table.
import { DomainError } from "../errors.js";

export const OAuthErrors = {
  InvalidRequest: "Errors.OAuth.InvalidRequest",
  InvalidClient: "Errors.OAuth.InvalidClient",
  InvalidGrant: "Errors.OAuth.InvalidGrant",
  UnauthorizedClient: "Errors.OAuth.UnauthorizedClient",
  UnsupportedGrantType: "Errors.OAuth.UnsupportedGrantType",
  InvalidScope: "Errors.OAuth.InvalidScope",
  /** RFC 8693 §2.2.2: an audience or resource the server will not issue a token for. */
  InvalidTarget: "Errors.OAuth.InvalidTarget",
} as const;

export const invalidRequest = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidRequest, d);
export const invalidClient = (d = "client authentication failed") => new DomainError("Unauthenticated", OAuthErrors.InvalidClient, d);
export const invalidGrant = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidGrant, d);
export const unauthorizedClient = (d: string) => new DomainError("PermissionDenied", OAuthErrors.UnauthorizedClient, d);
export const invalidScope = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidScope, d);
export const invalidTarget = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidTarget, d);
export const unsupportedGrantType = (d: string) => new DomainError("InvalidArgument", OAuthErrors.UnsupportedGrantType, d);

export const isOAuthError = (err: unknown, id: string): err is DomainError => err instanceof DomainError && err.id === id;
