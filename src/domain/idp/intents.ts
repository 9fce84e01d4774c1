// Sign-in at an external provider, as ZITADEL's v2 intents do it: a login client starts an intent (state, nonce and a
// PKCE verifier kept with it, the verifier sealed) and sends the browser to the provider; the provider sends it back
// to /idps/callback, where svc redeems the code, reads the provider's user and hands the login client a one-time
// intent token (only its SHA-256 is kept) on its success URL. A SAML provider gets an AuthnRequest instead (the
// intent keeps its ID, the state travels as RelayState) and answers at its ACS (saml-acs.ts), to the same end. The
// intent then proves the provider's user to RetrieveIdentityProviderIntent and, once, to a session check.
import { intentVerifierAad } from "../../crypto/sealer.js";
import { newOpaqueToken, sameHash, sha256 } from "../../crypto/tokens.js";
import type { IdpRow, IntentRow } from "../../store/idps.js";
import { hasInstancePermission } from "../access/permissions.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { authnSettings } from "../identity/authn/access.js";
import { newId } from "../ids.js";
import { effectiveSetting } from "../settings/settings.js";
import { type ExternalProfile, storedProfile } from "./claims.js";
import { idpNotFound, relyingPartyView } from "./providers.js";
import { type BrowserNext, samlAuthnRequest } from "./saml-sp.js";

/** How long an intent waits for the provider, and how long its answer may be used after. */
export const INTENT_LIFETIME_MS = 10 * 60_000;
export const CALLBACK_PATH = "/idps/callback";

export const intentNotFound = () => notFound("Errors.IdpIntent.NotFound", "idp intent not found");

export const callbackUrl = (ctx: Pick<Ctx, "authn">) => `${authnSettings(ctx as Ctx).externalUrl}${CALLBACK_PATH}`;

function validUrl(value: string, field: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || value.length > 2000) {
    throw invalidArgument("Errors.IdpIntent.Url.Invalid", `${field} must be an absolute http(s) URL`, { field });
  }
  return value;
}

/** The relying party, which the composition root always provides to API calls and the callback. */
export function relyingParty(ctx: Pick<Ctx, "idp">) {
  if (!ctx.idp) throw new Error("the OpenID Connect relying party is missing from the context");
  return ctx.idp;
}

/** The organization whose login settings govern a provider's sign-ins: its own, or the instance's default one. */
export async function providerOrg(ctx: Ctx, orgId: string | null): Promise<string | null> {
  return orgId ?? (await ctx.store.orgs.instance(ctx.instanceId))?.defaultOrgId ?? null;
}

export async function assertExternalLoginAllowed(ctx: Ctx, orgId: string | null): Promise<void> {
  const login = await effectiveSetting(ctx, "login", orgId);
  if (!login.allowExternalIdp) {
    throw failedPrecondition("Errors.IdpIntent.ExternalLoginNotAllowed", "the login settings do not allow signing in with an external identity provider");
  }
}

export interface StartIntentInput {
  idpId: string;
  successUrl: string;
  failureUrl: string;
}

/** How the provider is asked: an authorization URL with PKCE, or a SAML AuthnRequest (with the request id to answer). */
async function providerRequest(ctx: Ctx, idp: IdpRow, id: string, state: string) {
  if (idp.type === "saml") {
    const { requestId, next } = await samlAuthnRequest(ctx, idp, state);
    return { next, columns: { nonce: "", codeVerifierEnc: new Uint8Array(), samlRequestId: requestId } };
  }
  const checks = { redirectUri: callbackUrl(ctx), state, nonce: newOpaqueToken(), codeVerifier: newOpaqueToken() };
  const authUrl = await providerCall(() => relyingParty(ctx).authorizationUrl(relyingPartyView(ctx, idp), checks));
  const codeVerifierEnc = authnSettings(ctx).sealer.seal(Buffer.from(checks.codeVerifier), intentVerifierAad(ctx.instanceId, id));
  return { next: { authUrl } as BrowserNext, columns: { nonce: checks.nonce, codeVerifierEnc } };
}

