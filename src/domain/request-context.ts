// The one way a request's context is built, whichever transport received it (Connect and REST, SCIM, the hosted
// login; the OAuth and SAML endpoints act through their runtime and build contexts here when they call the domain):
// the service's shared dependencies, who is calling, and what the request itself brings (its id, the peer address,
// a session it presents). A system action (start-up, a background job) acts as the system principal, never as a
// hand-built user.
import type { Ctx, Principal } from "./context.js";

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

/** svc acting on its own behalf: no roles (a system action states what it may do where it runs). */
export function systemPrincipal(instanceId: string): Principal {
  return { userId: SYSTEM_PRINCIPAL_ID, instanceId, orgId: "", userType: "MACHINE", instanceRoles: [], orgRoles: new Map(), credentialId: SYSTEM_PRINCIPAL_ID };
}
