// Sign-in as an OIDC public client (authorization code + PKCE S256) through svc's hosted login. Tokens live in this
// module's memory only (a reload signs in again, silently while the hosted login's session lasts); the refresh token
// rotates at every use; sign-out revokes it and ends the session at end_session.
import { consoleUrl, settings } from "./config";

/** The management API's audience scope gives the access token to the v2 API; offline_access the refresh token. */
const SCOPE = "openid profile email offline_access urn:svc:iam:org:project:id:svc:aud";
const PENDING = "svc-console.pending";
/** Refreshed this long before the access token expires. */
const EARLY_MS = 60_000;

export interface Claims {
  sub: string;
  name?: string;
  preferred_username?: string;
  email?: string;
  locale?: string;
  [claim: string]: unknown;
}

interface Tokens {
  accessToken: string;
  refreshToken?: string;
  idToken: string;
  expiresAt: number;
  claims: Claims;
}

interface TokenResponse {
  access_token: string;
  refresh_token?: string;
  id_token?: string;
  expires_in?: number;
  error?: string;
  error_description?: string;
}

let tokens: Tokens | undefined;
let refreshing: Promise<void> | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;

const redirectUri = () => consoleUrl("/callback");
const endpoint = (p: string) => new URL(p, settings.issuer).href;

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

const random = (bytes = 32) => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

async function s256(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

function decodeClaims(jwt: string): Claims {
  const payload = jwt.split(".")[1] ?? "";
  const json = atob(payload.replaceAll("-", "+").replaceAll("_", "/"));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as Claims;
}

export class SignInError extends Error {}

async function tokenRequest(params: Record<string, string>): Promise<TokenResponse> {
  const res = await fetch(endpoint("/oauth/v2/token"), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: settings.clientId, ...params }),
    credentials: "omit",
  });
  const body = (await res.json().catch(() => ({}))) as TokenResponse;
  if (!res.ok || !body.access_token) throw new SignInError(body.error_description ?? body.error ?? `token endpoint answered ${res.status}`);
  return body;
}

function keep(t: TokenResponse, expectedNonce?: string): void {
  const idToken = t.id_token ?? tokens?.idToken;
  if (!idToken) throw new SignInError("no ID token");
  const claims = t.id_token ? decodeClaims(t.id_token) : (tokens?.claims as Claims);
  // Received straight from the token endpoint over the connection the browser checked: the signature adds nothing
  // (OpenID Connect Core 3.1.3.7), the binding to this sign-in does.
  if (t.id_token) {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(settings.clientId)) throw new SignInError("the ID token is for another client");
    if (expectedNonce !== undefined && claims.nonce !== expectedNonce) throw new SignInError("the ID token's nonce does not match");
    if (tokens && claims.sub !== tokens.claims.sub) throw new SignInError("the refreshed tokens are another user's");
  }
  tokens = {
    accessToken: t.access_token,
    refreshToken: t.refresh_token ?? tokens?.refreshToken,
    idToken,
    expiresAt: Date.now() + (t.expires_in ?? 300) * 1000,
    claims,
  };
  schedule();
}

function schedule(): void {
  clearTimeout(timer);
  if (!tokens?.refreshToken) return;
  timer = setTimeout(
    () => {
      refresh().catch(() => signIn());
    },
    Math.max(5_000, tokens.expiresAt - Date.now() - EARLY_MS),
  );
}

/** Sends the browser to the hosted login; it comes back to /callback. */
export async function signIn(returnTo = location.pathname + location.search, prompt?: "login"): Promise<never> {
  const verifier = random(48);
  const state = random();
  const nonce = random();
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, nonce, returnTo }));
  const query = new URLSearchParams({
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    response_type: "code",
    scope: SCOPE,
    state,
    nonce,
    code_challenge: await s256(verifier),
    code_challenge_method: "S256",
    ui_locales: document.documentElement.lang || "en",
  });
  if (prompt) query.set("prompt", prompt);
  location.assign(`${endpoint("/oauth/v2/authorize")}?${query}`);
  return new Promise<never>(() => {});
}

/** At /callback, before the code is redeemed: where the sign-in started (to fetch that page's code meanwhile). */
export function pendingReturnTo(): string | undefined {
  try {
    return (JSON.parse(sessionStorage.getItem(PENDING) ?? "null") as { returnTo?: string } | null)?.returnTo;
  } catch {
    return undefined;
  }
}

/** At /callback: redeems the code; returns where the sign-in started. */
export async function completeSignIn(): Promise<string> {
  const q = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null") as { verifier: string; state: string; nonce: string; returnTo: string } | null;
  sessionStorage.removeItem(PENDING);
  if (q.get("error")) throw new SignInError(q.get("error_description") ?? (q.get("error") as string));
  if (!pending || q.get("state") !== pending.state) throw new SignInError("this sign-in was not started here (state mismatch)");
  const iss = q.get("iss");
  if (iss !== null && iss !== settings.issuer) throw new SignInError("the answer comes from another issuer");
  const code = q.get("code");
  if (!code) throw new SignInError("no authorization code");
  keep(await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: redirectUri(), code_verifier: pending.verifier }), pending.nonce);
  return pending.returnTo.startsWith(settings.base) ? pending.returnTo : `${settings.base}/`;
}

/** New tokens for the refresh token (rotated: the old one is spent). One exchange at a time. */
export function refresh(): Promise<void> {
  refreshing ??= (async () => {
    try {
      if (!tokens?.refreshToken) throw new SignInError("no refresh token");
      keep(await tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refreshToken }));
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

export const accessToken = () => tokens?.accessToken;
export const claims = () => tokens?.claims;
export const signedIn = () => tokens !== undefined;

/** Revokes the refresh token and ends the session at svc; the browser lands on /signed-out. */
export async function signOut(): Promise<never> {
  const t = tokens;
  tokens = undefined;
  clearTimeout(timer);
  if (t?.refreshToken) {
    await fetch(endpoint("/oauth/v2/revoke"), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: t.refreshToken, token_type_hint: "refresh_token", client_id: settings.clientId }),
      credentials: "omit",
    }).catch(() => undefined);
  }
  const query = new URLSearchParams({ client_id: settings.clientId, post_logout_redirect_uri: consoleUrl("/signed-out") });
  if (t) query.set("id_token_hint", t.idToken);
  location.assign(`${endpoint("/oidc/v1/end_session")}?${query}`);
  return new Promise<never>(() => {});
}
