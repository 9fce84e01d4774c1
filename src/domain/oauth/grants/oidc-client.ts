// The client of a code or refresh grant: an OIDC application, authenticated the way it is registered. A public
// client (auth method none) names itself with client_id and proves nothing: PKCE binds its codes instead.
import type { OidcGrantType } from "../../access/app-settings.js";
import { type ClientRecord, publicClient } from "../client-auth.js";
import { invalidRequest, unauthorizedClient } from "../errors.js";
import type { OAuthRuntime } from "../runtime.js";

export type OidcClient = ClientRecord & { appId: string; projectId: string; oidc: NonNullable<ClientRecord["oidc"]> };

/** An OIDC application's client record, with what the code flow needs of it. */
export const isOidcApp = (c: ClientRecord | null | undefined): c is OidcClient => c?.kind === "app" && !!c.oidc && !!c.appId && !!c.projectId;

/**
 * `authenticated`: the client the token endpoint authenticated, if the request carried credentials. Without them
 * only a public client may go on. The application must allow `grantType`.
 */
export async function oidcClient(
  rt: OAuthRuntime,
  authenticated: ClientRecord | undefined,
  params: Record<string, string | undefined>,
  grantType: OidcGrantType,
): Promise<OidcClient> {
  if (authenticated && params.client_id !== undefined && params.client_id !== authenticated.clientId) {
    throw invalidRequest("client_id differs from the authenticated client");
  }
  // Without credentials only a public client goes on: a confidential one must authenticate.
  const client = authenticated ?? (await publicClient(rt, params.client_id));
  if (!isOidcApp(client)) throw unauthorizedClient(`only OIDC applications may use the ${grantType} grant`);
  if (!client.oidc.grantTypes.includes(grantType)) throw unauthorizedClient(`the application may not use the ${grantType} grant`);
  return client;
}
