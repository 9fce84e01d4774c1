// The one error type of the domain. Adapters map it once per protocol
// (Connect/gRPC code + google.rpc.ErrorInfo, SCIM Error, OAuth error, HTTP
// status) from its kind and id; anything else thrown is an internal error and
// is logged.
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

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** Stable, machine-readable id such as `Errors.User.NotFound`. */
    readonly id: string,
    message: string,
    readonly metadata: Record<string, string> = {},
  ) {
    super(message);
    this.name = "DomainError";
  }
}

export const notFound = (id: string, message: string) => new DomainError("NotFound", id, message);
export const alreadyExists = (id: string, message: string) => new DomainError("AlreadyExists", id, message);
export const invalidArgument = (id: string, message: string, metadata?: Record<string, string>) => new DomainError("InvalidArgument", id, message, metadata);
export const failedPrecondition = (id: string, message: string, metadata?: Record<string, string>) =>
  new DomainError("FailedPrecondition", id, message, metadata);
export const permissionDenied = (id: string, message: string) => new DomainError("PermissionDenied", id, message);
export const unauthenticated = (id: string, message: string) => new DomainError("Unauthenticated", id, message);

let translate: (err: unknown) => unknown = (err) => err;

/** Installed by the store: how a driver error (a NUL in a text value, say) reads as a domain error. */
export function setDriverErrorTranslator(fn: (err: unknown) => unknown): void {
  translate = fn;
}

/** The domain error `err` is or stands for; undefined for an unexpected error (an adapter logs it and answers Internal). */
export function asDomainError(err: unknown): DomainError | undefined {
  if (err instanceof DomainError) return err;
  const t = translate(err);
  return t instanceof DomainError ? t : undefined;
}
