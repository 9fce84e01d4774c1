// The Connect side of the shared pieces: authentication interceptor, the
// mapping of domain errors to Connect/gRPC codes with google.rpc.ErrorInfo,
// and the per-request domain context.
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { authenticate } from "../domain/authn.js";
import type { Clock, Ctx, Principal } from "../domain/context.js";
import { type ErrorKind, SvcError } from "../domain/errors.js";
import type { PrismaClient } from "../store/db.js";
import { isUnstorableText } from "../store/sql.js";

export interface ApiDeps {
  db: PrismaClient;
  instanceId: string;
  clock: Clock;
  log: Logger;
}

const principalKey = createContextKey<Principal | undefined>(undefined, { description: "authenticated principal" });
const requestIdKey = createContextKey<string>("", { description: "request id" });

const CODES: Record<ErrorKind, Code> = {
  NotFound: Code.NotFound,
  AlreadyExists: Code.AlreadyExists,
  InvalidArgument: Code.InvalidArgument,
  FailedPrecondition: Code.FailedPrecondition,
  PermissionDenied: Code.PermissionDenied,
  Unauthenticated: Code.Unauthenticated,
  ResourceExhausted: Code.ResourceExhausted,
  Unavailable: Code.Unavailable,
  Internal: Code.Internal,
};

/** Services that answer without a token (load balancers and tooling). */
const PUBLIC_SERVICES = new Set(["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);

export function toConnectError(err: unknown, requestId: string, log: Logger): ConnectError {
  if (err instanceof SvcError) {
    const headers = new Headers();
    if (err.kind === "Unauthenticated") {
      // RFC 6750 §3: no error attribute when the request carried no credentials at all.
      headers.set("www-authenticate", err.id === "Errors.Token.Missing" ? 'Bearer realm="svc"' : 'Bearer realm="svc", error="invalid_token"');
    }
    return new ConnectError(err.message, CODES[err.kind], headers, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: err.id, domain: "svc", metadata: err.metadata }) },
    ]);
  }
  if (err instanceof ConnectError) return err;
  if (isUnstorableText(err)) {
    return new ConnectError("text fields must not contain U+0000", Code.InvalidArgument, undefined, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "Errors.Input.Text", domain: "svc" }) },
    ]);
  }
  log.error({ err, requestId }, "unexpected error");
  return new ConnectError(`internal error (request id ${requestId})`, Code.Internal, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "Errors.Internal", domain: "svc", metadata: { requestId } }) },
  ]);
}

export function authInterceptor(deps: ApiDeps): Interceptor {
  return (next) => async (req) => {
    const requestId = req.header.get("x-request-id") || randomUUID();
    req.contextValues.set(requestIdKey, requestId);
    try {
      if (!PUBLIC_SERVICES.has(req.service.typeName)) {
        const principal = await authenticate(deps.db, deps.instanceId, req.header.get("authorization"), deps.clock());
        req.contextValues.set(principalKey, principal);
      }
      return await next(req);
    } catch (err) {
      throw toConnectError(err, requestId, deps.log);
    }
  };
}

/** The domain context of one authenticated call. */
export function domainCtx(deps: ApiDeps, hctx: HandlerContext): Ctx {
  const principal = hctx.values.get(principalKey);
  if (!principal) throw new ConnectError("unauthenticated", Code.Unauthenticated);
  return { db: deps.db, instanceId: deps.instanceId, principal, clock: deps.clock, log: deps.log, requestId: hctx.values.get(requestIdKey) };
}
