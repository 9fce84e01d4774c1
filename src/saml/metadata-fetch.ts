// Fetching a SAML SP's metadata by URL, once, when an application is registered with metadataUrl. The URL comes from
// an API caller, so the fetch is a server-side request on their behalf (SSRF): by default only https, only to public
// addresses (checked on the address the connection is actually made to, after DNS, so a name that resolves to a
// private address, or rebinds to one, is refused), no redirects followed, 5 seconds in all, and the body cut off past
// the limit while it streams (never buffered whole). SVC_SAML_METADATA_ALLOW_PRIVATE=true lifts the address and
// scheme rules for SPs on an internal network (and for tests on loopback).
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { invalidArgument } from "../domain/errors.js";
import type { SamlMetadataFetcher } from "../domain/saml/ports.js";

const TIMEOUT_MS = 5_000;

const refused = (message: string) => invalidArgument("Errors.App.Saml.MetadataUrl", `saml.metadata_url: ${message}`, { field: "saml.metadata_url" });

/** Addresses that are not the public internet: loopback, private, shared, link-local, multicast, reserved, and the like. */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, "ipv4");
}
// IPv4-mapped addresses (::ffff:a.b.c.d) are checked against the IPv4 rules by BlockList itself.
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, "ipv6");
}

/** Whether an IP address (v4 or v6 text) is on the public internet. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? "ipv4" : "ipv6");
}

/**
 * A lookup that answers only public addresses: the socket connects to what this returns, so nothing can slip in (the
 * action targets' calls use it too). Names under .localhost are loopback by definition (RFC 6761), whatever DNS says.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  if (/(^|\.)localhost\.?$/i.test(hostname)) {
    return callback(Object.assign(new Error(`${hostname} is a loopback name`), { code: "SVC_PRIVATE_ADDRESS" }), "", 0);
  }
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, "", 0);
    const usable = addresses.filter((a) => isPublicAddress(a.address));
    if (usable.length === 0) {
      const e = Object.assign(new Error(`${hostname} resolves to no public address`), { code: "SVC_PRIVATE_ADDRESS" });
      return callback(e, "", 0);
    }
    if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
    const first = usable[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
};

export interface MetadataFetchOptions {
  /** SVC_SAML_METADATA_ALLOW_PRIVATE: plain http and private, loopback and link-local targets are allowed. */
  allowPrivate: boolean;
  timeoutMs?: number;
}

function checkedTarget(raw: string, allowPrivate: boolean): URL {
  const url = new URL(raw);
  if (url.protocol !== "https:" && !(allowPrivate && url.protocol === "http:")) {
    throw refused("must be an https URL (http only with SVC_SAML_METADATA_ALLOW_PRIVATE=true)");
  }
  if (url.username || url.password) throw refused("must not carry credentials");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // Names are checked on what they resolve to, when the connection is made (publicOnlyLookup); literals here.
  if (!allowPrivate && isIP(host) !== 0 && !isPublicAddress(host)) {
    throw refused("points to a private, loopback or link-local address (allowed only with SVC_SAML_METADATA_ALLOW_PRIVATE=true)");
  }
  return url;
}

/** GETs `url` and reads at most `maxBytes` of a 200 answer within `timeoutMs`, in all. */
function get(url: URL, maxBytes: number, o: MetadataFetchOptions): Promise<Buffer> {
  const timeoutMs = o.timeoutMs ?? TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    const req = client.get(url, {
      headers: { accept: "application/samlmetadata+xml, application/xml" },
      lookup: o.allowPrivate ? undefined : publicOnlyLookup,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const fail = (err: Error) => {
      req.destroy();
      reject(err);
    };
    req.on("error", (err: Error & { code?: string }) => {
      if (err.code === "SVC_PRIVATE_ADDRESS") return reject(refused(`${err.message} (allowed only with SVC_SAML_METADATA_ALLOW_PRIVATE=true)`));
      if (err.name === "AbortError") return reject(refused(`could not be fetched within ${timeoutMs / 1000} seconds`));
      reject(refused("could not be fetched (unreachable, or the connection failed)"));
    });
    req.on("response", (res: IncomingMessage) => {
      if (res.statusCode !== 200)
        return fail(refused(`answered ${res.statusCode}${res.statusCode && res.statusCode < 400 ? " (redirects are not followed)" : ""}`));
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) return fail(refused(`is larger than ${maxBytes} bytes`));
        chunks.push(chunk);
      });
      res.on("error", () => fail(refused(`could not be read within ${timeoutMs / 1000} seconds`)));
      res.on("end", () => resolve(Buffer.concat(chunks)));
    });
  });
}

export function httpMetadataFetcher(o: MetadataFetchOptions): SamlMetadataFetcher {
  return async (raw, maxBytes) => get(checkedTarget(raw, o.allowPrivate), maxBytes, o);
}
