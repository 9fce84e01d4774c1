// OAuth 2.0 / OpenID Connect endpoints (discovery, JWKS, token, introspection,
// revocation, userinfo) as an Express router, plus the token runtime it shares
// with authn (signing keys, caches and their cross-replica invalidation).
import express from "express";
import type { Logger } from "pino";
import type { Config } from "../../config.js";
import { embeddedMasterKey } from "../../crypto/secretbox.js";
import { SigningKeys } from "../../crypto/signing-keys.js";
import { listenForInvalidations, onAuthInvalidation, TaggedCache } from "../../domain/auth-cache.js";
import { bearerToken } from "../../domain/authn.js";
import type { Clock } from "../../domain/context.js";
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
} from "../../domain/tokens.js";
import type { Database } from "../../store/db.js";

export interface OAuthDeps {
  config: Config;
  db: Database;
  instanceId: string;
  clock: Clock;
  log: Logger;
}

const MAX_FORM_BYTES = 64 * 1024;

export async function createOAuth(deps: OAuthDeps): Promise<{ router: express.Router; runtime: OAuthRuntime; close(): Promise<void> }> {
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
    writer: new TokenWriter(db.prisma),
    markers: new TokenWriter(db.prisma),
  };
  const onTarget = (t: Parameters<Parameters<typeof onAuthInvalidation>[0]>[0]) => {
    if ("keys" in t || "all" in t) keys.invalidate();
    rt.tokens.invalidate(t);
    rt.clients.invalidate(t);
    rt.machineKeys.invalidate(t);
  };
  const unsubscribe = onAuthInvalidation(onTarget);
  let listener: { ready: Promise<void>; close(): Promise<void> } | undefined;
  if (db.kind === "postgres" && config.databaseUrl) {
    listener = listenForInvalidations(config.databaseUrl, log, onTarget, (up) => {
      rt.tokens.enabled = up;
      rt.clients.enabled = up;
      rt.machineKeys.enabled = up;
      if (!up) {
        rt.tokens.clear();
        rt.clients.clear();
        rt.machineKeys.clear();
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
    router: oauthRouter(rt),
    runtime: rt,
    async close() {
      clearInterval(housekeeping);
      unsubscribe();
      await listener?.close();
    },
  };
}

function noStore(res: express.Response): void {
  res.set("Cache-Control", "no-store");
  res.set("Pragma", "no-cache");
}

function sendError(res: express.Response, err: OAuthError): void {
  noStore(res);
  // RFC 6749 §5.2: invalid_client is a 401 with a challenge for the client authentication scheme.
  if (err.status === 401) res.set("WWW-Authenticate", 'Basic realm="svc"');
  res.status(err.status).json({ error: err.error, error_description: err.description });
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

/** Form body → single-valued parameters (RFC 6749 §3.2: none may repeat). */
function formOf(req: express.Request): Record<string, string | undefined> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(body)) {
    if (typeof v !== "string") throw new OAuthError("invalid_request", `parameter ${k} is repeated`);
    // Empty parameters are treated as omitted (RFC 6749 §3.1).
    if (v !== "") out[k] = v;
  }
  return out;
}

type Handler = (req: express.Request, res: express.Response) => Promise<void>;

function oauthRouter(rt: OAuthRuntime): express.Router {
  const router = express.Router();
  const issuer = rt.issuer;
  const discovery = JSON.stringify({
    issuer,
    token_endpoint: `${issuer}/oauth/v2/token`,
    introspection_endpoint: `${issuer}/oauth/v2/introspect`,
    revocation_endpoint: `${issuer}/oauth/v2/revoke`,
    userinfo_endpoint: `${issuer}/oidc/v1/userinfo`,
    jwks_uri: `${issuer}/oauth/v2/keys`,
    grant_types_supported: ["client_credentials", GRANT_JWT_BEARER],
    response_types_supported: ["token"],
    scopes_supported: [
      "openid",
      "profile",
      "email",
      "phone",
      "offline_access",
      SCOPE_MANAGEMENT,
      "urn:svc:iam:org:projects:roles",
      "urn:svc:iam:user:metadata",
    ],
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
  const sendDiscovery: express.RequestHandler = (_req, res) => {
    res.set("Cache-Control", "public, max-age=300");
    res.type("application/json").send(discovery);
  };
  router.get("/.well-known/openid-configuration", sendDiscovery);
  router.get("/.well-known/oauth-authorization-server", sendDiscovery);
  router.get("/oauth/v2/keys", async (_req, res, next) => {
    try {
      const body = await rt.keys.jwks();
      // Short enough that a rotated-in key is seen well before it signs anything a client must verify.
      res.set("Cache-Control", "public, max-age=300, must-revalidate");
      res.type("application/jwk-set+json").send(body);
    } catch (err) {
      next(err);
    }
  });

  const form = express.urlencoded({ extended: false, limit: MAX_FORM_BYTES, parameterLimit: 50, type: () => true });
  const post = (path: string, handler: Handler) => {
    router.post(path, (req, res, next) => {
      const ct = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
      if (ct !== "application/x-www-form-urlencoded") {
        req.resume();
        sendError(res, new OAuthError("invalid_request", "the request must be application/x-www-form-urlencoded"));
        return;
      }
      form(req, res, (err?: unknown) => {
        if (err) {
          const e = err as { type?: string; status?: number };
          const tooLarge = e.type === "entity.too.large" || e.type === "parameters.too.many";
          sendError(res, new OAuthError("invalid_request", tooLarge ? "the form is too large" : "the form cannot be read"));
          return;
        }
        handler(req, res).catch((e2: unknown) => {
          if (e2 instanceof OAuthError) sendError(res, e2);
          else next(e2);
        });
      });
    });
  };

  const client = async (req: express.Request, f: Record<string, string | undefined>, endpoint: string): Promise<ClientRecord> =>
    authenticateClient(rt, { basic: basicCredentials(req.headers.authorization), form: f, endpoint: `${issuer}${endpoint}` }, rt.clock());

  post("/oauth/v2/token", async (req, res) => {
    const f = formOf(req);
    const grant = f.grant_type;
    if (!grant) throw new OAuthError("invalid_request", "grant_type is required");
    let body: unknown;
    if (grant === "client_credentials") {
      const c = await client(req, f, "/oauth/v2/token");
      body = await clientCredentialsGrant(rt, c, f.scope, rt.clock());
    } else if (grant === GRANT_JWT_BEARER) {
      body = await jwtBearerGrant(rt, f.assertion, f.scope, rt.clock());
    } else {
      throw new OAuthError("unsupported_grant_type", `supported: client_credentials, ${GRANT_JWT_BEARER}`);
    }
    noStore(res);
    res.json(body);
  });

  post("/oauth/v2/introspect", async (req, res) => {
    const f = formOf(req);
    const c = await client(req, f, "/oauth/v2/introspect");
    const body = await introspect(rt, c, f.token, rt.clock());
    noStore(res);
    res.json(body);
  });

  post("/oauth/v2/revoke", async (req, res) => {
    const f = formOf(req);
    const c = await client(req, f, "/oauth/v2/revoke");
    await revoke(rt, c, f.token, rt.clock());
    noStore(res);
    res.status(200).end();
  });

  const userinfoHandler: Handler = async (req, res) => {
    const challenge = (error?: string, status = 401) => {
      noStore(res);
      res.set("WWW-Authenticate", error ? `Bearer realm="svc", error="${error}"` : 'Bearer realm="svc"');
      res.status(status).json(error ? { error } : {});
    };
    let token: string | undefined;
    const fromBody = req.method === "POST" && typeof (req.body as Record<string, unknown> | undefined)?.access_token === "string";
    if (req.headers.authorization) {
      if (fromBody) return challenge("invalid_request", 400);
      try {
        token = bearerToken(req.headers.authorization);
      } catch {
        return challenge("invalid_token");
      }
    } else if (fromBody) {
      token = (req.body as Record<string, string>).access_token;
    }
    if (!token) return challenge();
    const t = await resolveToken(rt, token, rt.clock());
    if (!t) return challenge("invalid_token");
    // RFC 6750 §3.1: an API application's own token stands for no user, so there is nothing to tell.
    if (t.subject !== "user") return challenge("invalid_token");
    if (!t.scopes.includes("openid")) return challenge("insufficient_scope", 403);
    noStore(res);
    res.json(await userinfo(rt, t));
  };
  router.get("/oidc/v1/userinfo", (req, res, next) => {
    userinfoHandler(req, res).catch(next);
  });
  router.post("/oidc/v1/userinfo", (req, res, next) => {
    const ct = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    const run = () => userinfoHandler(req, res).catch(next);
    if (ct !== "application/x-www-form-urlencoded") return void run();
    form(req, res, (err?: unknown) => {
      if (err) {
        sendError(res, new OAuthError("invalid_request", "the form cannot be read"));
        return;
      }
      run();
    });
  });
  return router;
}
