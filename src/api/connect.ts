// The Connect side of the shared pieces: authentication interceptor, the
// mapping of domain errors to Connect/gRPC codes with google.rpc.ErrorInfo,
// and the per-request domain context.
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { Clock, Ctx } from "../domain/context.js";
import { asDomainError, type ErrorKind } from "../domain/errors.js";
import { authenticate } from "../domain/oauth/authn.js";
import type { PrismaClient } from "../store/db.js";
import type { Store } from "../store/index.js";

export interface ApiDeps {
  store: Store;
  /** Transitional: until authentication reads through the store. */
  db: PrismaClient;
  instanceId: string;
  clock: Clock;
  log: Logger;
}

const ctxKey = createContextKey<Ctx | undefined>(undefined, { description: "the call's domain context" });

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

export function toConnectError(thrown: unknown, requestId: string, log: Logger): ConnectError {
  if (thrown instanceof ConnectError) return thrown;
  const err = asDomainError(thrown);
  if (err) {
    const headers = new Headers();
    if (err.kind === "Unauthenticated") {
      // RFC 6750 §3: no error attribute when the request carried no credentials at all.
      headers.set("www-authenticate", err.id === "Errors.Token.Missing" ? 'Bearer realm="svc"' : 'Bearer realm="svc", error="invalid_token"');
    }
    return new ConnectError(err.message, CODES[err.kind], headers, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: err.id, domain: "svc", metadata: err.metadata }) },
    ]);
  }
  log.error({ err: thrown, requestId }, "unexpected error");
  return new ConnectError(`internal error (request id ${requestId})`, Code.Internal, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "Errors.Internal", domain: "svc", metadata: { requestId } }) },
  ]);
}

export function authInterceptor(deps: ApiDeps): Interceptor {
  return (next) => async (req) => {
    const requestId = req.header.get("x-request-id") || randomUUID();
    try {
      if (!PUBLIC_SERVICES.has(req.service.typeName)) {
        const principal = await authenticate(deps.db, deps.instanceId, req.header.get("authorization"), deps.clock());
        const ctx: Ctx = { store: deps.store, db: deps.db, instanceId: deps.instanceId, principal, clock: deps.clock, log: deps.log, requestId };
        req.contextValues.set(ctxKey, ctx);
      }
      return await next(req);
    } catch (err) {
      throw toConnectError(err, requestId, deps.log);
    }
  };
}

/** The domain context of one authenticated call, built once by the interceptor. */
export function ctxOf(hctx: HandlerContext): Ctx {
  const ctx = hctx.values.get(ctxKey);
  if (!ctx) throw new ConnectError("unauthenticated", Code.Unauthenticated);
  return ctx;
}
