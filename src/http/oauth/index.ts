// OAuth 2.0 / OpenID Connect endpoints (discovery, JWKS, token, introspection,
// revocation, userinfo), plus the token runtime they share with authn (signing
// keys, caches and their cross-replica invalidation).
//
// Served on Node's request and response directly (HTTP/1.1 and HTTP/2): these
// are the hottest endpoints of the service, and Express's per-request routing
// cost as much CPU as a cached userinfo answer.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import type { Config } from "../../config.js";
import { embeddedMasterKey } from "../../crypto/secretbox.js";
import { SigningKeys } from "../../crypto/signing-keys.js";
import type { Clock } from "../../domain/context.js";
import { asDomainError } from "../../domain/errors.js";
import { bearerToken } from "../../domain/oauth/authn.js";
import {
  authenticateClient,
  type ClientRecord,
  clientCredentialsGrant,
  GRANT_JWT_BEARER,
  introspect,
  jwtBearerGrant,
  OAuthError,
  type OAuthRuntime,
  registerRuntime,
  resolveToken,
  revoke,
  SCOPE_MANAGEMENT,
  TokenWriter,
  userinfo,
} from "../../domain/oauth/tokens.js";
import { listenForInvalidations, onAuthInvalidation, TaggedCache } from "../../store/auth-cache.js";
import type { Database } from "../../store/db.js";

export interface OAuthDeps {
  config: Config;
  db: Database;
  instanceId: string;
  clock: Clock;
  log: Logger;
}

const MAX_FORM_BYTES = 64 * 1024;

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;
export type OAuthHandler = (req: Req, res: Res) => Promise<void>;

export async function createOAuth(deps: OAuthDeps): Promise<{ handler: OAuthHandler; runtime: OAuthRuntime; close(): Promise<void> }> {
  const { config, db, log, clock } = deps;
  let masterKey = config.masterKey;
  if (!masterKey) {
    const mk = await embeddedMasterKey(config.dataDir);
    if (mk.generated)
      log.warn({ file: mk.file }, "SVC_MASTER_KEY is not set: generated a master key for the embedded database; back it up with the data directory");
    masterKey = mk.key;
  }
  const keys = new SigningKeys({
    db: db.prisma,
    instanceId: deps.instanceId,
    masterKey,
    rotationSeconds: config.signingKeyRotationSeconds,
    overlapSeconds: config.signingKeyOverlapSeconds,
    clock,
    log,
  });
  const rt: OAuthRuntime = {
    db: db.prisma,
    instanceId: deps.instanceId,
    issuer: config.externalUrl,
    keys,
    clock,
    log,
    lifetimes: { clientCredentials: config.accessTokenLifetimeClientCredentials, jwtProfile: config.accessTokenLifetimeJwtProfile },
    tokens: new TaggedCache(),
    clients: new TaggedCache(),
    machineKeys: new TaggedCache(),
    roleClaims: new TaggedCache(),
    writer: new TokenWriter(db.prisma),
    markers: new TokenWriter(db.prisma),
  };
  const onTarget = (t: Parameters<Parameters<typeof onAuthInvalidation>[0]>[0]) => {
    if ("keys" in t || "all" in t) keys.invalidate();
    rt.tokens.invalidate(t);
    rt.clients.invalidate(t);
    rt.machineKeys.invalidate(t);
    rt.roleClaims.invalidate(t);
  };
  const unsubscribe = onAuthInvalidation(onTarget);
  let listener: { ready: Promise<void>; close(): Promise<void> } | undefined;
  if (db.kind === "postgres" && config.databaseUrl) {
    listener = listenForInvalidations(config.databaseUrl, log, onTarget, (up) => {
      rt.tokens.enabled = up;
      rt.clients.enabled = up;
      rt.machineKeys.enabled = up;
      rt.roleClaims.enabled = up;
      if (!up) {
        rt.tokens.clear();
        rt.clients.clear();
        rt.machineKeys.clear();
        rt.roleClaims.clear();
      }
    });
    await listener.ready;
  }
  await keys.active();
  registerRuntime(rt);
  // Housekeeping: re-read the key set now and then (keys past their verifyUntil leave the JWKS; a
  // rotation due by schedule happens on the next signature), and purge token rows and used-assertion
  // markers an hour after they expired. Every replica may do it; the work is idempotent.
  const housekeeping = setInterval(() => {
    keys.invalidate();
    rt.db.oAuthToken
      .deleteMany({ where: { instanceId: rt.instanceId, expiresAt: { lt: new Date(clock().getTime() - 3_600_000) } } })
      .catch((err: unknown) => log.warn({ err }, "could not purge expired OAuth tokens"));
  }, 60_000);
  housekeeping.unref();
  return {
    handler: oauthHandler(rt),
    runtime: rt,
    async close() {
      clearInterval(housekeeping);
      unsubscribe();
      await listener?.close();
    },
  };
}

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

function sendJson(res: Res, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(json)) });
  (res as ServerResponse).end(json);
}

