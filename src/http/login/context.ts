// The hosted login is a client of svc's own API like any customer's login UI: it acts as a login client (the
// IAM_LOGIN_CLIENT role, nothing more) through the domain functions behind SessionService, OIDCService, UserService
// and SettingsService, and as the signed-in user itself (no role at all) on the account page. It has no other access.
import type { Request } from "express";
import type { Logger } from "pino";
import type { Clock, Ctx, Principal } from "../../domain/context.js";
import type { AuthnSettings, Mailer } from "../../domain/identity/authn/ports.js";
import type { ExternalSignIn } from "../../domain/idp/ports.js";
import type { FailureLimits } from "../../domain/limits.js";
import { requestContext } from "../../domain/request-context.js";
import type { SamlAnswerer } from "../../domain/saml/login-ui.js";
import type { CookieJar } from "./cookie.js";
import { matchLanguage } from "./i18n.js";

export interface LoginDeps {
  store: Ctx["store"];
  instanceId: string;
  clock: Clock;
  log: Logger;
  limits?: FailureLimits;
  /** Wrong user codes of the device grant (src/domain/oauth/device-entry.ts), counted apart with their own limits. */
  deviceCodeLimits?: FailureLimits;
  mailer?: Mailer;
  authn: AuthnSettings;
  /** svc as the relying party of external OpenID providers. */
  idp?: ExternalSignIn;
  /** The metrics' ears for sign-in outcomes. */
  signals?: Ctx["signals"];
  /** SVC_EXTERNAL_URL without a trailing slash: the base of the links in pages and e-mails. */
  externalUrl: string;
  /** The issuer and the authorization code lifetime (seconds), for finishing auth requests. */
  issuer: string;
  codeLifetime: number;
  /** The SAML IdP's base URL and certificates, for answering SAML requests. */
  saml: SamlAnswerer;
  cookies: CookieJar;
  /** Express's "trust proxy" value (SVC_TRUST_PROXY): which X-Forwarded-* headers are believed. */
  trustProxy: boolean | string | number;
}

/** The audit and session-creator identity of the hosted login (no user row: it is part of svc). */
export const HOSTED_LOGIN_ID = "svc-hosted-login";

const loginPrincipal = (instanceId: string): Principal => ({
  userId: HOSTED_LOGIN_ID,
  instanceId,
  orgId: "",
  userType: "MACHINE",
  instanceRoles: ["IAM_LOGIN_CLIENT"],
  orgRoles: new Map(),
  credentialId: HOSTED_LOGIN_ID,
});

function base(deps: LoginDeps, req: Request, principal: Principal): Ctx {
  const { store, instanceId, clock, log, limits, mailer, authn, idp, signals } = deps;
  // The mails a page triggers speak the browser's language (LoginRequest narrows it to the auth request's ui_locales).
  const uiLanguage = () => matchLanguage([], req.headers["accept-language"]);
  return requestContext({ store, instanceId, clock, log, limits, mailer, authn, idp, signals, uiLanguage }, principal, {
    requestId: (req.headers["x-request-id"] as string | undefined) ?? "",
    // req.ip follows SVC_TRUST_PROXY: the browser's address behind a trusted proxy, the TCP peer otherwise.
    peer: req.ip,
  });
}

/** The hosted login as a login client. */
export const loginCtx = (deps: LoginDeps, req: Request): Ctx => base(deps, req, loginPrincipal(deps.instanceId));

/** `ctx` presenting this browser's session `s` (the proof the domain asks of a sensitive change). */
export const presenting = (ctx: Ctx, s: { id: string; token: string }): Ctx =>
  requestContext(ctx, ctx.principal, { requestId: ctx.requestId, peer: ctx.peer, session: { id: s.id, token: s.token } });

/** A signed-in user acting on itself (the account page): its own rights only, none of its roles. */
export function selfCtx(deps: LoginDeps, req: Request, user: { id: string; orgId: string }): Ctx {
  return base(deps, req, {
    userId: user.id,
    instanceId: deps.instanceId,
    orgId: user.orgId,
    userType: "HUMAN",
    instanceRoles: [],
    orgRoles: new Map(),
    credentialId: HOSTED_LOGIN_ID,
  });
}
