// Client authentication (RFC 6749 §2.3, RFC 7523 §2.2): client_secret_basic,
// client_secret_post and private_key_jwt, for applications and machine users
// alike, and the client records behind them (cached).
import { timingSafeEqual } from "node:crypto";
import { sha256 } from "../../crypto/tokens.js";
import { type OidcAppConfig, parseAppConfig } from "../access/app-settings.js";
import { CLIENT_ASSERTION_TYPE, readAssertion, verifyAssertion } from "./assertions.js";
import { invalidClient, invalidRequest, isOAuthError, OAuthErrors } from "./errors.js";
import type { OAuthRuntime } from "./runtime.js";

export interface ClientRecord {
  kind: "user" | "app";
  clientId: string;
  /** Machine user id, for user clients. */
  userId?: string;
  orgId: string;
  appId?: string;
  /** For app clients: API apps may use client_credentials; OIDC apps authenticate for introspection and revocation only. */
  appType?: "API" | "OIDC";
  projectId?: string;
  /** For app clients: the project has authorizationRequired or projectAccessRequired on. */
  projectGated?: boolean;
  secretHash: Uint8Array | null;
  authMethod?: string;
  accessTokenType: "BEARER" | "JWT";
  active: boolean;
  /** Set once authenticated: what with ("secret", "key:<key id>"); the tokens it gets are revoked with it. */
  credential?: string;
  /** An OIDC application's settings (redirect URIs, grant types, token claims, login UI). */
  oidc?: OidcAppConfig;
}

export interface MachineKeyRecord {
  publicKey: string;
  expiresAt: Date | null;
  user: { id: string; orgId: string; type: string; state: string; accessTokenType: "BEARER" | "JWT"; org: { state: string } };
}

/** A user may act while it and its organization are active. */
export const usable = (u: { state: string; org: { state: string } }) => u.state === "ACTIVE" && u.org.state === "ACTIVE";

/** The application or machine user a client id names (cached; concurrent misses share one read), or null. */
export async function findClient(rt: OAuthRuntime, clientId: string): Promise<ClientRecord | null> {
  if (clientId.length === 0 || clientId.length > 200) return null;
  const rec = await rt.clients.load(clientId, async () => {
    const rec = clientRecord(rt, clientId, await rt.store.tokens.findClient(rt.instanceId, clientId));
    // Apps are kept for a second only (their changes do notify, by org; this bounds anything missed).
    return { value: rec, tags: { userId: rec?.userId, orgId: rec?.orgId }, ttlMs: rec === null || rec.kind === "app" ? 1_000 : undefined };
  });
  return rec ?? null;
}

function clientRecord(
  rt: OAuthRuntime,
  clientId: string,
  { app, user, by }: Awaited<ReturnType<OAuthRuntime["store"]["tokens"]["findClient"]>>,
): ClientRecord | null {
  if (app && app.instanceId === rt.instanceId && (app.type === "API" || app.type === "OIDC")) {
    const rec: ClientRecord = {
      kind: "app",
      clientId,
      orgId: app.orgId,
      appId: app.id,
      appType: app.type,
      projectId: app.projectId,
      projectGated: app.project.authorizationRequired || app.project.projectAccessRequired,
      secretHash: app.secretHash,
      authMethod: app.authMethod,
      accessTokenType: app.accessTokenType,
      active: app.state === "ACTIVE" && app.project.state === "ACTIVE" && app.project.org.state === "ACTIVE",
    };
    const config = app.type === "OIDC" ? parseAppConfig(app.config) : undefined;
    // A login base URL stored before the origins were restricted (or after SVC_LOGIN_UI_ALLOWED_ORIGINS lost its
    // origin) is not followed: the instance's login UI serves the app instead.
    if (config?.kind === "oidc") rec.oidc = loginAllowed(rt, config.loginBaseUrl) ? config : { ...config, loginBaseUrl: undefined };
    return rec;
  }
  if (user && user.type === "MACHINE") {
    return {
      kind: "user",
      // The client id the client used, in its registered form: the user id, the login name (lower case), or the
      // username as stored, whatever case it was given in. Tokens carry it as client_id, aud and azp.
      clientId: by === "id" ? user.id : by === "loginName" ? clientId.toLowerCase() : user.username,
      userId: user.id,
      orgId: user.orgId,
      secretHash: user.secretHash,
      accessTokenType: user.accessTokenType,
      active: usable(user),
    };
  }
  return null;
}

/** A machine user's key with its user (cached per key and user). */
export async function machineKey(rt: OAuthRuntime, kid: string, userId: string): Promise<MachineKeyRecord | null> {
  const cacheKey = `${kid}\n${userId}`;
  const cached = rt.machineKeys.get(cacheKey);
  if (cached !== undefined) return cached;
  const gen = rt.machineKeys.generation();
  const key = await rt.store.tokens.findMachineKey(rt.instanceId, kid, userId);
  // Unknown keys are remembered briefly only (a key added a moment later must work).
  rt.machineKeys.set(cacheKey, key, gen, { userId: key?.user.id, orgId: key?.user.orgId }, key ? undefined : 1_000);
  return key;
}

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. Undefined without a Basic header. */
export function basicCredentials(header: string | undefined): { clientId: string; secret: string } | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) throw invalidClient("malformed Basic credentials");
  try {
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { clientId: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
  } catch {
    throw invalidClient("malformed Basic credentials");
  }
}

