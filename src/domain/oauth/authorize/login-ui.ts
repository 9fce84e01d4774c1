// The login UI's half of the code flow (svc.oidc.v2.OIDCService): read an auth request to render the sign-in, and
// finish it with a session or an error. Login UIs hold IAM_LOGIN_CLIENT (permission session.link).
import { authorize } from "../../access/permissions.js";
import { commit, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { invalidArgument } from "../../errors.js";
import { newId } from "../../ids.js";
import { assertSignInComplete, provenSession } from "../../sessions/link.js";
import { consentMissing, consentRequired } from "../consent.js";
import { AUTHORIZATION_ERRORS, type AuthorizationError } from "./callback.js";
import { AUTH_REQUEST_ID_MAX, type Finisher, finishWithError, finishWithSession, openRequest, stillOpen } from "./finish.js";

/** What a login UI is shown of an auth request. */
export interface AuthRequestView {
  id: string;
  createdAt: Date;
  expiresAt: Date;
  clientId: string;
  scopes: string[];
  redirectUri: string;
  prompt: string[];
  uiLocales: string[];
  loginHint: string | null;
  hintUserId: string | null;
  maxAge: number | null;
}

/** An open auth request (not finished, not expired). */
export async function getAuthRequest(ctx: Ctx, id: string): Promise<AuthRequestView> {
  authorize(ctx, "session.link", null);
  const r = await openRequest(ctx.store, ctx.instanceId, id, ctx.clock());
  return {
    id: r.id,
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    clientId: r.clientId,
    scopes: r.scopes,
    redirectUri: r.redirectUri,
    prompt: r.prompt,
    uiLocales: r.uiLocales,
    loginHint: r.loginHint,
    hintUserId: r.hintUserId,
    maxAge: r.maxAge,
  };
}

export type CallbackInput =
  | { authRequestId: string; session: { sessionId: string; sessionToken: string }; consentGranted?: boolean }
  | { authRequestId: string; error: { error: AuthorizationError | undefined; description?: string } };

const MAX_DESCRIPTION = 500;

/**
 * Finishes an auth request: with a session whose token the caller proves (its user signed in completely, satisfies
 * the request's prompt/max_age/id_token_hint and the project's gates), or with an error for the client. Answers the
 * URL the login UI sends the browser to.
 */
export async function createCallback(ctx: Ctx, f: Omit<Finisher, "store" | "instanceId">, input: CallbackInput): Promise<{ callbackUrl: string; at: Date }> {
  authorize(ctx, "session.link", null);
  const now = ctx.clock();
  const finisher = { ...f, store: ctx.store, instanceId: ctx.instanceId, signals: ctx.signals };
  if ("error" in input) {
    const { error, description } = input.error;
    if (!error || !AUTHORIZATION_ERRORS.includes(error)) {
      throw invalidArgument("Errors.AuthRequest.Error.Invalid", "error must name an OAuth authorization error (e.g. ACCESS_DENIED)", { field: "error" });
    }
    if (description !== undefined && (description.length > MAX_DESCRIPTION || /[^\x20-\x7e]/.test(description) || /["\\]/.test(description))) {
      // RFC 6749 §4.1.2.1: error_description is %x20-21 / %x23-5B / %x5D-7E.
      throw invalidArgument(
        "Errors.AuthRequest.ErrorDescription.Invalid",
        `error_description: at most ${MAX_DESCRIPTION} printable ASCII characters, no " or \\`,
        { field: "error_description" },
      );
    }
    const r = await openRequest(ctx.store, ctx.instanceId, input.authRequestId, now);
    return { callbackUrl: await finishWithError(finisher, r, error, description, now, ctx.principal.userId), at: now };
  }
  const { sessionId, sessionToken } = input.session;
  // One read: the request, the session, its user with what the sign-in checks, the project's gates.
  const read =
    input.authRequestId.length <= AUTH_REQUEST_ID_MAX
      ? await ctx.store.authRequests.forCallback(ctx.instanceId, input.authRequestId, sessionId)
      : { request: null, session: null, facts: null, gate: null, consentScopes: null };
  const r = stillOpen(read.request, now);
  const session = provenSession(sessionId, sessionToken, read.session, now);
  // The facts are of the session's user; a session whose user is gone has none (NotFound, as before).
  await assertSignInComplete(ctx, session, read.facts);
  if (input.consentGranted) {
    // The login UI asked the session's user, who allowed the request's scopes (oauth/consent.ts).
    const user = { id: session.userId, orgId: session.orgId };
    await commit(
      ctx,
      async (tx, at) => {
        await tx.consents.upsert({ id: newId(), instanceId: ctx.instanceId, userId: user.id, appId: r.appId, clientId: r.clientId, scopes: r.scopes }, at);
        return userEvent(user, "user.consent.granted", { clientId: r.clientId, scopes: r.scopes });
      },
      now,
    );
  } else if (consentMissing(r, read.consentScopes)) throw consentRequired();
  return { callbackUrl: await finishWithSession(finisher, r, session, now, ctx.principal.userId, read.gate === true), at: now };
}
