// The hosted login (/ui/login): an Express 5 router over the domain functions behind SessionService, OIDCService,
// UserService and SettingsService. Every page runs through page(): the browser's state, CSRF on every form post, and
// one error answer (the error page, never a stack trace or a 5xx for what a browser can send).
import type { NextFunction, Request, Response } from "express";
import express from "express";
import { asDomainError, DomainError } from "../../domain/errors.js";
import { assets, themeCss } from "./assets.js";
import type { LoginDeps } from "./context.js";
import { validCsrf } from "./cookie.js";
import { html } from "./html.js";
import { LOGIN_BASE, LoginRequest, PAGE_HEADERS } from "./page.js";
import { accountPages } from "./pages/account.js";
import { consentPages } from "./pages/consent.js";
import { devicePages } from "./pages/device.js";
import { externalPages } from "./pages/external.js";
import { factorPages } from "./pages/factors.js";
import { logoutPages } from "./pages/logout.js";
import { mfaSetupPages } from "./pages/mfa-setup.js";
import { selfServicePages } from "./pages/self-service.js";
import { signInPages } from "./pages/sign-in.js";

export { LoginRequest } from "./page.js";

/** Whether a request is for the hosted login. */
export function isLoginPath(url: string | undefined): boolean {
  return url !== undefined && (url === LOGIN_BASE || url.startsWith(`${LOGIN_BASE}/`) || url.startsWith(`${LOGIN_BASE}?`));
}

export type PageHandler = (r: LoginRequest) => Promise<void>;

/** A page's handler with the browser's state, the CSRF check of form posts, and the error page for domain errors. */
export function page(deps: LoginDeps, handler: PageHandler) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const r = new LoginRequest(deps, req, res);
    try {
      if (req.method === "POST" && !validCsrf(deps.cookies.read(req.headers.cookie), (req.body as Record<string, unknown> | undefined)?._csrf)) {
        throw new DomainError("PermissionDenied", "Errors.Login.Csrf", "the form's CSRF token is missing or not this browser's");
      }
      await handler(r);
    } catch (err) {
      if (!asDomainError(err)) return next(err);
      try {
        await r.error(err);
      } catch (again) {
        next(again);
      }
    }
  };
}

const MAX_FORM_BYTES = 64 * 1024;

export function loginRouter(deps: LoginDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.set("query parser", "simple");
  app.get(`${LOGIN_BASE}/assets/:name`, assets);
  app.get(`${LOGIN_BASE}/theme.css`, themeCss(deps));
  app.get(LOGIN_BASE, (_req, res) => {
    res.redirect(302, `${deps.externalUrl}${LOGIN_BASE}/login`);
  });
  app.post(`${LOGIN_BASE}/*path`, express.urlencoded({ extended: false, limit: MAX_FORM_BYTES, parameterLimit: 100, type: () => true }));
  signInPages(app, deps);
  factorPages(app, deps);
  logoutPages(app, deps);
  externalPages(app, deps);
  mfaSetupPages(app, deps);
  accountPages(app, deps);
  consentPages(app, deps);
  devicePages(app, deps);
  selfServicePages(app, deps);
  app.use(
    page(deps, async (r) => {
      await r.error(new DomainError("NotFound", "Errors.Login.PageNotFound", "no such page"));
    }),
  );
  // What the body parser refuses (too large, malformed, a charset it does not know) is the browser's fault: a 400
  // page. Anything else is ours: logged, and a page that says so without internals.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: number }).status;
    if (typeof status === "number" && status >= 400 && status < 500) {
      const r = new LoginRequest(deps, req, res);
      void r.error(new DomainError("InvalidArgument", "Errors.Login.BadForm", "the form could not be read")).catch(() => res.status(400).end());
      return;
    }
    deps.log.error({ err, requestId: req.headers["x-request-id"] }, "unexpected error in the hosted login");
    if (res.headersSent) return;
    // The generic error page in the browser's language; the bare status if even that cannot be rendered.
    const r = new LoginRequest(deps, req, res);
    r.render((p) => ({ title: p.t("error.generic.title"), body: html`<p>${p.t("error.generic.text")}</p>` }), 500).catch(() => {
      if (!res.headersSent) res.status(500).set(PAGE_HEADERS).end();
    });
  });
  return app;
}
