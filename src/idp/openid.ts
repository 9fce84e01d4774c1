// The relying party of sign-ins at external OpenID Connect providers, with openid-client: discovery (kept in memory
// briefly per provider and configuration: derivable, so each replica keeps its own), the authorization URL with
// PKCE S256, state and nonce, and the code exchange with every check openid-client makes (state, iss, audience, nonce;
// userinfo's sub) and the ID token's signature with a key of the provider's JWKS. Plain http only for loopback issuers.
import * as oidc from "openid-client";
import { type AuthorizationChecks, type OidcProvider, type OidcRelyingParty, ProviderError } from "../domain/idp/ports.js";
import { isLoopback } from "../domain/idp/providers.js";

const DISCOVERY_TTL_MS = 5 * 60_000;
const TIMEOUT_SECONDS = 10;
const MAX_CACHED = 1000;

interface Cached {
  key: string;
  at: number;
  config: Promise<oidc.Configuration>;
}

export function openidRelyingParty(now: () => number = Date.now): OidcRelyingParty {
  const cache = new Map<string, Cached>();

  function configOf(p: OidcProvider): Promise<oidc.Configuration> {
    // A changed configuration (issuer, client, secret) is discovered again at once.
    const key = JSON.stringify([p.issuer, p.clientId, p.clientSecret]);
    const hit = cache.get(p.id);
    if (hit && hit.key === key && now() - hit.at < DISCOVERY_TTL_MS) return hit.config;
    const insecure = new URL(p.issuer).protocol === "http:" && isLoopback(new URL(p.issuer).hostname);
    const config = oidc
      .discovery(new URL(p.issuer), p.clientId, undefined, oidc.ClientSecretBasic(p.clientSecret), {
        timeout: TIMEOUT_SECONDS,
        // openid-client does not verify the signature of an ID token from the token endpoint unless told to (TLS is
        // deemed proof of the issuer): svc does, with a key of the provider's JWKS only (never a key the token names
        // or embeds), since what the ID token says becomes a sign-in here.
        execute: [...(insecure ? [oidc.allowInsecureRequests] : []), oidc.enableNonRepudiationChecks],
      })
      .catch((err: unknown) => {
        cache.delete(p.id);
        throw providerError(err);
      });
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(p.id, { key, at: now(), config });
    return config;
  }

  return {
    async authorizationUrl(p: OidcProvider, c: AuthorizationChecks): Promise<string> {
      const config = await configOf(p);
      return oidc
        .buildAuthorizationUrl(config, {
          redirect_uri: c.redirectUri,
          scope: p.scopes.join(" "),
          state: c.state,
          nonce: c.nonce,
          code_challenge: await oidc.calculatePKCECodeChallenge(c.codeVerifier),
          code_challenge_method: "S256",
        })
        .toString();
    },

    async exchange(p: OidcProvider, callback: URL, c: AuthorizationChecks): Promise<Record<string, unknown>> {
      const config = await configOf(p);
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: c.codeVerifier,
          expectedState: c.state,
          expectedNonce: c.nonce,
          idTokenExpected: true,
        });
        const idToken = { ...(tokens.claims() ?? {}) } as Record<string, unknown>;
        if (p.idTokenOnly) return idToken;
        const info = await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub as string);
        // What the ID token proves wins over userinfo for the claims both carry (sub is equal by then).
        return { ...info, ...idToken };
      } catch (err) {
        throw providerError(err);
      }
    },
  };
}

function providerError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof oidc.AuthorizationResponseError || err instanceof oidc.ResponseBodyError) {
    return new ProviderError(err.error, err.error_description ?? err.message);
  }
  // openid-client wraps what went wrong ("something went wrong") with the cause; fetch's TypeError or a timeout
  // means the provider did not answer at all. Read by name: fetch's errors come from Node's own realm.
  let e = asError(err);
  for (let depth = 0; e && depth < 5; depth++, e = asError(e.cause)) {
    if (e.name === "TypeError" || e.name === "TimeoutError" || e.name === "AbortError") {
      const cause = asError(e.cause);
      return new ProviderError("server_error", `the identity provider is unreachable: ${cause ? cause.message : e.message}`);
    }
  }
  const outer = asError(err);
  const cause = asError(outer?.cause);
  return new ProviderError("invalid_response", `${outer ? outer.message : String(err)}${cause ? `: ${cause.message}` : ""}`);
}

function asError(v: unknown): { name: string; message: string; cause?: unknown } | undefined {
  return typeof v === "object" && v !== null && typeof (v as Error).message === "string" ? (v as Error) : undefined;
}
