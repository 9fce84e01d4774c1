// The Idempotency-Key header on the API's creates (src/domain/idempotency.ts), for gRPC, gRPC-Web, Connect and REST
// alike (the REST transcoder forwards the header): the first answer's message is recorded in the create's transaction
// and a retry with the same key gets it again, marked `Idempotent-Replayed: true`. Wrapped around the methods'
// implementations rather than done in an interceptor, so that an answer given again goes out through the protocol's
// own response path (content type, compression, gRPC trailers) like any other.
import { create, type DescMethod, type DescService, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { ConnectRouter, HandlerContext, Interceptor } from "@connectrpc/connect";
import { invalidArgument } from "../domain/errors.js";
import { idempotently, parseIdempotencyKey } from "../domain/idempotency.js";
import { ctxKey } from "./connect.js";

/** The RPCs that create something and accept an Idempotency-Key (service/method). */
export const IDEMPOTENT_RPCS = new Set([
  "svc.user.v2.UserService/CreateUser",
  "svc.user.v2.UserService/AddPersonalAccessToken",
  "svc.user.v2.UserService/AddKey",
  "svc.user.v2.UserService/AddSecret",
  "svc.org.v2.OrganizationService/CreateOrganization",
  "svc.project.v2.ProjectService/CreateProject",
  "svc.project.v2.ProjectService/CreateProjectGrant",
  "svc.app.v2.ApplicationService/CreateApplication",
  "svc.app.v2.ApplicationService/AddApplicationKey",
  "svc.authorization.v2.AuthorizationService/AddUserGrant",
  "svc.action.v2.ActionService/CreateTarget",
  "svc.idp.v2.IdentityProviderService/AddGenericOIDCProvider",
  "svc.idp.v2.IdentityProviderService/AddSAMLProvider",
]);

export const REPLAYED_HEADER = "idempotent-replayed";

const rpcOf = (service: DescService, method: DescMethod) => `${service.typeName}/${method.name}`;

/** Refuses an Idempotency-Key on an RPC that creates nothing: the client would count on a guarantee it does not get. */
export function idempotencyKeyGate(): Interceptor {
  return (next) => async (req) => {
    if (req.header.has("idempotency-key") && !IDEMPOTENT_RPCS.has(rpcOf(req.service, req.method))) {
      throw invalidArgument("Errors.Idempotency.NotSupported", `${rpcOf(req.service, req.method)} does not take an Idempotency-Key: only creates do`);
    }
    return next(req);
  };
}

type UnaryFn = (message: never, hctx: HandlerContext) => unknown;

function idempotentMethod(method: DescMethod, impl: UnaryFn): UnaryFn {
  const rpc = rpcOf(method.parent, method);
  return async (message, hctx) => {
    const header = hctx.requestHeader.get("idempotency-key");
    const ctx = hctx.values.get(ctxKey);
    if (header === null || !ctx) return impl(message, hctx);
    const key = parseIdempotencyKey(header) as string;
    let made: unknown;
    const { answer, replayed } = await idempotently(ctx, key, rpc, toBinary(method.input, message), async (txCtx) => {
      // The implementation runs on the transaction that records its answer.
      hctx.values.set(ctxKey, txCtx);
      try {
        made = create(method.output, (await impl(message, hctx)) as never);
        return { status: 200, headers: {}, body: toBinary(method.output, made as never) };
      } finally {
        hctx.values.set(ctxKey, ctx);
      }
    });
    if (!replayed) return made;
    hctx.responseHeader.set(REPLAYED_HEADER, "true");
    return fromBinary(method.output, answer.body);
  };
}

/** The router, with the Idempotency-Key taken by the implementations of IDEMPOTENT_RPCS. */
export function withIdempotentCreates(router: ConnectRouter): ConnectRouter {
  return new Proxy(router, {
    get(target, prop, receiver) {
      if (prop !== "service") return Reflect.get(target, prop, receiver);
      const register: ConnectRouter["service"] = (service, implementation, options) => {
        if (!service.methods.some((m) => IDEMPOTENT_RPCS.has(rpcOf(service, m)))) {
          target.service(service, implementation, options);
          return receiver as ConnectRouter;
        }
        const impl = { ...implementation } as Record<string, UnaryFn>;
        for (const method of service.methods) {
          const fn = impl[method.localName];
          if (fn && method.methodKind === "unary" && IDEMPOTENT_RPCS.has(rpcOf(service, method))) {
            impl[method.localName] = idempotentMethod(method, fn.bind(implementation));
          }
        }
        target.service(service, impl as never, options);
        return receiver as ConnectRouter;
      };
      return register;
    },
  });
}
