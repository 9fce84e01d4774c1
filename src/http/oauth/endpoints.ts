// The OAuth/OIDC endpoints: parse, call the domain, answer. Errors are thrown
// and answered once by the router (errors.ts).
import type { ServerResponse } from "node:http";
import { bearerToken } from "../../domain/oauth/authn.js";
import { limitedAttempt } from "../../domain/oauth/brute-force.js";
import { invalidRequest } from "../../domain/oauth/errors.js";
import {
  authenticateClient,
  basicCredentials,
  type ClientRecord,
  grantFor,
  introspect,
  type OAuthRuntime,
  publicClient,
  resolveToken,
  revoke,
  userinfo,
} from "../../domain/oauth/tokens.js";
import { noteGrantType } from "../metrics.js";
import { discoveryDocument } from "./discovery.js";
import { NO_STORE, type Res, sendJson } from "./errors.js";
import { isForm, postedForm, type Req, readForm } from "./form.js";

export type Handler = (req: Req, res: Res) => Promise<void>;
type Form = Record<string, string | undefined>;

function sendDocument(req: Req, res: Res, body: string, headers: Record<string, string>): void {
  res.writeHead(200, { ...headers, "content-length": String(Buffer.byteLength(body)) });
  if (req.method === "HEAD") res.end();
  else (res as ServerResponse).end(body);
}

export function discovery(rt: OAuthRuntime): Handler {
  const body = discoveryDocument(rt.issuer);
  const headers = { "cache-control": "public, max-age=300", "content-type": "application/json; charset=utf-8" };
  return async (req, res) => sendDocument(req, res, body, headers);
}

export function jwks(rt: OAuthRuntime): Handler {
  // Short enough that a rotated-in key is seen well before it signs anything a client must verify.
  const headers = { "cache-control": "public, max-age=300, must-revalidate", "content-type": "application/jwk-set+json; charset=utf-8" };
  return async (req, res) => sendDocument(req, res, await rt.keys.jwks(), headers);
}

/** Whether the request carries client credentials (Basic, client_secret or a client assertion). */
export const hasCredentials = (req: Req, form: Form) =>
  basicCredentials(req.headers.authorization) !== undefined || form.client_secret !== undefined || form.client_assertion !== undefined;

export const authenticated = (rt: OAuthRuntime, req: Req, form: Form, endpoint: string): Promise<ClientRecord> =>
  authenticateClient(rt, { basic: basicCredentials(req.headers.authorization), form, endpoint: `${rt.issuer}${endpoint}` }, rt.clock());

/** The endpoint's work under the brute-force limits (per named client id and per source address). */
export function limited<T>(rt: OAuthRuntime, req: Req, form: Form, endpoint: string, run: () => Promise<T>): Promise<T> {
  let basicClientId: string | undefined;
  try {
    basicClientId = basicCredentials(req.headers.authorization)?.clientId;
  } catch {
    // malformed: authentication answers it
  }
  return limitedAttempt(rt, { endpoint, form, basicClientId, peer: req.socket?.remoteAddress }, run);
}

export function token(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const form = await postedForm(req);
    if (!form.grant_type) throw invalidRequest("grant_type is required");
    const grant = grantFor(form.grant_type);
    noteGrantType(req, form.grant_type);
    const answer = await limited(rt, req, form, "/oauth/v2/token", async () => {
      // Credentials that are sent must be valid (RFC 6749 §3.2.1), never silently ignored.
      const client = grant.clientAuthentication === "required" || hasCredentials(req, form) ? await authenticated(rt, req, form, "/oauth/v2/token") : undefined;
      return grant.handle(rt, form, client, rt.clock());
    });
    sendJson(res, 200, answer, NO_STORE);
  };
}

export function introspection(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const form = await postedForm(req);
    const client = await limited(rt, req, form, "/oauth/v2/introspect", () => authenticated(rt, req, form, "/oauth/v2/introspect"));
    sendJson(res, 200, await introspect(rt, client, form.token, rt.clock()), NO_STORE);
  };
}

export function revocation(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const form = await postedForm(req);
    // RFC 7009 §2.1: a public client (auth method none) revokes its tokens naming itself with client_id.
    const client = await limited(rt, req, form, "/oauth/v2/revoke", () =>
      hasCredentials(req, form) ? authenticated(rt, req, form, "/oauth/v2/revoke") : publicClient(rt, form.client_id),
    );
    await revoke(rt, client, form.token, rt.clock());
    res.writeHead(200, { ...NO_STORE, "content-length": "0" });
    res.end();
  };
}

/** RFC 6750 §2.1/§2.2: the bearer token from the header or the form body, never both; undefined without one. */
async function presentedToken(req: Req): Promise<string | undefined | { error: string; status: number }> {
  let body: Record<string, unknown> = {};
  if (req.method === "POST" && isForm(req)) {
    try {
      body = await readForm(req);
    } catch {
      throw invalidRequest("the form cannot be read");
    }
  }
  const fromBody = typeof body.access_token === "string";
  if (req.headers.authorization) {
    if (fromBody) return { error: "invalid_request", status: 400 };
    try {
      return bearerToken(req.headers.authorization);
    } catch {
      return { error: "invalid_token", status: 401 };
    }
  }
  return fromBody ? (body.access_token as string) : undefined;
}

export function userinfoEndpoint(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const challenge = (error?: string, status = 401) =>
      sendJson(res, status, error ? { error } : {}, {
        ...NO_STORE,
        "www-authenticate": error ? `Bearer realm="svc", error="${error}"` : 'Bearer realm="svc"',
      });
    const token = await presentedToken(req);
    if (typeof token === "object") return challenge(token.error, token.status);
    if (!token) return challenge();
    const t = await resolveToken(rt, token, rt.clock());
    if (!t) return challenge("invalid_token");
    // RFC 6750 §3.1: an API application's own token stands for no user, so there is nothing to tell.
    if (t.subject !== "user") return challenge("invalid_token");
    if (!t.scopes.includes("openid")) return challenge("insufficient_scope", 403);
    const claims = await userinfo(rt, t);
    if (!claims) return challenge("invalid_token");
    sendJson(res, 200, claims, NO_STORE);
  };
}
