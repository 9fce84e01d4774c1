// The browser-facing endpoints: authorization (GET and POST, OIDC Core §3.1.2.1) and RP-initiated logout. Their
// parameters come in the query (GET) or a form (POST); the domain decides between a redirect and a page.
import { parse as parseQuery } from "node:querystring";
import { authorizeRequest } from "../../domain/oauth/authorize/authorize.js";
import { endSession } from "../../domain/oauth/end-session.js";
import { invalidRequest } from "../../domain/oauth/errors.js";
import type { OAuthRuntime } from "../../domain/oauth/runtime.js";
import { startLogout } from "../../domain/saml/logout.js";
import type { Handler } from "./endpoints.js";
import { isForm, type Req, readForm } from "./form.js";
import { frontchannelPage, sendFrontchannelPage } from "./frontchannel.js";
import { sendPage, sendRedirect } from "./pages.js";

/** Each parameter's values, from the query of a GET or the form of a POST. */
async function parameters(req: Req): Promise<Map<string, string[]>> {
  let raw: Record<string, unknown>;
  if (req.method === "POST") {
    if (!isForm(req)) throw invalidRequest("the request must be application/x-www-form-urlencoded");
    raw = await readForm(req);
  } else {
    const q = req.url?.indexOf("?") ?? -1;
    raw = q < 0 ? {} : (parseQuery((req.url as string).slice(q + 1), "&", "=", { maxKeys: 100 }) as Record<string, unknown>);
  }
  const out = new Map<string, string[]>();
  for (const [k, v] of Object.entries(raw)) out.set(k, Array.isArray(v) ? v.map(String) : [String(v)]);
  return out;
}

export function authorizeEndpoint(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const outcome = await authorizeRequest(rt, await parameters(req), rt.clock());
    if (outcome.kind === "redirect") return sendRedirect(res, outcome.location);
    // No client or redirect URI to trust: the error is for the person in front of the browser, never sent anywhere.
    sendPage(res, 400, "Sign-in request refused", `${outcome.error}: ${outcome.description}`, req.method === "HEAD");
  };
}

export function endSessionEndpoint(rt: OAuthRuntime): Handler {
  return async (req, res) => {
    const params = await parameters(req);
    const single: Record<string, string | undefined> = {};
    for (const [k, v] of params) {
      if (v.length > 1) return sendPage(res, 400, "Sign-out request refused", `the parameter ${k.slice(0, 40)} is repeated`);
      if (v[0] !== "") single[k] = v[0];
    }
    const outcome = await endSession(rt, single, rt.clock());
    if (outcome.kind === "page") return sendPage(res, outcome.status, "Sign-out request refused", outcome.message, req.method === "HEAD");
    // With the hosted login, its pages say "signed out" (and, when no session was named, offer to end the browser's).
    const hosted = `${rt.issuer}/ui/login/`;
    const then = outcome.kind === "redirect" ? outcome.location : rt.loginUrl.startsWith(hosted) ? `${hosted}logout${outcome.ended ? "/done" : ""}` : undefined;
    // SAML Single Logout through the browser for the session's SPs that need it (svc's SLO endpoint, then on).
    const slo = then
      ? await startLogout({ store: rt.store, instanceId: rt.instanceId, clock: rt.clock, externalUrl: rt.issuer }, outcome.saml, then)
      : undefined;
    const next = slo ?? then;
    // Front-channel logout: the applications' logout frames first, then on.
    if (outcome.frames.length > 0) {
      const page = frontchannelPage(outcome.frames, next, `${hosted}assets/frontchannel.js`, next ? "Signing out…" : "Signed out");
      return sendFrontchannelPage(res, page, req.method === "HEAD");
    }
    if (next) return sendRedirect(res, next);
    sendPage(res, 200, "Signed out", "You are signed out.", req.method === "HEAD");
  };
}
