// RFC 6749 §4.4: client credentials for a machine user or an API application (the client itself is the subject).
import { unauthorizedClient } from "../errors.js";
import { issueTokens } from "../issue.js";
import { grantAppScopes, grantScopes } from "../scopes.js";
import type { Grant } from "./types.js";

export const clientCredentials: Grant = {
  type: "client_credentials",
  parameters: ["scope"],
  clientAuthentication: "required",
  async handle(rt, params, client, now) {
    if (!client) throw new Error("client_credentials without an authenticated client");
    const lifetime = rt.lifetimes.clientCredentials;
    if (client.kind === "app") {
      // OIDC apps act for users (authorization code flow), never on their own behalf.
      if (client.appType !== "API" || !client.appId || !client.projectId) {
        throw unauthorizedClient("only API applications and machine users may use the client_credentials grant");
      }
      return issueTokens(rt, {
        clientId: client.clientId,
        appId: client.appId,
        credentialId: client.credential,
        granted: grantAppScopes(params.scope, { clientId: client.clientId, orgId: client.orgId, projectId: client.projectId }),
        lifetime,
        tokenType: client.accessTokenType,
        now,
      });
    }
    if (!client.userId) throw unauthorizedClient("this client may not use the client_credentials grant");
    const granted = await grantScopes(rt, params.scope, { id: client.userId, orgId: client.orgId }, client.clientId);
    return issueTokens(rt, {
      userId: client.userId,
      orgId: client.orgId,
      clientId: client.clientId,
      credentialId: client.credential,
      granted,
      lifetime,
      tokenType: client.accessTokenType,
      now,
    });
  },
};
