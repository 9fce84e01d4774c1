// The authorization endpoint (OAuth 2.0 §4.1.1, OIDC Core §3.1.2.1): validates the request in the order the specs
// prescribe (first the client and its redirect URI, which decide whether errors may go back to the client at all, then
// everything else as errors at the redirect URI), stores it for the login UI and sends the browser there; prompt=none
// is answered at once from the session an id_token_hint names.
import type { AuthRequestRow } from "../../../store/auth-requests.js";
import type { Ctx } from "../../context.js";
import { DomainError } from "../../errors.js";
import { newId } from "../../ids.js";
import { assertSignInComplete, authTime, type LinkedSession, liveSession } from "../../sessions/link.js";
import { findClient } from "../client-auth.js";
import { isOidcApp, type OidcClient } from "../grants/oidc-client.js";
import { hintClient, readIdTokenHint } from "../id-token.js";
import type { OAuthRuntime } from "../runtime.js";
import { scopeTokens } from "../scopes.js";
import { type AuthorizationError, errorCallback, withQuery } from "./callback.js";
import { AuthRequestErrors, finishWithError, finishWithSession, signInProblem } from "./finish.js";
import { challengeProblem } from "./pkce.js";
import { matchesRedirectUri } from "./redirect-uri.js";

/** What the endpoint answers: a page that never redirects (no client or redirect URI to trust), or a redirect. */
export type AuthorizeOutcome = { kind: "page"; error: string; description: string } | { kind: "redirect"; location: string };

export const PROMPTS = ["none", "login", "consent", "select_account", "create"] as const;

/** The parameters this endpoint reads; any other is ignored (OIDC Core §3.1.2.1), even when repeated. */
const KNOWN = [
  "client_id",
  "redirect_uri",
  "response_type",
  "response_mode",
  "scope",
  "state",
  "nonce",
  "code_challenge",
  "code_challenge_method",
  "prompt",
  "max_age",
  "login_hint",
  "ui_locales",
  "id_token_hint",
  "request",
  "request_uri",
] as const;
type Known = (typeof KNOWN)[number];

const LIMITS = { state: 2048, nonce: 512, login_hint: 512, scopeToken: 200, uiLocales: 10, uiLocale: 35 } as const;

class Refusal {
  constructor(
    readonly error: AuthorizationError,
    readonly description: string,
  ) {}
}
const refuse = (error: AuthorizationError, description: string) => new Refusal(error, description);

/**
 * One authorization request. `params` holds each parameter's values in order of appearance (query or form); a known
 * parameter given twice is refused (OAuth 2.0 §3.1).
 */
export async function authorizeRequest(rt: OAuthRuntime, params: Map<string, string[]>, now: Date): Promise<AuthorizeOutcome> {
  const one = (name: Known): string | undefined => {
    const v = params.get(name);
    // Empty parameters are treated as omitted (OAuth 2.0 §3.1).
    return v?.[0] === "" ? undefined : v?.[0];
  };
  for (const name of ["client_id", "redirect_uri"] as const) {
    if ((params.get(name)?.length ?? 0) > 1) return page("invalid_request", `${name} is repeated`);
  }
  const clientId = one("client_id");
  if (!clientId) return page("invalid_request", "client_id is required");
  const client = await findClient(rt, clientId);
  if (!isOidcApp(client)) return page("invalid_client", "unknown client_id");
  if (!client.active) return page("invalid_client", "the application is not active");
  const redirectUri = one("redirect_uri");
  if (!redirectUri) return page("invalid_request", "redirect_uri is required");
  if (!matchesRedirectUri(client.oidc.redirectUris, redirectUri, client.oidc.appType)) {
    return page("invalid_request", "redirect_uri is not registered for this client");
  }
  // From here on the client and its redirect URI are known: errors go back to it.
  const stateValues = params.get("state");
  const state = stateValues?.length === 1 && stateValues[0] !== "" && (stateValues[0] as string).length <= LIMITS.state ? (stateValues[0] as string) : null;
  const back = { redirectUri, state };
  try {
    const request = await validated(rt, client, params, one, redirectUri, now);
    if (request.prompt.includes("none")) {
      // Without a hint only the browser knows its sessions: the hosted login, which reads its cookie, answers at once
      // (a code, or login_required and the like) without showing a page. A login UI of the app's own is not trusted
      // to do so, and any hint is svc's to judge.
      if (one("id_token_hint") === undefined && !client.oidc.loginBaseUrl && rt.loginUrl.startsWith(`${rt.issuer}/ui/login/`)) {
        await rt.store.authRequests.create(stored(request));
        return { kind: "redirect", location: withQuery(rt.loginUrl, { authRequest: request.id }) };
      }
      return { kind: "redirect", location: await promptNone(rt, request, one("id_token_hint"), now) };
    }
    await rt.store.authRequests.create(stored(request));
    const base = client.oidc.loginBaseUrl ?? rt.loginUrl;
    return { kind: "redirect", location: withQuery(base, { authRequest: request.id }) };
  } catch (err) {
    if (err instanceof Refusal) return { kind: "redirect", location: errorCallback(back, err.error, err.description, rt.issuer) };
    throw err;
  }
}

