// The one request-body reader of the HTTP adapters (SCIM, OAuth, the REST
// transcoder): a body up to a byte limit, refused before reading when
// Content-Length already says it is larger, cut off while streaming when it
// turns out larger, and never left pending when the client goes away. Each
// adapter brings its own errors (SCIM's 413, OAuth's invalid_request, REST's
// 413 ResourceExhausted).
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

export type BodyRequest = IncomingMessage | Http2ServerRequest;

export interface BodyLimit {
  maxBytes: number;
  /** The adapter's error for a body over maxBytes. */
  tooLarge: () => Error;
  /** The adapter's error for a body that could not be read (the connection failed or closed); the cause by default. */
  unreadable?: (cause: Error) => Error;
  /**
   * Read and discard a body refused by its Content-Length, so that the connection stays usable for the next
   * request (SCIM). Without it the adapter decides what becomes of the unread body.
   */
  drainRefused?: boolean;
}

/** The media type of the request without parameters, lower-cased; "" when none is sent. */
export function mediaType(req: BodyRequest): string {
  return (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/** Reads the whole body, at most `limit.maxBytes`. */
export function readBody(req: BodyRequest, limit: BodyLimit): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > limit.maxBytes) {
    if (limit.drainRefused) req.resume();
    return Promise.reject(limit.tooLarge());
  }
  // A body parser earlier in the chain would leave nothing to read: that is a wiring bug, not an empty request.
  if (req.readableEnded) return Promise.reject(new Error("request body already consumed"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit.maxBytes) chunks.push(chunk);
      else {
        cleanup();
        reject(limit.tooLarge());
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(limit.unreadable ? limit.unreadable(err) : err);
    };
    // A client that goes away mid-body must not leave the promise pending.
    const onClose = () => onError(new Error("connection closed"));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
