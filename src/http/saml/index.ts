// The SAML identity provider's endpoints: the metadata, the signing certificate, SSO (SP-initiated, HTTP-Redirect
// GET and HTTP-POST) and Single Logout (both bindings). Served on Node's request and response like the OAuth endpoints. A refused AuthnRequest is a 4xx
// page for the person at the browser, never an answer to a URL the request named.
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import { asDomainError } from "../../domain/errors.js";
import { receiveAuthnRequest, type SsoAnswer } from "../../domain/saml/authn-request.js";
import { idpCertificatePem, idpMetadata } from "../../domain/saml/idp-metadata.js";
import { receiveLogout, type SloAnswer } from "../../domain/saml/logout.js";
import type { SamlIdp } from "../../domain/saml/runtime.js";
import { mediaType, readBody } from "../body.js";
import type { Res } from "../oauth/errors.js";
import type { Req } from "../oauth/form.js";
import { sendPage, sendRedirect } from "../oauth/pages.js";

const PATHS = new Set(["/saml/v2/metadata", "/saml/v2/certificate", "/saml/v2/sso", "/saml/v2/slo"]);
/** A POSTed form: the SAMLRequest (base64 of at most 64 KiB of XML) and RelayState with room to spare. */
const MAX_FORM_BYTES = 128 * 1024;

function pathOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const q = url.indexOf("?");
  let path = (q < 0 ? url : url.slice(0, q)).toLowerCase();
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  return PATHS.has(path) ? path : undefined;
}

export const isSamlPath = (url: string | undefined) => pathOf(url) !== undefined;

class TooLarge extends Error {}

function send(res: Res, type: string, body: string, head: boolean): void {
  res.writeHead(200, { "content-type": type, "cache-control": "public, max-age=300", "content-length": String(Buffer.byteLength(body)) });
  if (head) res.end();
  else res.end(body);
}

/**
 * The fields of an HTTP-POST binding's form, one value each (a field sent twice is refused like an oversized form);
 * undefined when the body is not a form (answered 415 here).
 */
async function postedForm(req: Req, res: Res, title: string, hint: string): Promise<((k: string) => string | undefined) | undefined> {
  if (mediaType(req) !== "application/x-www-form-urlencoded") {
    sendPage(res, 415, title, hint);
    return undefined;
  }
  const body = (await readBody(req, { maxBytes: MAX_FORM_BYTES, tooLarge: () => new TooLarge() })).toString("latin1");
  const form = parseQuery(body, "&", "=", { maxKeys: 20 });
  return (k) => {
    const v = form[k];
    if (Array.isArray(v)) throw new TooLarge();
    return v;
  };
}

/** The HTTP-Redirect binding's query, as sent (its signature covers the encoded form). */
const queryOf = (req: Req) => {
  const q = req.url?.indexOf("?") ?? -1;
  return q < 0 ? "" : (req.url as string).slice(q + 1);
};

async function sso(idp: SamlIdp, req: Req, res: Res): Promise<void> {
  let answer: SsoAnswer;
  if (req.method === "POST") {
    const one = await postedForm(req, res, "Sign-in request refused", "post the SAMLRequest as a form");
    if (!one) return;
    answer = await receiveAuthnRequest(idp, { binding: "post", samlRequest: one("SAMLRequest"), relayState: one("RelayState") }, idp.clock());
  } else {
    answer = await receiveAuthnRequest(idp, { binding: "redirect", query: queryOf(req) }, idp.clock());
  }
  if ("post" in answer) return sendPostForm(res, answer.url, answer.post);
  sendRedirect(res, answer.url);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** An SLO message for the HTTP-POST binding: a form the login's script posts at once (the button without scripts). */
function sendPostForm(res: Res, url: string, post: { name: string; value: string; relayState: string | null }): void {
  const relay = post.relayState === null ? "" : `<input type="hidden" name="RelayState" value="${escapeHtml(post.relayState)}">`;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Continue</title><script src="/ui/login/assets/saml-post.js" defer></script></head>
<body><form id="saml-post" method="post" action="${escapeHtml(url)}"><input type="hidden" name="${post.name}" value="${escapeHtml(post.value)}">${relay}
<p>Sending you on…</p><button type="submit">Continue</button></form></body></html>
`;
  res.writeHead(200, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; script-src 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/** /saml/v2/SLO: Single Logout's messages, both bindings (src/domain/saml/logout.ts). */
async function slo(idp: SamlIdp, req: Req, res: Res): Promise<void> {
  let answer: SloAnswer;
  if (req.method === "POST") {
    const one = await postedForm(req, res, "Sign-out request refused", "post the SAML message as a form");
    if (!one) return;
    answer = await receiveLogout(idp, { binding: "post", samlRequest: one("SAMLRequest"), samlResponse: one("SAMLResponse"), relayState: one("RelayState") });
  } else {
    answer = await receiveLogout(idp, { binding: "redirect", query: queryOf(req) });
  }
  if ("post" in answer) return sendPostForm(res, answer.url, answer.post);
  sendRedirect(res, answer.url);
}

export function samlHandler(idp: SamlIdp, log: Logger): (req: Req, res: Res) => Promise<void> {
  return async (req, res) => {
    const path = pathOf(req.url);
    const method = req.method === "HEAD" ? "GET" : req.method;
    const head = req.method === "HEAD";
    try {
      if (path === "/saml/v2/sso" && (req.method === "GET" || req.method === "POST")) return await sso(idp, req, res);
      if (path === "/saml/v2/slo" && (req.method === "GET" || req.method === "POST")) return await slo(idp, req, res);
      const twoMethods = path === "/saml/v2/sso" || path === "/saml/v2/slo";
      if (method !== "GET" || twoMethods) {
        req.resume();
        res.writeHead(405, { allow: twoMethods ? "GET, POST" : "GET", "content-length": "0" });
        return void res.end();
      }
      if (path === "/saml/v2/metadata") return send(res, "application/samlmetadata+xml; charset=utf-8", await idpMetadata(idp), head);
      return send(res, "application/x-pem-file", await idpCertificatePem(idp), head);
    } catch (err) {
      if (!req.readableEnded) req.resume();
      if (res.headersSent) return void res.destroy();
      const refused = path === "/saml/v2/slo" ? "Sign-out request refused" : "Sign-in request refused";
      if (err instanceof TooLarge) return sendPage(res, 413, refused, "the request is too large or repeats a parameter");
      const domain = asDomainError(err);
      if (domain?.kind === "Unavailable") return sendPage(res, 503, "Sign-in unavailable", "try again in a moment", head);
      if (domain && domain.kind !== "Internal") return sendPage(res, 400, refused, domain.message, head);
      log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error in a SAML endpoint");
      sendPage(res, 500, "Sign-in failed", "internal error", head);
    }
  };
}
