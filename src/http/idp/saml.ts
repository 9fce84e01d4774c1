// svc as the service provider of SAML identity providers: GET /idps/{idpId}/saml/metadata (svc's SP metadata for that
// provider, also its entity id there) and POST /idps/{idpId}/saml/acs (the HTTP-POST binding's Response). Parses the
// request within limits and lets the domain answer; the ACS ends in a 303 to the login client or an error page.
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import { asDomainError } from "../../domain/errors.js";
import type { CallbackCtx } from "../../domain/idp/callback.js";
import { finishSamlIntent } from "../../domain/idp/saml-acs.js";
import { RESPONSE_LIMITS } from "../../domain/idp/saml-response.js";
import { spMetadataOf } from "../../domain/idp/saml-sp.js";
import { mediaType, readBody } from "../body.js";
import type { Res } from "../oauth/errors.js";
import type { Req } from "../oauth/form.js";
import { sendPage } from "../oauth/pages.js";

const PATH = /^\/idps\/([A-Za-z0-9_-]{1,64})\/saml\/(metadata|acs)$/;
/** The form: a SAMLResponse of at most RESPONSE_LIMITS.xml bytes in base64, URL-encoded, and a RelayState. */
const MAX_FORM_BYTES = Math.ceil((RESPONSE_LIMITS.xml * 4) / 3) * 3 + 4096;

function match(url: string | undefined): { idpId: string; endpoint: string } | undefined {
  if (!url) return undefined;
  const q = url.indexOf("?");
  const m = PATH.exec(q < 0 ? url : url.slice(0, q));
  return m ? { idpId: m[1] as string, endpoint: m[2] as string } : undefined;
}

export const isIdpSamlPath = (url: string | undefined) => match(url) !== undefined;

class TooLarge extends Error {}

async function metadata(ctx: CallbackCtx, idpId: string, res: Res, head: boolean): Promise<void> {
  const xml = await spMetadataOf(ctx, idpId);
  res.writeHead(200, {
    "content-type": "application/samlmetadata+xml; charset=utf-8",
    "cache-control": "public, max-age=300",
    "content-length": String(Buffer.byteLength(xml)),
  });
  if (head) res.end();
  else res.end(xml);
}

async function acs(ctx: CallbackCtx, idpId: string, req: Req, res: Res): Promise<void> {
  if (mediaType(req) !== "application/x-www-form-urlencoded") {
    req.resume();
    return sendPage(res, 415, "Sign-in failed", "The identity provider's answer must be a posted form (HTTP-POST binding).");
  }
  const body = (await readBody(req, { maxBytes: MAX_FORM_BYTES, tooLarge: () => new TooLarge() })).toString("latin1");
  const form = parseQuery(body, "&", "=", { maxKeys: 20 });
  const one = (k: string) => {
    const v = form[k];
    if (Array.isArray(v)) throw new TooLarge();
    return v;
  };
  const answer = await finishSamlIntent(ctx, idpId, { samlResponse: one("SAMLResponse"), relayState: one("RelayState") }, RESPONSE_LIMITS.xml);
  if ("page" in answer) return sendPage(res, answer.page.status, answer.page.title, answer.page.message);
  // 303: the browser follows a posted form's answer with a GET.
  res.writeHead(303, { location: answer.redirect, "cache-control": "no-store", "referrer-policy": "no-referrer", "content-length": "0" });
  res.end();
}

export function idpSamlHandler(ctx: (req: Req) => CallbackCtx, log: Logger): (req: Req, res: Res) => Promise<void> {
  return async (req, res) => {
    const m = match(req.url) as { idpId: string; endpoint: string };
    const method = req.method === "HEAD" ? "GET" : req.method;
    const allowed = m.endpoint === "acs" ? "POST" : "GET";
    try {
      if (method !== allowed) {
        req.resume();
        res.writeHead(405, { allow: m.endpoint === "acs" ? "POST" : "GET, HEAD", "content-length": "0" });
        return void res.end();
      }
      if (m.endpoint === "metadata") {
        req.resume();
        return await metadata(ctx(req), m.idpId, res, req.method === "HEAD");
      }
      await acs(ctx(req), m.idpId, req, res);
    } catch (err) {
      if (!req.readableEnded) req.resume();
      if (res.headersSent) return void res.destroy();
      if (err instanceof TooLarge) return sendPage(res, 413, "Sign-in failed", "The identity provider's answer is too large or repeats a field.");
      const domain = asDomainError(err);
      if (domain && domain.kind !== "Internal") return sendPage(res, domain.kind === "NotFound" ? 404 : 400, "Sign-in failed", domain.message);
      log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error at a SAML provider's endpoint");
      sendPage(res, 500, "Sign-in failed", "Something went wrong finishing the sign-in. Try again later.");
    }
  };
}
