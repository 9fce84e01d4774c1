// The few answers of the browser-facing endpoints (authorize, end_session) that are pages rather than redirects: an
// error that must not go back to an unverified client, and "signed out". Small, self-contained, nothing to load.
import type { ServerResponse } from "node:http";
import type { Res } from "./errors.js";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  pragma: "no-cache",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function sendPage(res: Res, status: number, title: string, message: string, head = false): void {
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></main></body></html>
`;
  res.writeHead(status, { ...HEADERS, "content-length": String(Buffer.byteLength(body)) });
  if (head) res.end();
  else (res as ServerResponse).end(body);
}

/** A 302 to `location` (absolute), never cached: it carries a code, an error or an auth request id. */
export function sendRedirect(res: Res, location: string): void {
  res.writeHead(302, { location, "cache-control": "no-store", pragma: "no-cache", "referrer-policy": "no-referrer", "content-length": "0" });
  res.end();
}
