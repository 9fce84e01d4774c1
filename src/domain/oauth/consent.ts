// Consent (OIDC Core §3.1.2.4): the user is asked whether the application may have the scopes it requested — always
// with prompt=consent, and for an application with consentRequired (Keycloak's "Consent required", for third-party
// applications) whenever it asks for a scope the user has not allowed it yet. What the user allowed is kept per user
// and application (asked once) until the user revokes it, which also revokes the application's tokens of the user (as
// Keycloak's account console does). The user records it on the hosted login's consent page, or a login UI of its own
// through CreateCallback's consent_granted with the user's session; only the user itself revokes it.
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { newId } from "../ids.js";
import { openRequest } from "./authorize/finish.js";

export interface ConsentView {
  appId: string;
  clientId: string;
  appName: string;
  scopes: string[];
  grantedAt: Date;
}

const CONSENTS_SHOWN = 50;

/**
 * Whether the request's application must ask the user before it gets anything: it requires consent and the user has
 * not allowed it every requested scope (`allowed`: the recorded consent's scopes, null when there is none). Pure.
 */
export function consentMissing(request: { scopes: readonly string[]; app: { consentRequired: boolean } }, allowed: readonly string[] | null): boolean {
  if (!request.app.consentRequired) return false;
  return allowed === null || request.scopes.some((s) => !allowed.includes(s));
}

/** The answer to finishing a request whose application needs the user's consent first (prompt=none: consent_required). */
export const consentRequired = () =>
  failedPrecondition(
    "Errors.Consent.Required",
    "the application needs the user's consent to the requested scopes: ask the user, then finish with consent_granted",
  );

function selfOnly(ctx: Ctx, userId: string): void {
  if (!userId || ctx.principal.userId !== userId) {
    throw permissionDenied("Errors.Consent.SelfOnly", "only the user itself gives or revokes its consent");
  }
}

/** What the consent page asks the user about: the application's name and the scopes of the open auth request. */
export async function consentQuestion(ctx: Ctx, userId: string, authRequestId: string): Promise<{ appName: string; scopes: string[] }> {
  selfOnly(ctx, userId);
  const r = await openRequest(ctx.store, ctx.instanceId, authRequestId, ctx.clock());
  return { appName: (await ctx.store.consents.appName(ctx.instanceId, r.appId)) ?? r.clientId, scopes: r.scopes };
}

/** The user allows the application of the open auth request the scopes it asked for. */
export async function grantConsent(ctx: Ctx, userId: string, authRequestId: string): Promise<void> {
  selfOnly(ctx, userId);
  const r = await openRequest(ctx.store, ctx.instanceId, authRequestId, ctx.clock());
  const user = { id: userId, orgId: ctx.principal.orgId };
  await commit(ctx, async (tx, now) => {
    await tx.consents.upsert({ id: newId(), instanceId: ctx.instanceId, userId, appId: r.appId, clientId: r.clientId, scopes: r.scopes }, now);
    return userEvent(user, "user.consent.granted", { clientId: r.clientId, scopes: r.scopes });
  });
}

/** What the user allowed which applications, newest first. */
export async function listConsents(ctx: Ctx, userId: string): Promise<ConsentView[]> {
  selfOnly(ctx, userId);
  const rows = await ctx.store.consents.ofUser(ctx.instanceId, userId, CONSENTS_SHOWN);
  return rows.map((r) => ({ appId: r.appId, clientId: r.clientId, appName: r.appName, scopes: r.scopes, grantedAt: r.updatedAt }));
}

/** Revokes the user's consent to the application and every token the application holds of the user. */
export async function revokeConsent(ctx: Ctx, userId: string, appId: string): Promise<Date> {
  selfOnly(ctx, userId);
  if (!appId) throw invalidArgument("Errors.Consent.AppId.Missing", "the application is required", { field: "app_id" });
  const consent = await ctx.store.consents.find(userId, appId);
  const user = { id: userId, orgId: ctx.principal.orgId };
  if (!consent) throw notFound("Errors.Consent.NotFound", "no consent to this application");
  return commit(ctx, async (tx, now) => {
    await tx.consents.remove(userId, appId);
    const revoked = await tx.tokens.revokeOf(userId, now, { clientId: consent.clientId });
    const refreshTokens = await tx.refreshTokens.revokeOfUser(userId, now, consent.clientId);
    await tx.auth.invalidate({ userId });
    return userEvent(user, "user.consent.revoked", { clientId: consent.clientId, revoked, revokedRefreshTokens: refreshTokens });
  });
}
