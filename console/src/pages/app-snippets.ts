// Copy-paste configuration for an application: openid-client (any Node app), Auth.js and Spring Security for OIDC
// apps, a client-credentials call for machines, and svc's IdP metadata URL for SAML service providers.
import { settings } from "../config";

export type Kind = "spa" | "web" | "native" | "machine" | "saml";

export const issuerUrl = () => settings.issuer.replace(/\/+$/, "");
export const samlMetadataUrl = () => `${issuerUrl()}/saml/v2/metadata`;

/** Where the client secret goes when it is not shown any more (an existing app's page). */
export const SECRET_PLACEHOLDER = "<your client secret>";

export interface Snippets {
  openid: string;
  authjs?: string;
  spring?: string;
}

/** `secret` is empty for public clients (PKCE, no secret). */
export function snippets(kind: Kind, projectId: string, clientId: string, secret: string, redirect: string): Snippets {
  const issuer = issuerUrl();
  const secretArg = secret ? JSON.stringify(secret) : "undefined, client.None()";
  if (kind === "machine") {
    return {
      openid: `import * as client from "openid-client";

const config = await client.discovery(new URL("${issuer}"), "${clientId}", ${JSON.stringify(secret)});
const tokens = await client.clientCredentialsGrant(config, {
  scope: "urn:svc:iam:org:project:id:${projectId}:aud",
});`,
      spring: `# application.yml (Spring Security OAuth 2.0 Client, client credentials)
spring:
  security:
    oauth2:
      client:
        registration:
          svc:
            client-id: ${clientId}
            client-secret: ${secret}
            authorization-grant-type: client_credentials
            scope: urn:svc:iam:org:project:id:${projectId}:aud
        provider:
          svc:
            issuer-uri: ${issuer}`,
    };
  }
  return {
    openid: `import * as client from "openid-client";

const config = await client.discovery(new URL("${issuer}"), "${clientId}", ${secretArg});
const code_verifier = client.randomPKCECodeVerifier();
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: "${redirect}",
  scope: "openid profile email",
  code_challenge: await client.calculatePKCECodeChallenge(code_verifier),
  code_challenge_method: "S256",
});
// …and at ${redirect}:
const tokens = await client.authorizationCodeGrant(config, currentUrl, { pkceCodeVerifier: code_verifier });`,
    authjs: `// auth.ts (Auth.js / NextAuth v5)
import NextAuth from "next-auth";

export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [
    {
      id: "svc",
      name: "svc",
      type: "oidc",
      issuer: "${issuer}",
      clientId: "${clientId}",${secret ? `\n      clientSecret: "${secret}",` : `\n      client: { token_endpoint_auth_method: "none" },`}
      checks: ["pkce", "state"],
    },
  ],
});`,
    spring: `# application.yml (Spring Security OAuth 2.0 Client)
spring:
  security:
    oauth2:
      client:
        registration:
          svc:
            client-id: ${clientId}${secret ? `\n            client-secret: ${secret}` : "\n            client-authentication-method: none"}
            authorization-grant-type: authorization_code
            scope: openid,profile,email
            redirect-uri: "{baseUrl}/login/oauth2/code/{registrationId}"
        provider:
          svc:
            issuer-uri: ${issuer}`,
  };
}

const xmlAttr = (s: string) => s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** SP metadata for a service provider known by its entity id and ACS URL only (what the API reads them from). */
export function spMetadata(entityId: string, acsUrl: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${xmlAttr(entityId)}">
  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${xmlAttr(acsUrl)}" index="0" isDefault="true"/>
  </md:SPSSODescriptor>
</md:EntityDescriptor>
`;
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** http redirect URIs need development mode, except loopback ones of native apps (RFC 8252). */
export function needsDevMode(native: boolean, uris: string[]): boolean {
  return uris.some((u) => {
    try {
      const url = new URL(u);
      return url.protocol === "http:" && !(native && LOOPBACK.has(url.hostname));
    } catch {
      return false;
    }
  });
}
