// The SAML identity provider's endpoints: the metadata, the signing certificate and SSO (SP-initiated, HTTP-Redirect
// GET and HTTP-POST). Served on Node's request and response like the OAuth endpoints. A refused AuthnRequest is a 4xx
// page for the person at the browser, never an answer to a URL the request named.
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import { asDomainError } from "../../domain/errors.js";
import { receiveAuthnRequest } from "../../domain/saml/authn-request.js";
import { idpCertificatePem, idpMetadata } from "../../domain/saml/idp-metadata.js";
import type { SamlIdp } from "../../domain/saml/runtime.js";
import { mediaType, readBody } from "../body.js";
import type { Res } from "../oauth/errors.js";
import type { Req } from "../oauth/form.js";
import { sendPage, sendRedirect } from "../oauth/pages.js";

const PATHS = new Set(["/saml/v2/metadata", "/saml/v2/certificate", "/saml/v2/sso"]);
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

async function sso(idp: SamlIdp, req: Req, res: Res): Promise<void> {
  let location: string;
  if (req.method === "POST") {
    if (mediaType(req) !== "application/x-www-form-urlencoded") return sendPage(res, 415, "Sign-in request refused", "post the SAMLRequest as a form");
    const body = (await readBody(req, { maxBytes: MAX_FORM_BYTES, tooLarge: () => new TooLarge() })).toString("latin1");
    const form = parseQuery(body, "&", "=", { maxKeys: 20 });
    const one = (k: string) => {
      const v = form[k];
      if (Array.isArray(v)) throw new TooLarge();
      return v;
    };
    location = await receiveAuthnRequest(idp, { binding: "post", samlRequest: one("SAMLRequest"), relayState: one("RelayState") }, idp.clock());
  } else {
    const q = req.url?.indexOf("?") ?? -1;
    location = await receiveAuthnRequest(idp, { binding: "redirect", query: q < 0 ? "" : (req.url as string).slice(q + 1) }, idp.clock());
  }
  sendRedirect(res, location);
}

export function samlHandler(idp: SamlIdp, log: Logger): (req: Req, res: Res) => Promise<void> {
  return async (req, res) => {
    const path = pathOf(req.url);
    const method = req.method === "HEAD" ? "GET" : req.method;
    const head = req.method === "HEAD";
    try {
      if (path === "/saml/v2/sso" && (req.method === "GET" || req.method === "POST")) return await sso(idp, req, res);
      if (method !== "GET" || path === "/saml/v2/sso") {
        req.resume();
        res.writeHead(405, { allow: path === "/saml/v2/sso" ? "GET, POST" : "GET", "content-length": "0" });
        return void res.end();
      }
      if (path === "/saml/v2/metadata") return send(res, "application/samlmetadata+xml; charset=utf-8", await idpMetadata(idp), head);
      return send(res, "application/x-pem-file", await idpCertificatePem(idp), head);
    } catch (err) {
      if (!req.readableEnded) req.resume();
      if (res.headersSent) return void res.destroy();
      if (err instanceof TooLarge) return sendPage(res, 413, "Sign-in request refused", "the request is too large or repeats a parameter");
      const domain = asDomainError(err);
      if (domain?.kind === "Unavailable") return sendPage(res, 503, "Sign-in unavailable", "try again in a moment", head);
      if (domain && domain.kind !== "Internal") return sendPage(res, 400, "Sign-in request refused", domain.message, head);
      log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error in a SAML endpoint");
      sendPage(res, 500, "Sign-in failed", "internal error", head);
    }
  };
}
