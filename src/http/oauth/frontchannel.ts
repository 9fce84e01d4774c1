// The page of OIDC Front-Channel Logout 1.0: each application's frontchannel_logout_uri in a hidden iframe, then on to
// where the logout continues (the post-logout redirect URI, the hosted login's pages) once every frame has loaded, or
// after FRAME_WAIT_MS at the latest (frontchannel.js; a meta refresh without scripts). The CSP lets frames come from
// those applications' origins only, and the one script from svc's own login assets.
import type { ServerResponse } from "node:http";
import type { Res } from "./errors.js";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The longest the page waits for the frames (seconds; the script's fallback and the meta refresh). */
export const FRAME_WAIT_SECONDS = 5;

export interface FrontchannelPage {
  headers: Record<string, string>;
  body: string;
}

/**
 * The page: `frames` (absolute http(s) URLs, validated when the applications registered them), `next` (absolute; none:
 * the page stays, saying "signed out"), `scriptUrl` the hosted login's frontchannel.js.
 */
export function frontchannelPage(frames: readonly string[], next: string | undefined, scriptUrl: string, text = "Signing out…"): FrontchannelPage {
  const origins = [...new Set(frames.map((f) => new URL(f).origin))];
  const script = new URL(scriptUrl).origin;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
${next ? `<meta http-equiv="refresh" content="${FRAME_WAIT_SECONDS + 1};url=${escapeHtml(next)}">` : ""}<title>${escapeHtml(text)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}iframe{display:none}</style></head>
<body><main><h1>${escapeHtml(text)}</h1>${next ? `<p><a id="frontchannel-next" href="${escapeHtml(next)}">Continue</a></p>` : ""}
${frames.map((f) => `<iframe class="frontchannel" src="${escapeHtml(f)}" title="logout" sandbox="allow-scripts allow-same-origin"></iframe>`).join("\n")}
</main><script src="${escapeHtml(scriptUrl)}" data-wait="${FRAME_WAIT_SECONDS}"></script></body></html>
`;
  return {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      pragma: "no-cache",
      "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; script-src ${script}; frame-src ${origins.join(" ")}; base-uri 'none'; frame-ancestors 'none'`,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
    body,
  };
}

/** Sends the page (as the end_session endpoint answers). */
export function sendFrontchannelPage(res: Res, page: FrontchannelPage, head: boolean): void {
  res.writeHead(200, { ...page.headers, "content-length": String(Buffer.byteLength(page.body)) });
  if (head) res.end();
  else (res as ServerResponse).end(page.body);
}
