// Sign-in scenarios: whole authorization code flows with a password check (authorize → session → callback → token
// exchange) beside the bound they cannot beat, the same argon2id verifications alone with the same settings; single
// sign-on flows on an existing session (no password); refresh-token grants. Setup makes a login client
// (IAM_LOGIN_CLIENT), a human user with a password and a confidential OIDC app, through the API.
import { hashPassword, verifyPassword } from "../../src/crypto/passwords.js";
import type { FlowSpec } from "../flow-client.js";
import { type BenchContext, type LoadResult, type Scenario, threadCpuMs, threadsLine } from "../run.js";

export const PASSWORD = "Bench-Sign-In-Passw0rd!";
const REDIRECT_URI = "http://127.0.0.1:9/callback";

async function api<T>(ctx: BenchContext, method: string, p: string, body?: unknown, token = ctx.pat): Promise<T> {
  const res = await fetch(ctx.url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

export type Base = Omit<FlowSpec, "connections" | "warmupSeconds" | "seconds" | "kind">;
let prepared: Promise<Base> | undefined;

/** The login client, user and app every sign-in scenario uses (made once per run). */
export function signInWorld(ctx: BenchContext): Promise<Base> {
  prepared ??= (async () => {
    const { id: loginId } = await api<{ id: string }>(ctx, "POST", "/v2/users/new", {
      organizationId: ctx.orgId,
      username: "bench-login-ui",
      machine: { name: "Bench login UI" },
    });
    await api(ctx, "POST", "/v2/instance/members", { userId: loginId, roles: ["IAM_LOGIN_CLIENT"] });
    const { token: loginPat } = await api<{ token: string }>(ctx, "POST", `/v2/users/${loginId}/pats`, {});
    await api(ctx, "POST", "/v2/users/new", {
      organizationId: ctx.orgId,
      username: "bench-signer",
      human: {
        profile: { givenName: "Bench", familyName: "Signer" },
        email: { email: "bench-signer@example.com", isVerified: true },
        password: { password: PASSWORD },
      },
    });
    const { projectId } = await api<{ projectId: string }>(ctx, "POST", "/v2/projects/new", { organizationId: ctx.orgId, name: "Bench sign-in" });
    const app = await api<{ clientId: string; clientSecret: string }>(ctx, "POST", `/v2/projects/${projectId}/apps`, {
      name: "bench web app",
      oidc: {
        redirectUris: [REDIRECT_URI],
        grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
        responseTypes: ["OIDC_RESPONSE_TYPE_CODE"],
        appType: "OIDC_APP_TYPE_WEB",
        authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC",
        devMode: true,
      },
    });
    return {
      url: ctx.url,
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      redirectUri: REDIRECT_URI,
      loginPat,
      loginName: "bench-signer",
      password: PASSWORD,
    };
  })();
  return prepared;
}

export const SP_ENTITY = "https://sp.bench.example/saml";
export const SP_ACS = "https://sp.bench.example/saml/acs";
export const SP_METADATA = `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${SP_ENTITY}"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="false" WantAssertionsSigned="true"><md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat><md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${SP_ACS}" index="0" isDefault="true"/></md:SPSSODescriptor></md:EntityDescriptor>`;
let samlPrepared: Promise<void> | undefined;

/** svc's SAML app for the bench's SP (its own project, no gates; made once per run). */
export function samlApp(ctx: BenchContext): Promise<void> {
  samlPrepared ??= (async () => {
    const { projectId } = await api<{ projectId: string }>(ctx, "POST", "/v2/projects/new", { organizationId: ctx.orgId, name: "Bench SAML" });
    await api(ctx, "POST", `/v2/projects/${projectId}/apps`, {
      name: "bench SP",
      saml: { metadataXml: Buffer.from(SP_METADATA).toString("base64") },
    });
  })();
  return samlPrepared;
}

export async function session(base: Base): Promise<{ sessionId: string; sessionToken: string }> {
  const { sessionId, sessionToken } = await api<{ sessionId: string; sessionToken: string }>(
    { url: base.url, pat: base.loginPat } as BenchContext,
    "POST",
    "/v2/sessions",
    {
      checks: { user: { loginName: base.loginName }, password: { password: base.password } },
    },
  );
  return { sessionId, sessionToken };
}

/** argon2id verifications of a password hashed with svc's settings, `connections` at a time, as the server runs them. */
export async function argon2Bound(_ctx: BenchContext, seconds: number, connections: number): Promise<LoadResult> {
  const hash = await hashPassword(PASSWORD);
  const latencies: number[] = [];
  const threads0 = threadCpuMs();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        if (!(await verifyPassword(hash, PASSWORD)).ok) throw new Error("the password did not verify");
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const threads1 = threads0 && threadCpuMs();
  if (threads0 && threads1) process.stderr.write(`  svc's threads per verification: ${threadsLine(threads0, threads1, latencies.length)}\n`);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { requestsPerSecond: latencies.length / elapsed, latencyP50Ms: at(0.5), latencyP99Ms: at(0.99), requests: latencies.length, non2xx: 0, errors: 0 };
}

/** Refresh tokens to start the chains from: one code flow with offline_access per connection. */
export async function refreshTokens(base: Base, n: number): Promise<string[]> {
  const { createHash, randomBytes } = await import("node:crypto");
  const s = await session(base);
  const tokens: string[] = [];
  for (let i = 0; i < n; i++) {
    const verifier = randomBytes(32).toString("base64url");
    const q = new URLSearchParams({
      client_id: base.clientId,
      redirect_uri: base.redirectUri,
      response_type: "code",
      scope: "openid offline_access",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    });
    const auth = await fetch(`${base.url}/oauth/v2/authorize?${q}`, { redirect: "manual" });
    const authRequestId = new URL(auth.headers.get("location") ?? "").searchParams.get("authRequest");
    const { callbackUrl } = await api<{ callbackUrl: string }>(
      { url: base.url, pat: base.loginPat } as BenchContext,
      "POST",
      `/v2/oidc/auth_requests/${authRequestId}`,
      { session: s },
    );
    const res = await fetch(`${base.url}/oauth/v2/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(base.clientId)}:${encodeURIComponent(base.clientSecret)}`).toString("base64")}`,
      },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: new URL(callbackUrl).searchParams.get("code") ?? "",
        redirect_uri: base.redirectUri,
        code_verifier: verifier,
      }),
    });
    const out = (await res.json()) as { refresh_token?: string };
    if (!out.refresh_token) throw new Error(`no refresh token: ${JSON.stringify(out)}`);
    tokens.push(out.refresh_token);
  }
  return tokens;
}

const CONNECTIONS = Number(process.env.SVC_BENCH_CONNECTIONS ?? 10);

/** An open auth request of the sign-in app: where the hosted login's first page is rendered for. */
async function freshAuthRequest(base: Base): Promise<string> {
  const q = new URLSearchParams({
    client_id: base.clientId,
    redirect_uri: base.redirectUri,
    response_type: "code",
    scope: "openid profile",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  });
  const auth = await fetch(`${base.url}/oauth/v2/authorize?${q}`, { redirect: "manual" });
  const id = new URL(auth.headers.get("location") ?? "").searchParams.get("authRequest");
  if (!id) throw new Error(`authorize did not redirect to the login: HTTP ${auth.status}`);
  return id;
}

export const SIGN_IN_SCENARIOS: Scenario[] = [
  {
    // A browser's first visit: no cookie, so every answer also sets a new sealed one with its CSRF secret.
    name: "Hosted login page (login name, fresh auth request)",
    method: "GET",
    path: "/ui/login/login",
    anonymous: true,
    setup: async (ctx) => ({ path: `/ui/login/login?authRequest=${await freshAuthRequest(await signInWorld(ctx))}` }),
  },
  { name: "argon2id verify alone (bound of the code flow)", method: "POST", path: "-", local: argon2Bound },
  {
    name: "OIDC code flow with a password check",
    method: "POST",
    path: "/oauth/v2/authorize",
    flow: async (ctx) => ({ kind: "code", ...(await signInWorld(ctx)) }),
  },
  {
    name: "OIDC code flow on an existing session (SSO)",
    method: "POST",
    path: "/oauth/v2/authorize",
    flow: async (ctx) => {
      const base = await signInWorld(ctx);
      return { kind: "sso", ...base, session: await session(base) };
    },
  },
  {
    name: "OAuth refresh_token grant (rotating)",
    method: "POST",
    path: "/oauth/v2/token",
    flow: async (ctx) => {
      const base = await signInWorld(ctx);
      return { kind: "refresh", ...base, refreshTokens: await refreshTokens(base, CONNECTIONS) };
    },
  },
  {
    name: "SAML login on an existing session",
    method: "GET",
    path: "/saml/v2/SSO",
    flow: async (ctx) => {
      const base = await signInWorld(ctx);
      await samlApp(ctx);
      return { kind: "saml", ...base, session: await session(base), saml: { entityId: SP_ENTITY, acs: SP_ACS, ssoPath: "/saml/v2/SSO" } };
    },
  },
];
