// One request of the hosted login: this browser's state (the sealed cookie), the language, the organization whose
// branding applies, the auth request it serves (if any), and how to answer (a page, a redirect, the error page).
import type { Request, Response } from "express";
import type { Ctx } from "../../domain/context.js";
import { asDomainError, DomainError } from "../../domain/errors.js";
import { rateLimited } from "../../domain/limits.js";
import { type AuthRequestView, getAuthRequest } from "../../domain/oauth/authorize/login-ui.js";
import { getInstance } from "../../domain/orgs/instance.js";
import { getSamlRequest, type SamlRequestView } from "../../domain/saml/login-ui.js";
import type { ChallengeAnswers, UserAgent } from "../../domain/sessions/model.js";
import { getSession } from "../../domain/sessions/reads.js";
import { effectiveSetting } from "../../domain/settings/settings.js";
import { type Branding, DEFAULT_SETTINGS, type Login } from "../../domain/settings/values.js";
import { type LoginDeps, loginCtx } from "./context.js";
import { type BrowserSession, type BrowserState, csrfToken, freshState, withoutSession } from "./cookie.js";
import { html } from "./html.js";
import { type Language, matchLanguage, translator } from "./i18n.js";
import { type PageContext, type PageOptions, renderPage } from "./layout.js";

export const LOGIN_BASE = "/ui/login";
const ORG_SCOPE = "urn:svc:iam:org:id:";
const ID = /^[A-Za-z0-9_.@-]{1,200}$/;

export const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  pragma: "no-cache",
  // Scripts and styles from svc only, never inline; images also from the branding's logo URL (https).
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
};

/** Branding changes rarely and is only shown: read at most every few seconds per organization. */
const BRANDING_TTL_MS = 5_000;
const brandingCache = new Map<string, { at: number; value: Branding }>();

async function branding(ctx: Ctx, orgId: string | undefined): Promise<Branding> {
  const key = orgId ?? "";
  const hit = brandingCache.get(key);
  const now = Date.now();
  if (hit && now - hit.at < BRANDING_TTL_MS) return hit.value;
  const value = await effectiveSetting(ctx, "branding", orgId);
  if (brandingCache.size > 10_000) brandingCache.clear();
  brandingCache.set(key, { at: now, value });
  return value;
}

/** The instance's default organization changes rarely: read at most every few seconds. */
let defaultOrg: { at: number; id: string | undefined } | undefined;

async function defaultOrgId(ctx: Ctx): Promise<string | undefined> {
  if (defaultOrg && Date.now() - defaultOrg.at < BRANDING_TTL_MS) return defaultOrg.id;
  const id = (await getInstance(ctx)).defaultOrgId ?? undefined;
  defaultOrg = { at: Date.now(), id };
  return id;
}

export class LoginRequest {
  readonly ctx: Ctx;
  state: BrowserState;
  private dirty: boolean;
  lang: Language;
  /** Whether ui_locales or Accept-Language chose lang; if not, the default language of the settings applies. */
  private langChosen: boolean;
  orgId: string | undefined;
  authRequest: AuthRequestView | undefined;
  /** The SAML request the sign-in answers instead (the query's samlRequest). */
  samlRequest: SamlRequestView | undefined;
  login: Login | undefined;
  /** The challenges the last SetSession of this request answered (the WebAuthn options). */
  lastChallenges: ChallengeAnswers | undefined;

  constructor(
    readonly deps: LoginDeps,
    readonly req: Request,
    readonly res: Response,
  ) {
    // The mails this request triggers speak the page's language (the auth request's ui_locales once it is loaded) when
    // the browser chose one; else the user's organization's default language (codeMail).
    this.ctx = { ...loginCtx(deps, req), uiLanguage: () => (this.langChosen ? this.lang : undefined) };
    const existing = deps.cookies.read(req.headers.cookie);
    this.state = existing ?? freshState();
    this.dirty = !existing;
    const chosen = matchLanguage([], req.headers["accept-language"]);
    this.lang = chosen ?? "en";
    this.langChosen = chosen !== undefined;
  }

  /** A parameter of the query (GET) or the form (POST); only single string values count. */
  param(name: string): string | undefined {
    const from = this.req.method === "POST" ? (this.req.body as Record<string, unknown> | undefined) : (this.req.query as Record<string, unknown>);
    const v = from?.[name];
    return typeof v === "string" ? v : undefined;
  }

  /** An id-shaped parameter, or undefined. */
  idParam(name: string): string | undefined {
    const v = this.param(name);
    return v !== undefined && ID.test(v) ? v : undefined;
  }

