// CORS for browser applications on other origins, with the headers connect-es documents for Connect and gRPC-Web
// (its `cors` constants) plus the REST and OAuth ones. Public documents (discovery, JWKS) are for any origin; the API,
// SCIM and the OAuth endpoints a browser calls only for the origins allowed by the settings (domain/settings/cors.ts).
// Never `*` together with credentials: svc's APIs take bearer tokens, never cookies, so no credentials are allowed.
// Browser navigations (authorize, end_session, the hosted login) need no CORS and get none.
import type http from "node:http";
import type http2 from "node:http2";
import { cors as connectCors } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Ctx } from "../domain/context.js";
import { type CorsOrigins, corsOrigins } from "../domain/settings/cors.js";
import type { NodeResponse } from "./node-types.js";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;

const PUBLIC = new Set([
  "/.well-known/openid-configuration",
  "/.well-known/oauth-authorization-server",
  "/oauth/v2/keys",
  "/openapi.json",
  "/saml/v2/metadata",
  "/saml/v2/certificate",
]);
const OAUTH = new Set(["/oauth/v2/token", "/oauth/v2/revoke", "/oauth/v2/introspect", "/oidc/v1/userinfo"]);
const NO_CORS_PREFIXES = ["/ui/", "/oauth/v2/authorize", "/oidc/v1/end_session", "/idps/callback", "/healthz", "/readyz", "/docs", "/metrics", "/saml/v2/sso"];

const ALLOWED_METHODS = [...new Set([...connectCors.allowedMethods, "GET", "POST", "PUT", "PATCH", "DELETE"])].join(", ");
const ALLOWED_HEADERS = [...new Set([...connectCors.allowedHeaders, "Authorization", "Grpc-Accept-Encoding", "X-Request-Id"])].join(", ");
const EXPOSED_HEADERS = [...new Set([...connectCors.exposedHeaders, "Grpc-Status-Details-Bin", "X-Request-Id", "Location", "Retry-After"])].join(", ");
/** How long a browser may cache a preflight's answer (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = 7200;
/** The allowed origins change rarely; every replica reads them at most this often. */
const TTL_MS = 5_000;

type Scope = "public" | "oauth" | "api" | "none";

function scopeOf(url: string | undefined): Scope {
  const path = (url ?? "/").split("?", 1)[0]?.toLowerCase().replace(/\/+$/, "") || "/";
  if (PUBLIC.has(path)) return "public";
  if (OAUTH.has(path)) return "oauth";
  if (NO_CORS_PREFIXES.some((p) => path.startsWith(p))) return "none";
  return "api";
}

/**
 * Handles what CORS is alone responsible for: answers a preflight and returns true, or adds the headers of an allowed
 * cross-origin request to `res` and returns false (the request goes on to its handler).
 */
export type CorsGate = (req: NodeRequest, res: NodeResponse) => Promise<boolean>;

export function corsGate(ctx: Pick<Ctx, "store" | "instanceId">, ownOrigin: string, log: Logger): CorsGate {
  let cached: { at: number; origins: Promise<CorsOrigins> } | undefined;
  const origins = (): Promise<CorsOrigins> => {
    const now = Date.now();
    if (!cached || now - cached.at > TTL_MS) {
      const read = corsOrigins(ctx);
      cached = { at: now, origins: read };
      // A failed read is not kept: the next request reads again.
      read.catch((err: unknown) => {
        log.warn({ err }, "could not read the allowed CORS origins");
        if (cached?.origins === read) cached = undefined;
      });
    }
    return cached.origins;
  };

  return async (req, res) => {
    const origin = typeof req.headers.origin === "string" ? req.headers.origin.toLowerCase() : undefined;
    if (!origin || origin === ownOrigin) return false;
    const scope = scopeOf(req.url);
    if (scope === "none") return false;
    let allowed = scope === "public";
    if (!allowed) {
      const o = await origins().catch(() => undefined);
      allowed = (scope === "oauth" ? o?.oauth : o?.api)?.has(origin) === true;
    }
    const preflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (preflight) {
      // The body of a preflight, if any, is not for anyone.
      req.resume();
      if (!allowed) {
        res.writeHead(403, { vary: "Origin", "content-length": "0" });
        res.end();
        return true;
      }
      res.writeHead(204, {
        "access-control-allow-origin": scope === "public" ? "*" : origin,
        "access-control-allow-methods": ALLOWED_METHODS,
        "access-control-allow-headers": ALLOWED_HEADERS,
        "access-control-max-age": String(MAX_AGE_SECONDS),
        vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        "content-length": "0",
      });
      res.end();
      return true;
    }
    if (allowed) {
      res.setHeader("access-control-allow-origin", scope === "public" ? "*" : origin);
      res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
    }
    res.setHeader("vary", "Origin");
    return false;
  };
}