const page = (error: string, description: string): AuthorizeOutcome => ({ kind: "page", error, description });

type Validated = AuthRequestRow;

async function validated(
  rt: OAuthRuntime,
  client: OidcClient,
  params: Map<string, string[]>,
  one: (name: Known) => string | undefined,
  redirectUri: string,
  now: Date,
): Promise<Validated> {
  for (const name of KNOWN) if ((params.get(name)?.length ?? 0) > 1) throw refuse("invalid_request", `${name} is repeated`);
  if (one("request") !== undefined) throw refuse("request_not_supported", "request objects are not supported");
  if (one("request_uri") !== undefined) throw refuse("request_uri_not_supported", "request_uri is not supported");
  const state = one("state");
  if (state !== undefined && state.length > LIMITS.state) throw refuse("invalid_request", `state must be at most ${LIMITS.state} characters`);
  const responseType = one("response_type");
  if (!responseType) throw refuse("invalid_request", "response_type is required");
  if (responseType !== "code") throw refuse("unsupported_response_type", "only response_type=code is supported");
  if (!client.oidc.grantTypes.includes("authorization_code")) {
    throw refuse("unauthorized_client", "the application may not use the authorization code flow");
  }
  const responseMode = one("response_mode");
  if (responseMode !== undefined && responseMode !== "query") throw refuse("invalid_request", "only response_mode=query is supported");
  const scopes = scopeTokens(one("scope")).filter((s) => s.length <= LIMITS.scopeToken);
  if (!scopes.includes("openid")) throw refuse("invalid_scope", "scope must contain openid");
  const nonce = one("nonce");
  if (nonce !== undefined && nonce.length > LIMITS.nonce) throw refuse("invalid_request", `nonce must be at most ${LIMITS.nonce} characters`);
  const codeChallenge = one("code_challenge");
  const codeChallengeMethod = one("code_challenge_method");
  const pkce = challengeProblem(codeChallenge, codeChallengeMethod, client.oidc.pkceRequired);
  if (pkce) throw refuse("invalid_request", pkce);
  const prompt = [...new Set((one("prompt") ?? "").split(" ").filter(Boolean))];
  const unknownPrompt = prompt.find((p) => !(PROMPTS as readonly string[]).includes(p));
  if (unknownPrompt) throw refuse("invalid_request", `unknown prompt value ${unknownPrompt.slice(0, 40)}`);
  if (prompt.includes("none") && prompt.length > 1) throw refuse("invalid_request", "prompt=none cannot be combined with other values");
  const maxAgeRaw = one("max_age");
  if (maxAgeRaw !== undefined && !/^\d{1,9}$/.test(maxAgeRaw)) throw refuse("invalid_request", "max_age must be a non-negative number of seconds");
  const loginHint = one("login_hint");
  if (loginHint !== undefined && loginHint.length > LIMITS.login_hint)
    throw refuse("invalid_request", `login_hint must be at most ${LIMITS.login_hint} characters`);
  const uiLocales = (one("ui_locales") ?? "").split(" ").filter(Boolean);
  if (uiLocales.length > LIMITS.uiLocales || uiLocales.some((l) => l.length > LIMITS.uiLocale)) throw refuse("invalid_request", "ui_locales is too long");
  let hintUserId: string | null = null;
  const hintToken = one("id_token_hint");
  if (hintToken !== undefined) {
    const hint = await readIdTokenHint(rt, hintToken);
    if (!hint) throw refuse("invalid_request", "id_token_hint is not an ID token issued by this server");
    if (hintClient(hint) !== client.clientId && !hint.aud.includes(client.clientId))
      throw refuse("invalid_request", "id_token_hint was issued to another client");
    hintUserId = hint.sub;
  }
  return {
    id: newId(),
    instanceId: rt.instanceId,
    appId: client.appId,
    clientId: client.clientId,
    redirectUri,
    scopes,
    state: state ?? null,
    nonce: nonce ?? null,
    codeChallenge: codeChallenge ?? null,
    codeChallengeMethod: codeChallenge ? "S256" : null,
    prompt,
    maxAge: maxAgeRaw === undefined ? null : Number(maxAgeRaw),
    loginHint: loginHint ?? null,
    uiLocales,
    hintUserId,
    expiresAt: new Date(now.getTime() + rt.lifetimes.authRequest * 1000),
    createdAt: now,
    app: { projectId: client.projectId, orgId: client.orgId },
    finishedAt: null,
    sessionId: null,
    userId: null,
    authTime: null,
    amr: [],
    codeExpiresAt: null,
    codeUsedAt: null,
  };
}

