// SCIM Error bodies (RFC 7644 §3.12) with the svc ErrorDetail extension:
// protocol errors of the adapter (ScimError) and the one mapping of domain
// errors (DomainError) to status and scimType.
import type { Logger } from "pino";
import { asDomainError, type ErrorKind } from "../../domain/errors.js";

export const ERROR_URN = "urn:ietf:params:scim:api:messages:2.0:Error";
export const ERROR_DETAIL_URN = "urn:ietf:params:scim:api:svc:messages:2.0:ErrorDetail";
export const SCIM_CONTENT_TYPE = "application/scim+json; charset=utf-8";

export type ScimType =
  | "invalidFilter"
  | "tooMany"
  | "uniqueness"
  | "mutability"
  | "invalidSyntax"
  | "invalidPath"
  | "noTarget"
  | "invalidValue"
  | "invalidVers"
  | "sensitive";

/** A protocol error of the SCIM adapter. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    /** Stable error id, like the domain's `Errors.*` ids. */
    readonly id: string,
    detail: string,
  ) {
    super(detail);
    this.name = "ScimError";
  }
}

const KINDS: Record<ErrorKind, { status: number; scimType?: ScimType }> = {
  NotFound: { status: 404, scimType: "noTarget" },
  AlreadyExists: { status: 409, scimType: "uniqueness" },
  InvalidArgument: { status: 400, scimType: "invalidValue" },
  // e.g. deactivating oneself or the last IAM_OWNER: the request is valid but the state refuses it.
  FailedPrecondition: { status: 409 },
  PermissionDenied: { status: 403 },
  Unauthenticated: { status: 401 },
  ResourceExhausted: { status: 429 },
  Unavailable: { status: 503 },
  Internal: { status: 500 },
};

/**
 * Errors whose status is not their kind's: the same Idempotency-Key with another request is 422, one whose first
 * request was still running 409 (draft-ietf-httpapi-idempotency-key-header), neither a uniqueness conflict.
 */
const BY_ID: Record<string, { status: number; scimType?: ScimType }> = {
  "Errors.Idempotency.KeyReused": { status: 422 },
  "Errors.Idempotency.InFlight": { status: 409 },
};

export interface ScimErrorBody {
  schemas: string[];
  status: string;
  scimType?: ScimType;
  detail: string;
  [ERROR_DETAIL_URN]: { id: string; message: string };
}

function body(status: number, scimType: ScimType | undefined, id: string, detail: string): ScimErrorBody {
  return {
    schemas: [ERROR_URN, ERROR_DETAIL_URN],
    status: String(status),
    ...(scimType ? { scimType } : {}),
    detail,
    // The message key is the stable id; clients translate it, `detail` is for people.
    [ERROR_DETAIL_URN]: { id, message: id },
  };
}

/** Status, headers and body for any error; unexpected errors are logged and answered without internals. */
export function toScimError(err: unknown, log: Logger, requestId: string): { status: number; headers: Record<string, string>; body: ScimErrorBody } {
  if (err instanceof ScimError) return { status: err.status, headers: {}, body: body(err.status, err.scimType, err.id, err.message) };
  const de = asDomainError(err);
  if (de) {
    const err = de;
    const k = BY_ID[err.id] ?? KINDS[err.kind];
    const headers: Record<string, string> = {};
    if (err.kind === "Unauthenticated") {
      // RFC 6750 §3: no error attribute when the request carried no credentials at all.
      headers["www-authenticate"] = err.id === "Errors.Token.Missing" ? 'Bearer realm="svc"' : 'Bearer realm="svc", error="invalid_token"';
    }
    if (err.metadata.retryAfter) headers["retry-after"] = err.metadata.retryAfter;
    if (err.metadata.outcome) headers["svc-outcome"] = err.metadata.outcome;
    return { status: k.status, headers, body: body(k.status, k.scimType, err.id, err.message) };
  }
  log.error({ err, requestId }, "unexpected error in SCIM request");
  return { status: 500, headers: {}, body: body(500, undefined, "Errors.Internal", `internal error (request id ${requestId})`) };
}
