// The one way a request's context is built, whichever transport received it (Connect and REST, SCIM, the hosted
// login, an external provider's answer at /idp/callback or a SAML ACS): the service's shared dependencies, who is
// calling, and what the request itself brings (its id, the peer address, a session it presents).
//
// svc's own actions — the first start, a background job, what the OAuth and SAML endpoints record on no signed-in
// user's behalf (a replayed code's revocation, a client's failed authentication, an answer sent again) — act as the
// system principal (`systemContext`, or `systemActor` where only an audit event is written), never as a hand-built
// user and never as nobody: their audit events name SYSTEM_PRINCIPAL_ID as the editor.
import type { Clock, Ctx, Principal } from "./context.js";

/** What every request of one instance shares: the store, the clock, the logger and the outbound ports. */
export type Services = Omit<Ctx, "principal" | "requestId" | "peer" | "session">;

/** What one request brings besides its principal. */
export interface RequestFacts {
  requestId: string;
  /** The address the request came from (the TCP peer, or the client behind a trusted proxy). */
  peer?: string;
  /** A session the request presents with its token (the proof of a sensitive change). */
  session?: { id: string; token: string };
}

export function requestContext(services: Services, principal: Principal, request: RequestFacts): Ctx {
  return {
    ...services,
    principal,
    requestId: request.requestId,
    ...(request.peer !== undefined ? { peer: request.peer } : {}),
    ...(request.session ? { session: request.session } : {}),
  };
}

/** The audit identity of svc's own actions (no user row). */
export const SYSTEM_PRINCIPAL_ID = "svc-system";

/**
 * svc acting on its own behalf. It holds no roles unless the action grants them where it runs (`instanceRoles`: the
 * first start acts with an IAM_OWNER's rights, which the operations it reuses check).
 */
export function systemPrincipal(instanceId: string, instanceRoles: readonly string[] = []): Principal {
  return {
    userId: SYSTEM_PRINCIPAL_ID,
    instanceId,
    orgId: "",
    userType: "MACHINE",
    instanceRoles: [...instanceRoles],
    orgRoles: new Map(),
    credentialId: SYSTEM_PRINCIPAL_ID,
  };
}

/** The context of svc's own action in a request (or a job, `requestId` naming it). */
export function systemContext(services: Services, request: RequestFacts, instanceRoles: readonly string[] = []): Ctx {
  return requestContext(services, systemPrincipal(services.instanceId, instanceRoles), request);
}

/** What an audit event of svc's own action needs (see audit/events.ts eventRow): the instance, the time and the system principal. */
export function systemActor(instanceId: string, clock: Clock): Pick<Ctx, "instanceId" | "clock" | "principal"> {
  return { instanceId, clock, principal: systemPrincipal(instanceId) };
}
