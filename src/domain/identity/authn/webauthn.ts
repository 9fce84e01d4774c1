// The WebAuthn relying party of svc: which domain a ceremony is bound to and which origins may answer it. The domain
// (rpId) is the one the login or registration page runs on, the host of SVC_EXTERNAL_URL when none is given. A
// browser answers with the page's origin: https://<domain>; the external URL's own origin when its host is the
// domain (a port of its own, or http in development); and for localhost or 127.0.0.1, plain http with the external
// URL's port, since browsers treat those as secure contexts. Anything else (another host, port or scheme) is refused.
import { invalidArgument } from "../../errors.js";

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const LOOPBACK = new Set(["localhost", "127.0.0.1"]);

/** The relying party id of a ceremony: `domain` (a host name, lower-cased), else the external URL's host. */
export function relyingPartyId(domain: string, externalUrl: string): string {
  const d = domain.trim().toLowerCase();
  if (!d) return new URL(externalUrl).hostname;
  if (!HOSTNAME.test(d) && d !== "127.0.0.1") {
    throw invalidArgument("Errors.User.Passkey.DomainInvalid", "domain must be a host name such as login.example.com (no scheme, port or path)", {
      field: "domain",
    });
  }
  return d;
}

/** The origins a ceremony for `rpId` accepts. */
export function expectedOrigins(rpId: string, externalUrl: string): string[] {
  const external = new URL(externalUrl);
  const origins = new Set([`https://${rpId}`]);
  if (external.hostname === rpId) origins.add(external.origin);
  if (LOOPBACK.has(rpId)) origins.add(`http://${rpId}${external.port ? `:${external.port}` : ""}`);
  return [...origins];
}

/** A JSON value as plain JSON (no undefined members), as a google.protobuf.Struct carries it. */
export function plainJson<T>(value: T): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}
