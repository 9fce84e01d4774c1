// The request-body reader of the HTTP adapters: a body up to a byte limit,
// refused before reading when Content-Length already says it is larger, cut
// off while streaming when it turns out larger. Each adapter brings its own
// error (SCIM's 413, OAuth's invalid_request, REST's 413 ResourceExhausted).
// Used by SCIM; the OAuth adapter and the REST transcoder may adopt it.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

export interface BodyLimit {
  maxBytes: number;
  /** The adapter's error for a body over maxBytes. */
  tooLarge: () => Error;
}

/** The media type of the request without parameters, lower-cased; "" when none is sent. */
export function mediaType(req: IncomingMessage | Http2ServerRequest): string {
  return (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Reads the whole body, at most `limit.maxBytes`. */
export async function readBody(req: IncomingMessage | Http2ServerRequest, limit: BodyLimit): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > limit.maxBytes) {
    // Drained, not parsed: the connection stays usable for the next request.
    req.resume();
    throw limit.tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit.maxBytes) throw limit.tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
