// The Connect side of the shared pieces: the interceptor that authenticates a
// call, checks the permission its proto method declares and builds the
// call's domain context once, and the mapping of domain errors to
// Connect/gRPC codes with google.rpc.ErrorInfo. The REST transcoder calls the
// router's handlers, so it passes through the same interceptor.
import { randomUUID } from "node:crypto";
import { create, type DescMethod, getOption, hasOption } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type AuthOption, auth_option } from "../../gen/svc/options/v2/auth_pb.js";
import { type Permission, readableOrgs } from "../domain/access/permissions.js";
import type { Clock, Ctx } from "../domain/context.js";
import { asDomainError, type ErrorKind, invalidArgument, permissionDenied } from "../domain/errors.js";
import type { FailureLimits } from "../domain/limits.js";
import { requestContext } from "../domain/request-context.js";
import { ILL_FORMED_MESSAGE, illFormedText } from "../domain/well-formed.js";

/** Who is calling, from the Authorization header: the composition root binds it to the token runtime. */
export type Authenticator = (authorization: string | null, now: Date, peer?: string) => Promise<Ctx["principal"]>;

/**
 * The request's TCP peer address, set by the server on every request (whatever the client sent under that name) and
 * forwarded by the REST transcoder: what the brute-force limits count per address.
 */
export const PEER_HEADER = "x-svc-peer";

export interface ApiDeps {
  store: Ctx["store"];
  authenticate: Authenticator;
  instanceId: string;
  clock: Clock;
  log: Logger;
  limits?: FailureLimits;
  /** The mail sender and the authentication methods' settings, handed to every call's context. */
  mailer?: Ctx["mailer"];
  authn?: Ctx["authn"];
  idp?: Ctx["idp"];
  samlMetadata?: Ctx["samlMetadata"];
  signals?: Ctx["signals"];
}

export const ctxKey = createContextKey<Ctx | undefined>(undefined, { description: "the call's domain context" });

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

/** The permission value that asks for an authenticated caller only (the domain decides the rest, e.g. a user acting on itself). */
export const AUTHENTICATED = "authenticated";

/** What an RPC declares in its proto (`svc.options.v2.auth_option`); undefined when it declares nothing. */
function declaredAuth(method: DescMethod): AuthOption | undefined {
  // Decoded once per method: reading an option decodes it from the descriptor's unknown fields, on every call otherwise.
  if (!declared.has(method)) declared.set(method, hasOption(method, auth_option) ? getOption(method, auth_option) : undefined);
  return declared.get(method);
}
const declared = new WeakMap<DescMethod, AuthOption | undefined>();

/**
 * Refuses a caller holding the RPC's permission nowhere (neither instance-wide nor in any organization), with the
 * error the domain gives for it. An RPC naming its resource (`check_field_name`) is left to the domain, which hides
 * the resource from callers with no role where it lives. An RPC without a declaration is refused: access is never
 * open by omission.
 */
export function checkDeclaredPermission(ctx: Ctx, method: DescMethod): void {
  const auth = declaredAuth(method);
  if (!auth?.permission) throw permissionDenied("Errors.Permission.Denied", `${method.parent.typeName}/${method.name} declares no permission`);
  if (auth.permission === AUTHENTICATED || auth.checkFieldName) return;
  const orgs = readableOrgs(ctx, auth.permission as Permission);
  if (orgs === "all" || orgs.length > 0) return;
  throw permissionDenied("Errors.Permission.Denied", `missing permission ${auth.permission}`);
}

export function toConnectError(thrown: unknown, requestId: string, log: Logger): ConnectError {
  if (thrown instanceof ConnectError) return thrown;
  const err = asDomainError(thrown);
  if (err) {
    const headers = new Headers();
    if (err.kind === "Unauthenticated") {
      // RFC 6750 §3: no error attribute when the request carried no credentials at all.
      headers.set("www-authenticate", err.id === "Errors.Token.Missing" ? 'Bearer realm="svc"' : 'Bearer realm="svc", error="invalid_token"');
    }
    if (err.metadata.retryAfter) headers.set("retry-after", err.metadata.retryAfter);
    if (err.metadata.outcome) headers.set("svc-outcome", err.metadata.outcome);
    return new ConnectError(err.message, CODES[err.kind], headers, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: err.id, domain: "svc", metadata: err.metadata }) },
    ]);
  }
  log.error({ err: thrown, requestId }, "unexpected error");
  return new ConnectError(`internal error (request id ${requestId})`, Code.Internal, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "Errors.Internal", domain: "svc", metadata: { requestId } }) },
  ]);
}

