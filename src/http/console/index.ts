// The admin console (console/, built by scripts/build.mjs into dist/console): static files under /ui/console, the
// index page for every client route, and `/` sent there. The hashed assets are cached for a year; the index page
// (it names the current build's assets and carries the console's OIDC client) is revalidated every time. The
// content security policy allows no script or connection beyond svc's own origin.
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import express from "express";

export const CONSOLE_BASE = "/ui/console";
/** Where scripts/build.mjs puts the console's bundle. */
export const CONSOLE_DIST = path.resolve(import.meta.dirname, "../../../dist/console");

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Mantine sets CSS variables in style attributes and one <style> element of its own.
  "style-src 'self' 'unsafe-inline'",
  // Branding logos (https) in the preview of the hosted login.
  "img-src 'self' data: https:",
  "font-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join("; ");

export interface ConsoleOptions {
  /** The console's OIDC client (src/domain/orgs/bootstrap.ts); undefined when the instance has none. */
  clientId: string | undefined;
  issuer: string;
  distDir?: string;
}

export function isConsolePath(url: string | undefined): boolean {
  const p = url?.split("?", 1)[0];
  return p === "/" || p === CONSOLE_BASE || p?.startsWith(`${CONSOLE_BASE}/`) === true;
}

const escapeAttribute = (s: string) => s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** The index page with the console's settings in a meta element (read by console/src/config.ts; no inline script). */
function indexPage(distDir: string, o: ConsoleOptions): string {
  const file = path.join(distDir, "index.html");
  const settings = JSON.stringify({ clientId: o.clientId ?? "", issuer: o.issuer, base: CONSOLE_BASE });
  return readFileSync(file, "utf8").replace("<!--svc-console-settings-->", `<meta name="svc-console" content="${escapeAttribute(settings)}">`);
}

function secure(res: express.Response): void {
  res.set({
    "content-security-policy": CONSOLE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  });
}

export function consoleRouter(o: ConsoleOptions): express.Express {
  const distDir = o.distDir ?? CONSOLE_DIST;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.get("/", (_req, res) => {
    res.redirect(302, `${CONSOLE_BASE}/`);
  });
  app.get(CONSOLE_BASE, (req, res, next) => {
    // Express matches "/ui/console/" here too (routing is not strict).
    if (req.originalUrl.split("?", 1)[0] !== CONSOLE_BASE) return next();
    res.redirect(301, `${CONSOLE_BASE}/`);
  });
  // Content-hashed file names: a new build has new names.
  app.use(
    `${CONSOLE_BASE}/assets`,
    express.static(path.join(distDir, "assets"), { immutable: true, maxAge: "365d", index: false, redirect: false, fallthrough: false }),
  );
  // Read again when a build replaced it (the server may outlive a `npm run build`).
  let cached: { mtimeMs: number; page: string } | undefined;
  const page = () => {
    const mtimeMs = statSync(path.join(distDir, "index.html"), { throwIfNoEntry: false })?.mtimeMs;
    if (mtimeMs === undefined) return undefined;
    if (cached?.mtimeMs !== mtimeMs) cached = { mtimeMs, page: indexPage(distDir, o) };
    return cached.page;
  };
  app.use(CONSOLE_BASE, (req, res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    // Files beside the index page (the icon) may change between builds without a new name.
    if (/^\/[\w-]+\.(svg|png|ico|txt)$/.test(req.path)) {
      res.set("cache-control", "public, max-age=3600");
      return res.sendFile(path.join(distDir, req.path), (err) => {
        if (err && !res.headersSent) res.status(404).type("text/plain").send("not found");
      });
    }
    const html = page();
    secure(res);
    res.set("cache-control", "no-cache");
    if (html === undefined) {
      res.status(503).type("text/plain; charset=utf-8").send("The console is not built: run `npm run build` (or `npm install`).");
      return;
    }
    res.type("html").send(html);
  });
  app.use((_req, res) => {
    res.status(404).json({ code: 5, message: "not found", details: [] });
  });
  return app;
}

/** What the readiness log line adds: where the console is and whom to sign in as, and the API reference. */
export function consoleAnnouncement(externalUrl: string, client: { clientId: string; adminLoginName?: string } | undefined): string {
  const base = externalUrl.replace(/\/+$/, "");
  const docs = `; API reference at ${base}/docs`;
  if (!client) return docs;
  const who = client.adminLoginName ? ` (sign in as ${client.adminLoginName})` : "";
  return `; admin console at ${base}${CONSOLE_BASE}/${who}${docs}`;
}
