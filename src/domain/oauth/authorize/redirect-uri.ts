// Redirect URI matching (RFC 6749 §3.1.2.3, OAuth 2.0 Security BCP §4.1.1): the requested URI must be one of the
// registered ones, character for character. No prefix, pattern or normalised comparison: "https://app/cb/" is not
// "https://app/cb", nor is "https://APP/cb". The one exception is RFC 8252 §7.3: a native app's loopback IP redirect
// URI matches on any port, because the app listens on whichever port the operating system gives it.
import type { OidcAppType } from "../../access/app-settings.js";

/** http, a loopback IP literal, an optional port, and the rest (path and query) exactly as written. */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/;

function loopbackParts(uri: string): { host: string; rest: string } | undefined {
  const m = LOOPBACK.exec(uri);
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535 || m[2]?.startsWith("0"))) return undefined;
  return { host: m[1] as string, rest: m[3] ?? "" };
}

/** Whether `requested` is a redirect URI registered for the app (`registered`). */
export function matchesRedirectUri(registered: readonly string[], requested: string, appType: OidcAppType): boolean {
  if (registered.includes(requested)) return true;
  if (appType !== "native") return false;
  const asked = loopbackParts(requested);
  if (!asked) return false;
  return registered.some((r) => {
    const reg = loopbackParts(r);
    return reg !== undefined && reg.host === asked.host && reg.rest === asked.rest;
  });
}