/**
 * Authenticates the call, checks the permission its method declares and builds its context. Every answer says
 * Cache-Control: no-store: some carry fresh secrets (a new PAT, a client secret) and most personal data.
 */
export function authInterceptor(deps: ApiDeps): Interceptor {
  return (next) => async (req) => {
    const requestId = req.header.get("x-request-id") || randomUUID();
    try {
      if (!PUBLIC_SERVICES.has(req.service.typeName)) {
        const peer = req.header.get(PEER_HEADER) ?? undefined;
        const principal = await deps.authenticate(req.header.get("authorization"), deps.clock(), peer);
        const { store, instanceId, clock, log, limits, mailer, authn, idp, samlMetadata, signals } = deps;
        const ctx = requestContext({ store, instanceId, clock, log, limits, mailer, authn, idp, samlMetadata, signals }, principal, { requestId, peer });
        checkDeclaredPermission(ctx, req.method);
        req.contextValues.set(ctxKey, ctx);
      }
      const res = await next(req);
      res.header.set("cache-control", "no-store");
      return res;
    } catch (err) {
      const e = toConnectError(err, requestId, deps.log);
      e.metadata.set("cache-control", "no-store");
      throw e;
    }
  };
}

/**
 * Refuses a call whose message holds text that is not well-formed Unicode (a lone surrogate spelled in JSON), on every
 * protocol and before the handler runs: see src/http/well-formed.ts. Binary protobuf cannot carry one.
 */
export function wellFormedInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) {
      const at = illFormedText(req.message);
      if (at !== undefined) throw invalidArgument("Errors.Request.Unicode", `${at} ${ILL_FORMED_MESSAGE}`);
    }
    return next(req);
  };
}

/**
 * connect-es answers a request body that is not valid protobuf binary with Internal ("parse binary: ..."), before any
 * interceptor runs: a client's mistake would read as our fault (and page someone). Every handler aborts the call's
 * context with the error synchronously before it encodes it (Connect body, gRPC trailers, gRPC-Web trailer frame), so
 * a request gate that watches the abort reclassifies it as InvalidArgument on every protocol. A failure to serialize
 * our own answer ("serialize binary: ...") stays Internal.
 */
export function malformedInputIsInvalidArgument(context: HandlerContext): void {
  const signal = context.signal;
  signal.addEventListener(
    "abort",
    () => {
      const reason: unknown = signal.reason;
      if (!(reason instanceof ConnectError) || reason.code !== Code.Internal || !reason.rawMessage.startsWith("parse binary:")) return;
      (reason as { code: Code }).code = Code.InvalidArgument;
      reason.details.push({ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "Errors.Request.Malformed", domain: "svc" }) });
      reason.metadata.set("cache-control", "no-store");
    },
    { once: true },
  );
}

/** The domain context of one authenticated call, built once by the interceptor. */
export function ctxOf(hctx: HandlerContext): Ctx {
  const ctx = hctx.values.get(ctxKey);
  if (!ctx) throw new ConnectError("unauthenticated", Code.Unauthenticated);
  return ctx;
}

/** ctxOf, presenting the session a request names with its token (SessionProof): the proof of a sensitive change. */
export function ctxWithSession(hctx: HandlerContext, session: { sessionId: string; sessionToken: string } | undefined): Ctx {
  const ctx = ctxOf(hctx);
  if (!session || (!session.sessionId && !session.sessionToken)) return ctx;
  return requestContext(ctx, ctx.principal, { requestId: ctx.requestId, peer: ctx.peer, session: { id: session.sessionId, token: session.sessionToken } });
}