/** The columns /oauth/v2/authorize writes. */
function stored(r: Validated) {
  const { app: _app, finishedAt: _f, sessionId: _s, userId: _u, authTime: _a, amr: _amr, codeExpiresAt: _c, codeUsedAt: _cu, ...row } = r;
  return row;
}

/**
 * prompt=none (OIDC Core §3.1.2.1): no login UI. svc keeps no browser cookie of its own (until the hosted login
 * exists), so the only session it can know of is the one an id_token_hint names (its sid): still alive, of the hint's
 * user, complete, fresh enough for max_age, and the user passes the project's gates. Then a code at once; otherwise
 * login_required (access_denied for a gated user).
 */
async function promptNone(rt: OAuthRuntime, r: Validated, hintToken: string | undefined, now: Date): Promise<string> {
  const hint = hintToken ? await readIdTokenHint(rt, hintToken) : undefined;
  const loginRequired = () => errorCallback(r, "login_required", "no usable session: the user must sign in", rt.issuer);
  if (!hint?.sid) return loginRequired();
  const session = await liveSession(rt.store, rt.instanceId, hint.sid, now);
  if (!session || session.userId !== hint.sub || !(await signInComplete(rt, session))) return loginRequired();
  if (signInProblem(r, session.userId, authTime(session), now)) return loginRequired();
  await rt.store.authRequests.create(stored(r));
  const f = { store: rt.store, instanceId: rt.instanceId, issuer: rt.issuer, codeLifetime: rt.lifetimes.authCode, signals: rt.signals };
  try {
    return await finishWithSession(f, r, session, now, null);
  } catch (err) {
    if (!(err instanceof DomainError) || err.id !== AuthRequestErrors.AccessDenied) throw err;
    return finishWithError(f, r, "access_denied", "the user may not sign in to this application", now, null);
  }
}

/** Whether the session may still finish a sign-in (the checks CreateCallback makes), read as its own user. */
async function signInComplete(rt: OAuthRuntime, s: LinkedSession): Promise<boolean> {
  const ctx: Ctx = {
    store: rt.store,
    instanceId: rt.instanceId,
    // The browser acts for the session's user; nothing here is checked against the principal's roles.
    principal: { userId: s.userId, instanceId: rt.instanceId, orgId: s.orgId, userType: "HUMAN", instanceRoles: [], orgRoles: new Map(), credentialId: s.id },
    clock: rt.clock,
    log: rt.log,
    requestId: "",
  };
  try {
    await assertSignInComplete(ctx, s);
    return true;
  } catch (err) {
    if (err instanceof DomainError) return false;
    throw err;
  }
}