  /**
   * Loads the auth request named by `authRequest` (when there is one): its languages and organization apply. A SAML
   * request (`samlRequest`) is loaded into samlRequest instead; it has no OIDC prompt or hints, so none is returned.
   */
  async loadAuthRequest(): Promise<AuthRequestView | undefined> {
    const saml = this.param("samlRequest");
    if (saml !== undefined && saml !== "") {
      if (!ID.test(saml)) throw new DomainError("NotFound", "Errors.SamlRequest.NotFound", "no such SAML request");
      this.samlRequest = await getSamlRequest(this.ctx, saml);
      return undefined;
    }
    const id = this.param("authRequest");
    if (id === undefined || id === "") return undefined;
    if (!ID.test(id)) throw new DomainError("NotFound", "Errors.AuthRequest.NotFound", "no such auth request");
    this.authRequest = await getAuthRequest(this.ctx, id);
    const chosen = matchLanguage(this.authRequest.uiLocales, this.req.headers["accept-language"]);
    if (chosen) [this.lang, this.langChosen] = [chosen, true];
    const org = this.authRequest.scopes.find((s) => s.startsWith(ORG_SCOPE));
    if (org) this.orgId = org.slice(ORG_SCOPE.length);
    return this.authRequest;
  }

  /**
   * The organization whose settings (login, branding, providers) apply: the one of the request or the user, else the
   * instance's default organization, where a registration would put the user.
   */
  async settingsOrg(): Promise<string | undefined> {
    return this.orgId ?? (await defaultOrgId(this.ctx));
  }

  /** The login settings of the organization in question (settingsOrg). */
  async loadLoginSettings(): Promise<Login> {
    this.login = await effectiveSetting(this.ctx, "login", await this.settingsOrg());
    return this.login;
  }

  get registrationAllowed(): boolean {
    return this.login?.allowRegister === true;
  }

  /** Whether the browser's session still exists with its token; one that does not is forgotten. */
  async stillValid(s: BrowserSession): Promise<boolean> {
    try {
      await getSession(this.ctx, s.id, s.token);
      return true;
    } catch (err) {
      if (!asDomainError(err)) throw err;
      this.setState(withoutSession(this.state, s.id));
      return false;
    }
  }

  /** The organization of a session's user (its branding applies), from the session. */
  async orgOf(s: BrowserSession): Promise<string | undefined> {
    try {
      return (await getSession(this.ctx, s.id, s.token)).factors.user?.orgId;
    } catch (err) {
      if (!asDomainError(err)) throw err;
      return undefined;
    }
  }

  /** What the browser tells about itself, kept with a new session (shown on the account page). */
  userAgent(): UserAgent {
    const ua = this.req.headers["user-agent"];
    return {
      ip: this.req.ip,
      description: typeof ua === "string" ? ua.slice(0, 200) : undefined,
      header: typeof ua === "string" ? { "user-agent": [ua.slice(0, 500)] } : {},
    };
  }

  /**
   * Counts a request that sends mail or creates an account against the brute-force limits (the browser's address and,
   * given, one more key such as the login name): past them the request is refused (429 page) before anything is done,
   * so the forms cannot be used to flood mailboxes or mass-create accounts.
   */
  async throttle(kind: string, key?: string): Promise<void> {
    const limits = this.ctx.limits;
    if (!limits) return;
    const keys = [...(this.ctx.peer ? [`ip:${this.ctx.peer}`] : []), ...(key ? [`${kind}:${key.toLowerCase()}`] : [])];
    const wait = limits.blockedFor(keys);
    if (wait > 0) throw rateLimited(wait);
    const now = await limits.failed(keys);
    if (now > 0) throw rateLimited(now);
  }

  /** The browser's session named `id` (from the cookie), if this browser holds it. */
  session(id: string | undefined): BrowserSession | undefined {
    return id === undefined ? undefined : this.state.sessions.find((s) => s.id === id);
  }

  setState(state: BrowserState): void {
    this.state = state;
    this.dirty = true;
  }

  get t() {
    return translator(this.lang);
  }

  /** The query every link of the flow carries on. */
  flowQuery(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    return { authRequest: this.authRequest?.id, samlRequest: this.samlRequest?.id, ...extra };
  }

