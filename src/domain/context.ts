import type { Logger } from "pino";
import type { Store } from "../store/index.js";
import type { AuthnSettings, Mailer } from "./identity/authn/ports.js";
import type { ExternalSignIn } from "./idp/ports.js";
import type { FailureLimits } from "./limits.js";
import type { SamlMetadataFetcher } from "./saml/ports.js";
import type { SignInSignals } from "./signals.js";

/** Who is calling: resolved from the bearer token by the authenticator. */
export interface Principal {
  userId: string;
  instanceId: string;
  /** The organization the user belongs to. */
  orgId: string;
  userType: "HUMAN" | "MACHINE";
  instanceRoles: readonly string[];
  /** Roles per organization id. */
  orgRoles: ReadonlyMap<string, readonly string[]>;
  /** Id of the credential used (PAT id), for audit. */
  credentialId: string;
  /** The session the bearer token was issued from (an access token of a sign-in); it proves that session. */
  sessionId?: string;
}

export type Clock = () => Date;

/** Everything a domain function needs; built once per request by the adapter that received it. */
export interface Ctx {
  /** Repositories and the transaction runner. */
  store: Store;
  instanceId: string;
  principal: Principal;
  clock: Clock;
  log: Logger;
  requestId: string;
  /**
   * The session this request presents with its token (a login UI's session of the user it acts for): the only proof
   * a sensitive change accepts besides the bearer token's own session (principal.sessionId).
   */
  session?: { id: string; token: string };
  /** Brute-force limits of failed checks (passwords); none where unset. */
  limits?: FailureLimits;
  /** The address the request came from (the TCP peer), for the limits. */
  peer?: string;
  /** Sends e-mail (codes, links); none when SVC_SMTP_URL is unset. */
  mailer?: Mailer;
  /**
   * The language of the user interface the request came from (the hosted login's: its auth request's ui_locales,
   * then Accept-Language): the mails it triggers speak it when the user has no preferred language of its own.
   */
  uiLanguage?: () => string | undefined;
  /** The master key's sealer and the external URL, for the users' authentication methods. */
  authn?: AuthnSettings;
  /** The OpenID Connect relying party of sign-ins at external identity providers, and the SAML certificates. */
  idp?: ExternalSignIn;
  /** Fetches a SAML SP's metadata from its URL (once, when an app is registered with metadataUrl). */
  samlMetadata?: SamlMetadataFetcher;
  /** The metrics' ears for sign-in outcomes (factor checks, finished OIDC and SAML requests); none in tools and tests. */
  signals?: SignInSignals;
}
