// One signed POST to an action target, for the functions' calls and the events' deliveries alike. The endpoint comes
// from an API caller, so the request is made on their behalf (SSRF): unless SVC_ACTIONS_ALLOW_PRIVATE=true, the address
// connected to must be a public one, checked after DNS on the address the socket actually opens (the SAML metadata
// fetch's lookup), so a name that resolves, or rebinds, to a private, loopback or link-local address is refused; an IP
// literal is checked before anything is sent. No redirect is followed; the answer is read up to a limit while it
// streams, within the target's timeout in all. Connections are kept alive per protocol (deliveries come in bursts).
import { createHmac } from "node:crypto";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { isPublicAddress, publicOnlyLookup } from "../saml/metadata-fetch.js";

/** The Svc-Signature header of `body` at `t` (unix seconds) under `key`. */
export function signatureHeader(key: Buffer, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", key).update(`${t}.${body}`).digest("hex")}`;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** SVC_ACTIONS_ALLOW_PRIVATE: private, loopback and link-local addresses may be called. */
  allowPrivate: boolean;
  /** The answer's body is read up to this many bytes (more: the call failed); 0: the body is not read. */
  maxAnswerBytes: number;
}

export interface PostAnswer {
  status: number;
  body: Buffer;
}

/** Why a call failed, for the log and the delivery's last error; `timeout` when the target did not answer in time. */
export class CallFailure extends Error {
  constructor(
    message: string,
    readonly timeout = false,
  ) {
    super(message);
  }
}

// Kept-alive sockets are reused by host and port alone: those opened with SVC_ACTIONS_ALLOW_PRIVATE (tests run servers
// with and without it in one process) are never handed to a request made without it.
const agents = new Map<string, http.Agent>();
function agentFor(protocol: "http:" | "https:", allowPrivate: boolean): http.Agent {
  const key = `${protocol}${allowPrivate}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = protocol === "https:" ? new https.Agent({ keepAlive: true, maxSockets: 256 }) : new http.Agent({ keepAlive: true, maxSockets: 256 });
    agents.set(key, agent);
  }
  return agent;
}

function refusedLiteral(url: URL, allowPrivate: boolean): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return !allowPrivate && isIP(host) !== 0 && !isPublicAddress(host);
}

/** POSTs to `endpoint`; resolves with the status and (up to the limit) the body, rejects with a CallFailure. */
export function postToTarget(endpoint: string, o: PostOptions): Promise<PostAnswer> {
  const url = new URL(endpoint);
  if (url.protocol !== "https:" && url.protocol !== "http:") return Promise.reject(new CallFailure("not an http(s) endpoint"));
  if (refusedLiteral(url, o.allowPrivate)) {
    return Promise.reject(new CallFailure(`${url.hostname} is a private, loopback or link-local address (allowed only with SVC_ACTIONS_ALLOW_PRIVATE=true)`));
  }
  return new Promise((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const req = client.request(url, {
      method: "POST",
      headers: { ...o.headers, "content-length": String(Buffer.byteLength(o.body)) },
      agent: agentFor(url.protocol as "http:" | "https:", o.allowPrivate),
      ...(o.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    });
    const timer = setTimeout(() => fail(new CallFailure(`no answer within ${o.timeoutMs} ms`, true)), o.timeoutMs);
    let settled = false;
    const fail = (err: CallFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const done = (answer: PostAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    req.on("error", (err: Error & { code?: string }) => {
      if (err.code === "SVC_PRIVATE_ADDRESS") return fail(new CallFailure(`${err.message} (allowed only with SVC_ACTIONS_ALLOW_PRIVATE=true)`));
      fail(new CallFailure(err.message || err.code || "the connection failed"));
    });
    req.on("response", (res: IncomingMessage) => readBody(res, o.maxAnswerBytes, done, fail));
    req.end(o.body);
  });
}

function readBody(res: IncomingMessage, max: number, done: (a: PostAnswer) => void, fail: (e: CallFailure) => void): void {
  const status = res.statusCode ?? 0;
  if (max === 0) {
    res.resume();
    res.on("end", () => done({ status, body: Buffer.alloc(0) }));
    res.on("error", () => fail(new CallFailure("the answer could not be read")));
    return;
  }
  if (Number(res.headers["content-length"] ?? 0) > max) {
    fail(new CallFailure("answer too large"));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size > max) fail(new CallFailure("answer too large"));
    else chunks.push(chunk);
  });
  res.on("error", () => fail(new CallFailure("the answer could not be read")));
  res.on("end", () => done({ status, body: Buffer.concat(chunks) }));
}
