// The authorization code flow's test support: OIDC applications, a login UI (a machine user holding
// IAM_LOGIN_CLIENT) that signs users in with SessionService and finishes auth requests with OIDCService, and
// openid-client pointed at the test server. Everything through the real endpoints.
import * as oidc from "openid-client";
import { type Machine, machine, PASSWORD } from "./fixtures.js";
import { admin, type Json, ok } from "./rpc.js";
import type { TestServer } from "./server.js";

export { oidc };

/** A login UI's machine user: IAM_LOGIN_CLIENT, as the hosted login and customers' own login UIs hold it. */
export async function loginClient(t: TestServer, orgId: string, name: string): Promise<Machine> {
  const m = await machine(t, orgId, name);
  await admin(t, "AddInstanceMember", { userId: m.userId, roles: ["IAM_LOGIN_CLIENT"] });
  return m;
}

export interface OidcApp {
  appId: string;
  clientId: string;
  clientSecret: string;
}

/** An OIDC application of `projectId` (web, client_secret_basic, authorization_code + refresh_token by default). */
export async function oidcApp(t: TestServer, projectId: string, name: string, config: Json = {}): Promise<OidcApp> {
  const res = await admin(t, "CreateApplication", {
    projectId,
    name,
    oidc: {
      redirectUris: ["https://rp.example.com/cb"],
      postLogoutRedirectUris: ["https://rp.example.com/signed-out"],
      grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
      ...config,
    },
  });
  return { appId: res.appId, clientId: res.clientId, clientSecret: res.clientSecret ?? "" };
}

/** The issuer (SVC_EXTERNAL_URL, http://localhost:0 in tests since the port is chosen at start). */
export const issuerOf = (t: TestServer) => t.server.tokens.issuer as string;

/** openid-client against the issuer: requests to the issuer's origin go to the test server instead. */
export async function discover(
  t: TestServer,
  clientId: string,
  metadata: Partial<oidc.ClientMetadata> | string,
  auth?: oidc.ClientAuth,
): Promise<oidc.Configuration> {
  const issuer = issuerOf(t);
  const redirect: oidc.CustomFetch = (url, options) => fetch(url.replace(issuer, t.url), options as RequestInit);
  const config = await oidc.discovery(new URL(issuer), clientId, metadata, auth, { execute: [oidc.allowInsecureRequests], [oidc.customFetch]: redirect });
  config[oidc.customFetch] = redirect;
  return config;
}

/** An authorization request URL (any issuer-relative URL) sent to the test server; redirects are not followed. */
export function visit(t: TestServer, url: string | URL, init: RequestInit = {}): Promise<Response> {
  return fetch(String(url).replace(issuerOf(t), t.url), { redirect: "manual", ...init });
}

/** GET /oauth/v2/authorize with these parameters. */
export const authorizeGet = (t: TestServer, params: Record<string, string>) => visit(t, `${t.url}/oauth/v2/authorize?${new URLSearchParams(params)}`);

/** The auth request id of the login UI redirect. */
export function authRequestOf(res: Response): string {
  if (res.status !== 302) throw new Error(`expected a redirect to the login UI, got ${res.status}`);
  const id = new URL(res.headers.get("location") as string).searchParams.get("authRequest");
  if (!id) throw new Error(`no authRequest in ${res.headers.get("location")}`);
  return id;
}

/** The query of a redirect to the client. */
export function redirectQuery(res: Response): Record<string, string> {
  if (res.status !== 302) throw new Error(`expected a redirect, got ${res.status}`);
  return Object.fromEntries(new URL(res.headers.get("location") as string).searchParams);
}

export interface SessionRef {
  sessionId: string;
  sessionToken: string;
}

/** A session of `loginName` checked with its password, made by the login UI. */
export async function signIn(t: TestServer, login: Machine, loginName: string, password = PASSWORD): Promise<SessionRef> {
  const s = await ok(t, "rest", login.pat, "CreateSession", { checks: { user: { loginName }, password: { password } } });
  return { sessionId: s.sessionId, sessionToken: s.sessionToken };
}

/** CreateCallback with a session: the callback URL. */
export async function finish(t: TestServer, login: Machine, authRequestId: string, session: SessionRef): Promise<string> {
  return (await ok(t, "rest", login.pat, "CreateCallback", { authRequestId, session })).callbackUrl;
}

export interface FlowOptions {
  scope?: string;
  pkce?: boolean;
  extra?: Record<string, string>;
  session?: SessionRef;
}

export interface Flow {
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  session: SessionRef;
  callbackUrl: string;
}

/**
 * The whole code flow as a relying party and a login UI do it: openid-client builds the authorization URL (state,
 * nonce, PKCE S256), the browser's first hop lands at the login UI with ?authRequest=, the login UI signs the user in
 * and finishes the request, and openid-client checks the callback (state, iss) and redeems the code (ID token
 * signature, iss, aud, nonce, at_hash).
 */
export async function codeFlow(t: TestServer, config: oidc.Configuration, login: Machine, loginName: string, o: FlowOptions = {}): Promise<Flow> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const params: Record<string, string> = {
    redirect_uri: "https://rp.example.com/cb",
    scope: o.scope ?? "openid profile email",
    state,
    nonce,
    ...(o.pkce === false ? {} : { code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256" }),
    ...o.extra,
  };
  const authRequestId = authRequestOf(await visit(t, oidc.buildAuthorizationUrl(config, params)));
  const session = o.session ?? (await signIn(t, login, loginName));
  const callbackUrl = await finish(t, login, authRequestId, session);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(callbackUrl), {
    pkceCodeVerifier: o.pkce === false ? undefined : verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  return { tokens, session, callbackUrl };
}

/** POST a form to an OAuth endpoint of the test server. */
export async function postForm(
  t: TestServer,
  path: string,
  body: Record<string, string>,
  authorization?: string,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(t.url + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(authorization ? { authorization } : {}) },
    body: new URLSearchParams(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : {} };
}

export const basicAuth = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