  url(path: string, query: Record<string, string | undefined> = {}): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, v);
    const s = q.toString();
    return `${this.deps.externalUrl}${LOGIN_BASE}${path}${s ? `?${s}` : ""}`;
  }

  async pageContext(): Promise<PageContext> {
    // A page is still shown when the branding cannot be read (an organization that is gone, a database that does not
    // answer: the error page of an outage): the instance's branding, else the built-in one.
    let orgId: string | undefined;
    let orgBranding: Branding;
    try {
      orgId = await this.settingsOrg();
      // The default language is read only for a browser whose languages svc has no texts for.
      const [b, language] = await Promise.all([branding(this.ctx, orgId), this.langChosen ? undefined : effectiveSetting(this.ctx, "language", orgId)]);
      orgBranding = b;
      if (language) this.lang = language.defaultLanguage;
    } catch {
      orgBranding = await branding(this.ctx, undefined).catch(() => ({ ...DEFAULT_SETTINGS.branding }));
    }
    return {
      lang: this.lang,
      t: this.t,
      orgId,
      branding: orgBranding,
      csrf: csrfToken(this.state),
      url: (path, query) => this.url(path, query),
      asset: (name) => `${this.deps.externalUrl}${LOGIN_BASE}/assets/${name}`,
      shown: (loginName) => (orgBranding.hideLoginNameSuffix && loginName.includes("@") ? loginName.slice(0, loginName.lastIndexOf("@")) : loginName),
    };
  }

  private writeCookie(): void {
    if (this.dirty) this.res.append("set-cookie", this.deps.cookies.write(this.state));
    this.dirty = false;
  }

  async render(build: (p: PageContext) => PageOptions, status = 200): Promise<void> {
    const p = await this.pageContext();
    const body = renderPage(p, build(p));
    this.writeCookie();
    this.res.status(status).set(PAGE_HEADERS).send(body);
  }

  /** A page of its own making (its own headers and CSP: the front-channel logout page), with this browser's state. */
  send(headers: Record<string, string>, body: string): void {
    this.writeCookie();
    this.res.status(200).set(headers).send(body);
  }

  /** A 303 (after a form) or 302 to an absolute URL. */
  redirect(location: string): void {
    this.writeCookie();
    this.res
      .status(this.req.method === "POST" ? 303 : 302)
      .set({ location, "cache-control": "no-store", "referrer-policy": "no-referrer" })
      .end();
  }

  /** The error page: what happened and what to do, in the user's words. */
  async error(err: unknown): Promise<void> {
    const d = asDomainError(err);
    if (!d) throw err;
    const { status, key } = describe(d);
    if (status === 503) this.res.set("retry-after", "5");
    if (status === 429 && d.metadata.retryAfter) this.res.set("retry-after", d.metadata.retryAfter);
    const back = this.authRequest || this.samlRequest ? this.url("/login", this.flowQuery()) : undefined;
    await this.render(
      (p) => ({
        title: p.t(`error.${key}.title`),
        body: html`<p>${p.t(`error.${key}.text`)}</p>${back ? html`<p><a class="button secondary" href="${back}">${p.t("error.startAgain")}</a></p>` : ""}`,
      }),
      status,
    );
  }
}

/** The error page's text and status for a domain error. */
function describe(d: DomainError): { status: number; key: string } {
  switch (d.id) {
    case "Errors.AuthRequest.NotFound":
    case "Errors.SamlRequest.NotFound":
      return { status: 404, key: "authRequestNotFound" };
    case "Errors.AuthRequest.Expired":
    case "Errors.SamlRequest.Expired":
      return { status: 410, key: "authRequestExpired" };
    case "Errors.AuthRequest.AlreadyFinished":
    case "Errors.SamlRequest.AlreadyFinished":
      return { status: 409, key: "authRequestFinished" };
    case "Errors.AuthRequest.AccessDenied":
      return { status: 403, key: "accessDenied" };
    case "Errors.User.Locked":
      return { status: 403, key: "userLocked" };
    case "Errors.User.NotActive":
    case "Errors.User.Inactive":
    case "Errors.Org.NotActive":
      return { status: 403, key: "userInactive" };
    case "Errors.Login.Csrf":
      return { status: 403, key: "csrf" };
    case "Errors.Login.BadForm":
      return { status: 400, key: "badForm" };
    case "Errors.Session.NotFound":
    case "Errors.Session.Token.Invalid":
      return { status: 400, key: "sessionGone" };
  }
  if (d.kind === "ResourceExhausted") return { status: 429, key: "tooManyAttempts" };
  if (d.kind === "Unavailable") return { status: 503, key: "unavailable" };
  if (d.kind === "Internal") return { status: 500, key: "generic" };
  if (d.kind === "NotFound") return { status: 404, key: "notFound" };
  return { status: 400, key: "generic" };
}