function sendError(res: Res, err: OAuthError): void {
  // RFC 6749 §5.2: invalid_client is a 401 with a challenge for the client authentication scheme.
  const challenge: Record<string, string> = err.status === 401 ? { "www-authenticate": 'Basic realm="svc"' } : {};
  sendJson(res, err.status, { error: err.error, error_description: err.description }, { ...NO_STORE, ...challenge });
}

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded before base64. */
function basicCredentials(header: string | undefined): { clientId: string; secret: string } | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) throw new OAuthError("invalid_client", "malformed Basic credentials", 401);
  try {
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { clientId: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
  } catch {
    throw new OAuthError("invalid_client", "malformed Basic credentials", 401);
  }
}

const MAX_FORM_PARAMETERS = 50;

/** Reads an application/x-www-form-urlencoded body (at most MAX_FORM_BYTES and MAX_FORM_PARAMETERS). */
async function readForm(req: Req): Promise<Record<string, unknown>> {
  if (Number(req.headers["content-length"] ?? 0) > MAX_FORM_BYTES) throw new OAuthError("invalid_request", "the form is too large");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new OAuthError("invalid_request", "the form is too large");
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text && text.split("&").length > MAX_FORM_PARAMETERS) throw new OAuthError("invalid_request", "the form is too large");
  return parseQuery(text) as Record<string, unknown>;
}

/** Form parameters → single-valued parameters (RFC 6749 §3.2: none may repeat). */
function formOf(body: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(body)) {
    if (typeof v !== "string") throw new OAuthError("invalid_request", `parameter ${k} is repeated`);
    // Empty parameters are treated as omitted (RFC 6749 §3.1).
    if (v !== "") out[k] = v;
  }
  return out;
}

const mediaType = (req: Req) => (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();

type Handler = (req: Req, res: Res) => Promise<void>;

/** The endpoints by lower-cased path; Express-era routing kept: case-insensitive, one trailing slash ignored. */
const OAUTH_PATHS = new Set([
  "/.well-known/openid-configuration",
  "/.well-known/oauth-authorization-server",
  "/oauth/v2/keys",
  "/oauth/v2/token",
  "/oauth/v2/introspect",
  "/oauth/v2/revoke",
  "/oidc/v1/userinfo",
]);

function endpointOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const q = url.indexOf("?");
  let path = (q < 0 ? url : url.slice(0, q)).toLowerCase();
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  return OAUTH_PATHS.has(path) ? path : undefined;
}

/** Whether the request is for one of the OAuth/OIDC endpoints. */
export function isOAuthPath(url: string | undefined): boolean {
  return endpointOf(url) !== undefined;
}

