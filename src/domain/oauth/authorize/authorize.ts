// The authorization endpoint (OAuth 2.0 §4.1.1, OIDC Core §3.1.2.1): validates the request in the order the specs
// prescribe (first the client and its redirect URI, which decide whether errors may go back to the client at all, then
// everything else as errors at the redirect URI), stores it for the login UI and sends the browser there, also for
// prompt=none (the login UI answers it from this browser's sessions, without a page). A pushed request (RFC 9126,
// par.ts) is checked here twice: when pushed, and again with its stored parameters when the browser brings its
// request_uri.
import type { AuthRequestRow } from "../../../store/auth-requests.js";
import { newId } from "../../ids.js";
import { findClient } from "../client-auth.js";
import { isOidcApp, type OidcClient } from "../grants/oidc-client.js";
import { OFFLINE_ACCESS } from "../grants/user-tokens.js";
import { hintClient, readIdTokenHint } from "../id-token.js";
import type { OAuthRuntime } from "../runtime.js";
import { scopeTokens } from "../scopes.js";
import { type AuthorizationError, errorCallback, withQuery } from "./callback.js";
import { challengeProblem } from "./pkce.js";
import { takePushed } from "./pushed.js";
import { matchesRedirectUri } from "./redirect-uri.js";

/** What the endpoint answers: a page that never redirects (no client or redirect URI to trust), or a redirect. */
export type AuthorizeOutcome = { kind: "page"; error: string; description: string } | { kind: "redirect"; location: string };

export const PROMPTS = ["none", "login", "consent", "select_account", "create"] as const;

/** The parameters this endpoint reads; any other is ignored (OIDC Core §3.1.2.1), even when repeated. */
export const KNOWN = [
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
 * parameter given twice is refused (OAuth 2.0 §3.1). With request_uri, the parameters are those its client pushed.
 */
export async function authorizeRequest(rt: OAuthRuntime, params: Map<string, string[]>, now: Date): Promise<AuthorizeOutcome> {
  for (const name of ["client_id", "redirect_uri", "request_uri"] as const) {
    if ((params.get(name)?.length ?? 0) > 1) return page("invalid_request", `${name} is repeated`);
  }
  const clientId = params.get("client_id")?.[0];
  if (!clientId) return page("invalid_request", "client_id is required");
  const client = await findClient(rt, clientId);
  if (!isOidcApp(client)) return page("invalid_client", "unknown client_id");
  if (!client.active) return page("invalid_client", "the application is not active");
  const requestUri = params.get("request_uri")?.[0];
  let pushed: Map<string, string[]> | undefined;
  if (requestUri) {
    // RFC 9126 §4: only the pushed parameters count, and only for the client that pushed them, once.
    pushed = await takePushed(rt, client, requestUri, now);
    if (!pushed) return page("invalid_request_uri", "request_uri is unknown, was used already, has expired or belongs to another client");
  }
  const checked = await checkAuthorization(rt, client, pushed ?? params, now, pushed !== undefined);
  if (checked.kind !== "valid")
    return checked.kind === "page" ? checked : { kind: "redirect", location: errorCallback(checked.back, checked.error, checked.description, rt.issuer) };
  // prompt=none is answered by the login UI too, from the End-User's session in this user agent only (its cookie):
  // without a page, a code or login_required and the like (OIDC Core §3.1.2.1). An id_token_hint never stands in
  // for that session: it only names the user (hintUserId) whose session of this browser may answer.
  await rt.store.authRequests.create(stored(checked.request));
  const base = client.oidc.loginBaseUrl ?? rt.loginUrl;
  return { kind: "redirect", location: withQuery(base, { authRequest: checked.request.id }) };
}

/** An authorization request checked: valid, or refused on a page (no redirect URI to trust) or at the redirect URI. */
export type Checked =
  | { kind: "valid"; request: AuthRequestRow }
  | { kind: "page"; error: string; description: string }
  | { kind: "refused"; back: { redirectUri: string; state: string | null }; error: AuthorizationError; description: string };

/**
 * Checks an authorization request of `client` in the order the specs prescribe. `pushed`: it came through PAR (as
 * an application with require_pushed_authorization_requests must send them).
 */
export async function checkAuthorization(rt: OAuthRuntime, client: OidcClient, params: Map<string, string[]>, now: Date, pushed: boolean): Promise<Checked> {
  const one = (name: Known): string | undefined => {
    const v = params.get(name);
    // Empty parameters are treated as omitted (OAuth 2.0 §3.1).
    return v?.[0] === "" ? undefined : v?.[0];
  };
  if ((params.get("redirect_uri")?.length ?? 0) > 1) return page("invalid_request", "redirect_uri is repeated");
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
    if (client.oidc.requirePushedAuthorizationRequests && !pushed) {
      throw refuse("invalid_request", "this application sends its authorization requests only as pushed authorization requests (request_uri)");
    }
    return { kind: "valid", request: await validated(rt, client, params, one, redirectUri, now) };
  } catch (err) {
    if (err instanceof Refusal) return { kind: "refused", back, error: err.error, description: err.description };
    throw err;
  }
}

const page = (error: string, description: string) => ({ kind: "page" as const, error, description });

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
  if (one("request_uri") !== undefined) throw refuse("invalid_request", "request_uri cannot be pushed");
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
  let scopes = scopeTokens(one("scope")).filter((s) => s.length <= LIMITS.scopeToken);
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
  // Offline access needs the user's consent (OIDC Core §11), which a request without interaction cannot ask for: a
  // silent sign-in never gains a refresh token it would not otherwise have.
  if (prompt.includes("none")) scopes = scopes.filter((s) => s !== OFFLINE_ACCESS);
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
    app: { projectId: client.projectId, orgId: client.orgId, consentRequired: client.oidc.consentRequired === true },
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
