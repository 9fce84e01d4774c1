// The login pages' static files (read once at start, served from memory with a content hash in the ETag) and the
// per-organization theme: the branding's colours as CSS custom properties, so pages carry no inline style.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Request, Response } from "express";
import { effectiveSetting } from "../../domain/settings/settings.js";
import { type Branding, DEFAULT_SETTINGS } from "../../domain/settings/values.js";
import { type LoginDeps, loginCtx } from "./context.js";

const require = createRequire(import.meta.url);
const local = (name: string) => new URL(`./assets/${name}`, import.meta.url);

const FILES: Record<string, { path: URL | string; type: string }> = {
  "login.css": { path: local("login.css"), type: "text/css; charset=utf-8" },
  "webauthn.js": { path: local("webauthn.js"), type: "text/javascript; charset=utf-8" },
  "password-rules.js": { path: local("password-rules.js"), type: "text/javascript; charset=utf-8" },
  "saml-post.js": { path: local("saml-post.js"), type: "text/javascript; charset=utf-8" },
  "frontchannel.js": { path: local("frontchannel.js"), type: "text/javascript; charset=utf-8" },
  "simplewebauthn-browser.js": {
    // The package exports no subpath: its bundle is found beside the entry point it does export.
    path: path.join(path.dirname(require.resolve("@simplewebauthn/browser")), "..", "dist", "bundle", "index.umd.min.js"),
    type: "text/javascript; charset=utf-8",
  },
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const loaded = new Map<string, Asset>();

function asset(name: string): Asset | undefined {
  const hit = loaded.get(name);
  if (hit) return hit;
  const f = FILES[name];
  if (!f) return undefined;
  let body: Buffer;
  try {
    body = readFileSync(f.path);
  } catch {
    return undefined;
  }
  const a = { body, type: f.type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
  loaded.set(name, a);
  return a;
}

export function assets(req: Request, res: Response): void {
  const a = asset(String(req.params.name));
  if (!a) {
    res.status(404).set({ "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" }).send("not found");
    return;
  }
  res.set({ "content-type": a.type, "cache-control": "public, max-age=3600", etag: a.etag, "x-content-type-options": "nosniff" });
  if (req.headers["if-none-match"] === a.etag) {
    res.status(304).end();
    return;
  }
  res.send(a.body);
}

const ORG = /^[A-Za-z0-9_.@-]{1,200}$/;
const COLOR = /^#[0-9a-fA-F]{6}$/;
const safeColor = (c: string, fallback: string) => (COLOR.test(c) ? c : fallback);

function palette(primary: string, background: string, warn: string, font: string): string {
  return `--primary:${primary};--background:${background};--warn:${warn};--font:${font}`;
}

/** The branding as CSS: the light palette, the dark one, and which applies (the browser's choice under "auto"). */
export function themeOf(b: Branding): string {
  const light = palette(
    safeColor(b.primaryColor, "#2f6feb"),
    safeColor(b.backgroundColor, "#ffffff"),
    safeColor(b.warnColor, "#d93025"),
    safeColor(b.fontColor, "#1f2328"),
  );
  const dark = palette(
    safeColor(b.darkPrimaryColor, "#6ea8fe"),
    safeColor(b.darkBackgroundColor, "#0d1117"),
    safeColor(b.darkWarnColor, "#ff7b72"),
    safeColor(b.darkFontColor, "#e6edf3"),
  );
  if (b.themeMode === "light") return `:root{${light};color-scheme:light}\n`;
  if (b.themeMode === "dark") return `:root{${dark};color-scheme:dark}\n`;
  return `:root{${light};color-scheme:light dark}\n@media (prefers-color-scheme: dark){:root{${dark}}}\n`;
}

/** theme.css?org=<id>: the organization's branding (the instance's when it has none or is unknown). */
export function themeCss(deps: LoginDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    const org = typeof req.query.org === "string" && ORG.test(req.query.org) ? req.query.org : undefined;
    const ctx = loginCtx(deps, req);
    const b = await effectiveSetting(ctx, "branding", org)
      .catch(() => effectiveSetting(ctx, "branding", undefined))
      .catch(() => ({ ...DEFAULT_SETTINGS.branding }));
    res.set({ "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=60", "x-content-type-options": "nosniff" }).send(themeOf(b));
  };
}
