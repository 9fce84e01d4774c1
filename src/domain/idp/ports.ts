// What external sign-in needs from outside the domain: an OpenID Connect relying party (discovery, the
// authorization URL, the code exchange with its checks, userinfo), filled by the composition root (src/idp), and
// svc's SAML certificates, which sign its AuthnRequests to SAML providers.
import type { IdpCertificates } from "../saml/runtime.js";

/** A provider as the relying party sees it; the secret opened for this use only. */
export interface OidcProvider {
  id: string;
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Claims from the ID token only (no userinfo request). */
  idTokenOnly: boolean;
}

/** What binds one authorization response to the request that asked for it. */
export interface AuthorizationChecks {
  redirectUri: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** A provider the relying party could not talk to, or whose answer it refused. */
export class ProviderError extends Error {
  constructor(
    /** An OAuth error code for the failure URL: "server_error" (unreachable), "invalid_response", or the provider's. */
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ProviderError";
  }
}

export interface OidcRelyingParty {
  /** The provider's authorization URL for these checks (PKCE S256). Throws ProviderError when discovery fails. */
  authorizationUrl(p: OidcProvider, checks: AuthorizationChecks): Promise<string>;
  /**
   * Validates the authorization response `callback` (the redirect URI with its query), redeems the code and
   * returns the ID token's claims merged with userinfo's (unless idTokenOnly). Throws ProviderError.
   */
  exchange(p: OidcProvider, callback: URL, checks: AuthorizationChecks): Promise<Record<string, unknown>>;
}

/** The relying party, with svc's SAML signing certificates for SAML providers (the same the SAML IdP half signs with). */
export interface ExternalSignIn extends OidcRelyingParty {
  samlCertificates?: IdpCertificates;
}