export async function startIntent(ctx: Ctx, input: StartIntentInput): Promise<{ intentId: string; next: BrowserNext; at: Date; ownerId: string }> {
  if (!hasInstancePermission(ctx, "session.write")) {
    throw permissionDenied("Errors.Permission.Denied", "starting a sign-in at an identity provider needs the role IAM_LOGIN_CLIENT");
  }
  if (!input.idpId) throw invalidArgument("Errors.IDP.Id.Missing", "idp_id is required", { field: "idp_id" });
  const successUrl = validUrl(input.successUrl, "urls.success_url");
  const failureUrl = validUrl(input.failureUrl, "urls.failure_url");
  const idp = await ctx.store.idps.find(ctx.instanceId, input.idpId);
  if (!idp) throw idpNotFound();
  await assertExternalLoginAllowed(ctx, await providerOrg(ctx, idp.orgId));
  const id = newId();
  const state = newOpaqueToken();
  const { next, columns } = await providerRequest(ctx, idp, id, state);
  const at = await commit(ctx, async (tx, now) => {
    await tx.idps.startIntent({
      id,
      instanceId: ctx.instanceId,
      idpId: idp.id,
      state,
      ...columns,
      successUrl,
      failureUrl,
      expiresAt: new Date(now.getTime() + INTENT_LIFETIME_MS),
      createdAt: now,
    });
    return { aggregateType: "idp_intent", aggregateId: id, orgId: idp.orgId, type: "idp.intent.started", payload: { idpId: idp.id } };
  });
  return { intentId: id, next, at, ownerId: idp.orgId ?? ctx.instanceId };
}

/** A provider that cannot be reached or answers nonsense is Unavailable to the caller, with what went wrong. */
async function providerCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof DomainError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new DomainError("Unavailable", "Errors.IDP.Unavailable", `the identity provider could not be used: ${reason}`);
  }
}

/**
 * A succeeded intent proven by its token: NotFound (unknown or expired), PermissionDenied Errors.IdpIntent.Token.Invalid,
 * FailedPrecondition Errors.IdpIntent.NotSucceeded (the provider has not answered, or refused).
 */
export async function provenIntent(ctx: Ctx, id: string, token: string, field = "idp_intent_id"): Promise<IntentRow> {
  if (!id) throw invalidArgument("Errors.IdpIntent.Id.Missing", `${field} is required`, { field });
  const intent = await ctx.store.idps.intent(ctx.instanceId, id);
  if (!intent || intent.expiresAt.getTime() <= ctx.clock().getTime()) throw intentNotFound();
  if (!token || !intent.tokenHash || !sameHash(sha256(token), intent.tokenHash)) {
    throw permissionDenied("Errors.IdpIntent.Token.Invalid", "the intent token is not valid for this intent");
  }
  if (!intent.succeededAt || !intent.externalUserId) throw failedPrecondition("Errors.IdpIntent.NotSucceeded", "the sign-in at the provider did not succeed");
  return intent;
}

export interface IntentInformation {
  idpId: string;
  externalUserId: string;
  externalUserName: string;
  rawClaims: Record<string, unknown>;
  profile: ExternalProfile;
  /** The svc user linked to the provider's user now; null when none is. */
  userId: string | null;
  suggestion: { orgId: string; username: string; givenName: string; familyName: string; displayName: string; email: string; emailVerified: boolean };
  at: Date;
  ownerId: string;
}

/** RetrieveIdentityProviderIntent: what the provider said, and what a registration with it would create. */
export async function retrieveIntent(ctx: Ctx, id: string, token: string): Promise<IntentInformation> {
  if (!hasInstancePermission(ctx, "session.write")) {
    throw permissionDenied("Errors.Permission.Denied", "reading sign-ins at identity providers needs the role IAM_LOGIN_CLIENT");
  }
  const intent = await provenIntent(ctx, id, token);
  if (intent.consumedAt) throw failedPrecondition("Errors.IdpIntent.Used", "the intent was used for a sign-in already");
  const idp = await ctx.store.idps.find(ctx.instanceId, intent.idpId);
  if (!idp) throw intentNotFound();
  const externalUserId = intent.externalUserId as string;
  const profile = storedProfile(intent.profile);
  const userId = await ctx.store.idps.linkedUser(ctx.instanceId, idp.id, externalUserId);
  return {
    idpId: idp.id,
    externalUserId,
    externalUserName: intent.externalUserName ?? externalUserId,
    rawClaims: (intent.rawClaims ?? {}) as Record<string, unknown>,
    profile,
    userId,
    suggestion: { orgId: (await providerOrg(ctx, idp.orgId)) ?? "", ...newUserProfile(profile, externalUserId) },
    at: intent.succeededAt as Date,
    ownerId: idp.orgId ?? ctx.instanceId,
  };
}

/** The profile of a user created from a provider's: names filled in from what there is. */
export function newUserProfile(p: ExternalProfile, sub: string) {
  const localPart = p.email.split("@")[0] ?? "";
  const givenName = p.givenName || p.displayName.split(" ")[0] || p.preferredUsername || localPart || sub;
  const familyName = p.familyName || p.displayName.split(" ").slice(1).join(" ") || givenName;
  return {
    username: p.preferredUsername || p.email || sub,
    givenName: givenName.slice(0, 200),
    familyName: familyName.slice(0, 200),
    displayName: p.displayName || `${givenName} ${familyName}`.slice(0, 200),
    email: p.email,
    emailVerified: p.emailVerified,
  };
}
