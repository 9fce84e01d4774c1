// The one error type of the domain. Adapters map it once per protocol
// (Connect/gRPC code + google.rpc.ErrorInfo, SCIM Error, OAuth error, HTTP
// status); anything else thrown is an internal error and is logged.
export type ErrorKind =
  | "NotFound"
  | "AlreadyExists"
  | "InvalidArgument"
  | "FailedPrecondition"
  | "PermissionDenied"
  | "Unauthenticated"
  | "ResourceExhausted"
  | "Unavailable"
  | "Internal";

export class SvcError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** Stable, machine-readable id such as `Errors.User.NotFound`. */
    readonly id: string,
    message: string,
    readonly metadata: Record<string, string> = {},
  ) {
    super(message);
    this.name = "SvcError";
  }
}

export const notFound = (id: string, message: string) => new SvcError("NotFound", id, message);
export const alreadyExists = (id: string, message: string) => new SvcError("AlreadyExists", id, message);
export const invalidArgument = (id: string, message: string, metadata?: Record<string, string>) => new SvcError("InvalidArgument", id, message, metadata);
export const failedPrecondition = (id: string, message: string) => new SvcError("FailedPrecondition", id, message);
export const permissionDenied = (id: string, message: string) => new SvcError("PermissionDenied", id, message);
export const unauthenticated = (id: string, message: string) => new SvcError("Unauthenticated", id, message);
