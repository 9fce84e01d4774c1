// Finishing an auth request: with a session's sign-in (a code the client redeems at the token endpoint) or with an
// error. Shared by the login UI's CreateCallback and by prompt=none at the authorization endpoint. A request is
// finished at most once: the write is conditional on it being open, so of two concurrent finishes one wins.

import { newOpaqueToken, sha256 } from "../../../crypto/tokens.js";
import type { AuthRequestRow } from "../../../store/auth-requests.js";
import type { Store } from "../../../store/index.js";
import { eventRow } from "../../audit/events.js";
import { type DomainError, failedPrecondition, permissionDenied } from "../../errors.js";
import { SYSTEM_PRINCIPAL_ID } from "../../request-context.js";
import { authMethods, authTime, type LinkedSession } from "../../sessions/link.js";
import { answerOnce, type RequestKind, reauthenticationProblem, stillOpenRequest } from "../../sessions/pending-requests.js";
import type { SignInSignals } from "../../signals.js";
import { type AuthorizationError, errorCallback, successCallback } from "./callback.js";

export const AuthRequestErrors = {
  NotFound: "Errors.AuthRequest.NotFound",
  Expired: "Errors.AuthRequest.Expired",
  AlreadyFinished: "Errors.AuthRequest.AlreadyFinished",
  ReauthenticationRequired: "Errors.AuthRequest.ReauthenticationRequired",
  UserMismatch: "Errors.AuthRequest.UserMismatch",
  AccessDenied: "Errors.AuthRequest.AccessDenied",
} as const;

/** What finishing needs besides the request: where to write, who answers (iss) and how long a code lives. */
export interface Finisher {
  store: Store;
  instanceId: string;
  issuer: string;
  /** Seconds. */
  codeLifetime: number;
  /** The metrics' count of finished requests. */
  signals?: SignInSignals;
}

/** OIDC auth requests in the one lifecycle of sign-in requests (sessions/pending-requests.ts). */
export const AUTH_REQUEST: RequestKind = { name: "auth request", errors: AuthRequestErrors, starter: "the client" };
/** The longest auth request id looked up (ids are generated; anything longer names none). */
export const AUTH_REQUEST_ID_MAX = 200;

/** An auth request of this instance that is still open: NotFound, or FailedPrecondition when finished or expired. */
export async function openRequest(store: Store, instanceId: string, id: string, now: Date): Promise<AuthRequestRow> {
  return stillOpen(id.length <= AUTH_REQUEST_ID_MAX ? await store.authRequests.find(instanceId, id) : null, now);
}

/** openRequest of a request the caller read (null: none). */
export function stillOpen(r: AuthRequestRow | null, now: Date): AuthRequestRow {
  return stillOpenRequest(AUTH_REQUEST, r, now);
}

/**
 * Why this sign-in does not satisfy the request, or undefined: the user an id_token_hint named must be the one signed
 * in; prompt=login (and max_age=0) need a factor verified since the request was made; max_age a factor verified at
 * most that many seconds ago.
 */
export function signInProblem(
  r: Pick<AuthRequestRow, "hintUserId" | "prompt" | "maxAge" | "createdAt">,
  userId: string,
  at: Date,
  now: Date,
): DomainError | undefined {
  if (r.hintUserId && r.hintUserId !== userId) {
    return failedPrecondition(AuthRequestErrors.UserMismatch, "the client asked for the user of its id_token_hint; another user is signed in");
  }
  return reauthenticationProblem(AUTH_REQUEST, { createdAt: r.createdAt, fresh: r.prompt.includes("login") || r.maxAge === 0, maxAge: r.maxAge }, at, now);
}

/** The project's login gates (authorizationRequired, projectAccessRequired): whether the user may sign in to the app. */
export async function passesLoginGates(store: Store, instanceId: string, projectId: string, user: { id: string; orgId: string }): Promise<boolean> {
  const [gate] = await store.tokens.projectGates(instanceId, [projectId], user);
  return gate?.allowed === true;
}

const gated = () =>
  permissionDenied(AuthRequestErrors.AccessDenied, "the user may not sign in to this application (its project requires a grant or access for the user)");

/**
 * Finishes the request with the session's sign-in: checks it satisfies the request and the project's gates, then
 * stores the SHA-256 of a new code and answers the callback URL carrying it. `editor`: who finished it (the login
 * UI's user; null for prompt=none). `gate`: whether the user passes the project's gates, when the caller read it.
 */
export async function finishWithSession(f: Finisher, r: AuthRequestRow, s: LinkedSession, now: Date, editor: string | null, gate?: boolean): Promise<string> {
  const at = authTime(s);
  const problem = signInProblem(r, s.userId, at, now);
  if (problem) throw problem;
  if (!(gate ?? (await passesLoginGates(f.store, f.instanceId, r.app.projectId, { id: s.userId, orgId: s.orgId })))) throw gated();
  const code = newOpaqueToken();
  const amr = authMethods(s);
  await write(f, r, now, editor, {
    how: { sessionId: s.id, userId: s.userId, authTime: at, amr, codeHash: sha256(code), codeExpiresAt: new Date(now.getTime() + f.codeLifetime * 1000) },
    type: "oidc.auth_request.succeeded",
    payload: { clientId: r.clientId, userId: s.userId, sessionId: s.id },
  });
  return successCallback(r, code, f.issuer);
}

/** Finishes the request with an error for the client; the callback URL carries it. */
export async function finishWithError(
  f: Finisher,
  r: AuthRequestRow,
  error: AuthorizationError,
  description: string | undefined,
  now: Date,
  editor: string | null,
): Promise<string> {
  await write(f, r, now, editor, { how: { error: true }, type: "oidc.auth_request.failed", payload: { clientId: r.clientId, error } });
  return errorCallback(r, error, description, f.issuer);
}

async function write(
  f: Finisher,
  r: AuthRequestRow,
  now: Date,
  editor: string | null,
  e: { how: Parameters<Store["authRequests"]["finish"]>[3]; type: string; payload: Record<string, unknown> },
): Promise<void> {
  const event = eventRow(
    { instanceId: f.instanceId, clock: () => now, principal: { userId: editor ?? SYSTEM_PRINCIPAL_ID } },
    { aggregateType: "oidc.auth_request", aggregateId: r.id, orgId: r.app.orgId, type: e.type, payload: e.payload },
  );
  // The change and its event in one statement: both or neither; of two concurrent answers one wins.
  await answerOnce(
    AUTH_REQUEST,
    () => f.store.authRequests.finish(f.instanceId, r.id, now, e.how, event),
    () => f.store.authRequests.find(f.instanceId, r.id),
    now,
  );
  f.signals?.finished("oidc", e.type === "oidc.auth_request.succeeded" ? "success" : "error");
}
