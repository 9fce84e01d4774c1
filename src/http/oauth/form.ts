// The one request-body reader of the OAuth endpoints: form-urlencoded, with limits.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { parse as parseQuery } from "node:querystring";
import { invalidRequest } from "../../domain/oauth/errors.js";
import { mediaType, readBody } from "../body.js";

export type Req = IncomingMessage | Http2ServerRequest;

const MAX_FORM_BYTES = 64 * 1024;
const MAX_FORM_PARAMETERS = 50;
const FORM = "application/x-www-form-urlencoded";

export const isForm = (req: Req) => mediaType(req) === FORM;

/** Reads an application/x-www-form-urlencoded body (at most MAX_FORM_BYTES and MAX_FORM_PARAMETERS). */
export async function readForm(req: Req): Promise<Record<string, unknown>> {
  const text = (await readBody(req, { maxBytes: MAX_FORM_BYTES, tooLarge: () => invalidRequest("the form is too large") })).toString("utf8");
  if (text && text.split("&").length > MAX_FORM_PARAMETERS) throw invalidRequest("the form is too large");
  return parseQuery(text) as Record<string, unknown>;
}

/** Form parameters → single-valued parameters (RFC 6749 §3.2: none may repeat). */
export function formOf(body: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(body)) {
    if (typeof v !== "string") throw invalidRequest(`parameter ${k} is repeated`);
    // Empty parameters are treated as omitted (RFC 6749 §3.1).
    if (v !== "") out[k] = v;
  }
  return out;
}

/** A form-posting endpoint's parameters: the media type is checked before the body is read. */
export async function postedForm(req: Req): Promise<Record<string, string | undefined>> {
  if (!isForm(req)) throw invalidRequest("the request must be application/x-www-form-urlencoded");
  return formOf(await readForm(req));
}