function oauthHandler(rt: OAuthRuntime): OAuthHandler {
  const issuer = rt.issuer;
  const discovery = JSON.stringify({
    issuer,
    token_endpoint: `${issuer}/oauth/v2/token`,
    introspection_endpoint: `${issuer}/oauth/v2/introspect`,
    revocation_endpoint: `${issuer}/oauth/v2/revoke`,
    userinfo_endpoint: `${issuer}/oidc/v1/userinfo`,
    jwks_uri: `${issuer}/oauth/v2/keys`,
    grant_types_supported: ["client_credentials", GRANT_JWT_BEARER],
    // RFC 8414 requires the member; no authorization endpoint exists (yet), so no response type is served.
    response_types_supported: [],
    scopes_supported: ["openid", "profile", "email", "phone", SCOPE_MANAGEMENT, "urn:svc:iam:org:projects:roles", "urn:svc:iam:user:metadata"],
    claims_supported: [
      "sub",
      "iss",
      "aud",
      "exp",
      "iat",
      "name",
      "given_name",
      "family_name",
      "nickname",
      "preferred_username",
      "locale",
      "updated_at",
      "email",
      "email_verified",
      "phone_number",
      "phone_number_verified",
      "urn:svc:iam:user:metadata",
    ],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["RS256"],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
    token_endpoint_auth_signing_alg_values_supported: ["RS256"],
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
    introspection_endpoint_auth_signing_alg_values_supported: ["RS256"],
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
    revocation_endpoint_auth_signing_alg_values_supported: ["RS256"],
    request_parameter_supported: false,
    claims_parameter_supported: false,
  });
  const discoveryHeaders = {
    "cache-control": "public, max-age=300",
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(discovery)),
  };
  const sendDiscovery: Handler = async (req, res) => {
    res.writeHead(200, discoveryHeaders);
    if (req.method === "HEAD") res.end();
    else (res as ServerResponse).end(discovery);
  };
  const keys: Handler = async (req, res) => {
    const body = await rt.keys.jwks();
    // Short enough that a rotated-in key is seen well before it signs anything a client must verify.
    res.writeHead(200, {
      "cache-control": "public, max-age=300, must-revalidate",
      "content-type": "application/jwk-set+json; charset=utf-8",
      "content-length": String(Buffer.byteLength(body)),
    });
    if (req.method === "HEAD") res.end();
    else (res as ServerResponse).end(body);
  };

  /** A form-posting endpoint: the media type is checked before the body is read. */
  const post =
    (handler: (req: Req, res: Res, f: Record<string, string | undefined>) => Promise<void>): Handler =>
    async (req, res) => {
      if (mediaType(req) !== "application/x-www-form-urlencoded") {
        throw new OAuthError("invalid_request", "the request must be application/x-www-form-urlencoded");
      }
      await handler(req, res, formOf(await readForm(req)));
    };

  const client = async (req: Req, f: Record<string, string | undefined>, endpoint: string): Promise<ClientRecord> =>
    authenticateClient(rt, { basic: basicCredentials(req.headers.authorization), form: f, endpoint: `${issuer}${endpoint}` }, rt.clock());

  const token = post(async (req, res, f) => {
    const grant = f.grant_type;
    if (!grant) throw new OAuthError("invalid_request", "grant_type is required");
    let body: unknown;
    if (grant === "client_credentials") {
      const c = await client(req, f, "/oauth/v2/token");
      body = await clientCredentialsGrant(rt, c, f.scope, rt.clock());
    } else if (grant === GRANT_JWT_BEARER) {
      // RFC 7523 §3.1 makes client authentication optional for this grant; credentials that are
      // sent must still be valid (RFC 6749 §3.2.1), never silently ignored.
      if (basicCredentials(req.headers.authorization) || f.client_secret !== undefined || f.client_assertion !== undefined)
        await client(req, f, "/oauth/v2/token");
      body = await jwtBearerGrant(rt, f.assertion, f.scope, rt.clock());
    } else {
      throw new OAuthError("unsupported_grant_type", `supported: client_credentials, ${GRANT_JWT_BEARER}`);
    }
    sendJson(res, 200, body, NO_STORE);
  });

  const introspection = post(async (req, res, f) => {
    const c = await client(req, f, "/oauth/v2/introspect");
    sendJson(res, 200, await introspect(rt, c, f.token, rt.clock()), NO_STORE);
  });

  const revocation = post(async (req, res, f) => {
    const c = await client(req, f, "/oauth/v2/revoke");
    await revoke(rt, c, f.token, rt.clock());
    res.writeHead(200, { ...NO_STORE, "content-length": "0" });
    res.end();
  });

  const userinfoHandler: Handler = async (req, res) => {
    const challenge = (error?: string, status = 401) =>
      sendJson(res, status, error ? { error } : {}, {
        ...NO_STORE,
        "www-authenticate": error ? `Bearer realm="svc", error="${error}"` : 'Bearer realm="svc"',
      });
    let body: Record<string, unknown> = {};
    if (req.method === "POST" && mediaType(req) === "application/x-www-form-urlencoded") {
      try {
        body = await readForm(req);
      } catch {
        throw new OAuthError("invalid_request", "the form cannot be read");
      }
    }
    let token: string | undefined;
    const fromBody = typeof body.access_token === "string";
    if (req.headers.authorization) {
      if (fromBody) return challenge("invalid_request", 400);
      try {
        token = bearerToken(req.headers.authorization);
      } catch {
        return challenge("invalid_token");
      }
    } else if (fromBody) {
      token = body.access_token as string;
    }
    if (!token) return challenge();
    const t = await resolveToken(rt, token, rt.clock());
    if (!t) return challenge("invalid_token");
    // RFC 6750 §3.1: an API application's own token stands for no user, so there is nothing to tell.
    if (t.subject !== "user") return challenge("invalid_token");
    if (!t.scopes.includes("openid")) return challenge("insufficient_scope", 403);
    sendJson(res, 200, await userinfo(rt, t), NO_STORE);
  };

  const routes: Record<string, Record<string, Handler>> = {
    "/.well-known/openid-configuration": { GET: sendDiscovery },
    "/.well-known/oauth-authorization-server": { GET: sendDiscovery },
    "/oauth/v2/keys": { GET: keys },
    "/oauth/v2/token": { POST: token },
    "/oauth/v2/introspect": { POST: introspection },
    "/oauth/v2/revoke": { POST: revocation },
    "/oidc/v1/userinfo": { GET: userinfoHandler, POST: userinfoHandler },
  };

  return async (req, res) => {
    const methods = routes[endpointOf(req.url) ?? ""] ?? {};
    const handler = methods[req.method === "HEAD" ? "GET" : (req.method ?? "")];
    try {
      if (!handler) {
        req.resume();
        sendJson(
          res,
          405,
          { error: "invalid_request", error_description: `use ${Object.keys(methods).join(" or ")}` },
          { allow: Object.keys(methods).join(", ") },
        );
        return;
      }
      await handler(req, res);
    } catch (err) {
      // A body left unread (an early error) must not be taken for the next request on this connection.
      if (!req.readableEnded) req.resume();
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof OAuthError) {
        sendError(res, err);
        return;
      }
      if (asDomainError(err)?.id === "Errors.Input.Text") {
        sendError(res, new OAuthError("invalid_request", "parameters must not contain U+0000"));
        return;
      }
      rt.log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error in an OAuth endpoint");
      sendJson(res, 500, { error: "server_error", error_description: "internal error" }, NO_STORE);
    }
  };
}