export interface ClientAuthInput {
  basic?: { clientId: string; secret: string };
  form: Record<string, string | undefined>;
  /** Audiences a client assertion may name (issuer and this endpoint). */
  endpoint: string;
}

/** Whether the request carries any client credentials. */
export const hasClientCredentials = (input: ClientAuthInput) =>
  input.basic !== undefined || input.form.client_secret !== undefined || input.form.client_assertion !== undefined;

/** Which method a request uses; throws when it uses none or several. */
export function clientAuthMethod(input: ClientAuthInput): "client_secret_basic" | "client_secret_post" | "private_key_jwt" {
  const { form } = input;
  const methods = [input.basic !== undefined, form.client_secret !== undefined, form.client_assertion !== undefined].filter(Boolean).length;
  if (methods === 0) throw invalidClient("no client authentication");
  if (methods > 1) throw invalidRequest("more than one client authentication method");
  if (input.basic) return "client_secret_basic";
  return form.client_secret !== undefined ? "client_secret_post" : "private_key_jwt";
}

/**
 * A public client (an OIDC application with auth method none) named by client_id: it has no credentials to show
 * (RFC 6749 §2.1); PKCE binds its codes. Every other client id gets the same invalid_client, so none can be probed.
 */
export async function publicClient(rt: OAuthRuntime, clientId: string | undefined): Promise<ClientRecord> {
  if (!clientId) throw invalidClient("client authentication is required");
  const client = await findClient(rt, clientId);
  if (client?.kind !== "app" || !client.oidc || client.authMethod !== "none" || !client.active) throw invalidClient();
  return client;
}

/** RFC 6749 §2.3 / RFC 7523 §2.2: exactly one client authentication method. */
export async function authenticateClient(rt: OAuthRuntime, input: ClientAuthInput, now: Date): Promise<ClientRecord> {
  const { form } = input;
  const method = clientAuthMethod(input);
  if (input.basic) {
    if (form.client_id !== undefined && form.client_id !== input.basic.clientId) throw invalidRequest("client_id differs from the Basic credentials");
    return { ...checkSecret(await findClient(rt, input.basic.clientId), input.basic.secret, method), credential: "secret" };
  }
  if (form.client_secret !== undefined) {
    if (!form.client_id) throw invalidRequest("client_id is required with client_secret");
    return { ...checkSecret(await findClient(rt, form.client_id), form.client_secret, method), credential: "secret" };
  }
  return assertedClient(rt, input, now);
}

/** private_key_jwt: the client assertion names the client, one of its keys verifies it, and it is used once. */
async function assertedClient(rt: OAuthRuntime, input: ClientAuthInput, now: Date): Promise<ClientRecord> {
  const { form } = input;
  if (form.client_assertion_type !== CLIENT_ASSERTION_TYPE) throw invalidRequest(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`);
  const assertion = form.client_assertion as string;
  const read = readAssertion(assertion);
  if (!read) throw invalidClient("malformed client assertion");
  const { kid, claims } = read;
  if (typeof claims.iss !== "string" || claims.iss !== claims.sub) throw invalidClient("the client assertion's iss and sub must both be the client id");
  if (form.client_id !== undefined && form.client_id !== claims.iss) throw invalidClient("client_id differs from the assertion's issuer");
  // From here on every failure reads the same, whether the id names no client, a machine user or an application
  // that authenticates otherwise: client ids cannot be enumerated with forged assertions.
  const client = await findClient(rt, claims.iss);
  if (!client?.active) throw invalidClient();
  if (client.kind === "app" && client.authMethod !== "private_key_jwt") throw invalidClient();
  const owner = client.kind === "app" ? { appId: client.appId as string } : { userId: client.userId as string };
  const pem = await rt.store.tokens.findClientKey(kid, owner);
  if (!pem || (pem.expiresAt && pem.expiresAt.getTime() <= now.getTime())) throw invalidClient();
  try {
    // OIDC Core §9: the audience SHOULD be the token endpoint, whichever endpoint the client authenticates at.
    const audiences = [...new Set([rt.issuer, `${rt.issuer}/oauth/v2/token`, input.endpoint])];
    await verifyAssertion(rt, { assertion, kid, pem: pem.publicKey, now, audiences, subject: claims.iss, owner });
  } catch (err) {
    if (isOAuthError(err, OAuthErrors.InvalidGrant)) throw invalidClient();
    throw err;
  }
  return { ...client, credential: `key:${kid}` };
}

function checkSecret(client: ClientRecord | null, secret: string, method: string): ClientRecord {
  // Compare against a dummy when there is nothing to compare, so timing does not tell which ids exist.
  const expected = client?.secretHash ?? new Uint8Array(32);
  const ok = timingSafeEqual(sha256(secret), expected.length === 32 ? expected : new Uint8Array(32));
  if (!client?.secretHash || !ok || !client.active) throw invalidClient();
  if (client.kind === "app" && client.authMethod !== method && !(client.authMethod === "client_secret_basic" && method === "client_secret_post")) {
    throw invalidClient(`the client is not registered for ${method}`);
  }
  return client;
}

/** Whether an application's login base URL is on an origin the instance allows (see access/app-settings.ts). */
function loginAllowed(rt: OAuthRuntime, url: string | undefined): boolean {
  if (!url || !rt.loginOrigins) return true;
  try {
    return rt.loginOrigins.includes(new URL(url).origin);
  } catch {
    return false;
  }
}
