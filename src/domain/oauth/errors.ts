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
  /** RFC 8628 §3.5: the device's user has not answered yet; polling too fast; the device code expired; the user said no. */
  AuthorizationPending: "Errors.OAuth.AuthorizationPending",
  SlowDown: "Errors.OAuth.SlowDown",
  ExpiredToken: "Errors.OAuth.ExpiredToken",
  AccessDenied: "Errors.OAuth.AccessDenied",
} as const;

export const invalidRequest = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidRequest, d);
export const invalidClient = (d = "client authentication failed") => new DomainError("Unauthenticated", OAuthErrors.InvalidClient, d);
export const invalidGrant = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidGrant, d);
export const unauthorizedClient = (d: string) => new DomainError("PermissionDenied", OAuthErrors.UnauthorizedClient, d);
export const invalidScope = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidScope, d);
export const invalidTarget = (d: string) => new DomainError("InvalidArgument", OAuthErrors.InvalidTarget, d);
export const authorizationPending = () =>
  new DomainError("FailedPrecondition", OAuthErrors.AuthorizationPending, "the user has not finished the authorization yet");
export const slowDown = (interval: number) =>
  new DomainError("FailedPrecondition", OAuthErrors.SlowDown, `polling too fast: wait at least ${interval} s between requests`);
export const expiredToken = () => new DomainError("FailedPrecondition", OAuthErrors.ExpiredToken, "the device code has expired");
export const accessDenied = (d: string) => new DomainError("PermissionDenied", OAuthErrors.AccessDenied, d);
export const unsupportedGrantType = (d: string) => new DomainError("InvalidArgument", OAuthErrors.UnsupportedGrantType, d);

export const isOAuthError = (err: unknown, id: string): err is DomainError => err instanceof DomainError && err.id === id;
