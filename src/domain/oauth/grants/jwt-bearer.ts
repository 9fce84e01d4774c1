// RFC 7523 §2.1 with our rules: iss = sub = the machine user, named by any of its client ids (user id, login
// name or username), signed by one of its keys. The token's client id (aud, azp) is the one the assertion used.
import { GRANT_JWT_BEARER, readAssertion, verifyAssertionDeferred } from "../assertions.js";
import { type ClientRecord, findClient, machineKey, usable } from "../client-auth.js";
import { invalidGrant, invalidRequest } from "../errors.js";
import { issueTokens } from "../issue.js";
import { grantScopes } from "../scopes.js";
import type { Grant } from "./types.js";

export const jwtBearer: Grant = {
  type: GRANT_JWT_BEARER,
  parameters: ["assertion", "scope"],
  // RFC 7523 §3.1 makes client authentication optional for this grant.
  clientAuthentication: "optional",
  async handle(rt, params, _client, now) {
    const assertion = params.assertion;
    if (!assertion) throw invalidRequest("assertion is required");
    const read = readAssertion(assertion);
    if (!read) throw invalidGrant("the assertion is not an RS256 JWT with a kid");
    const { kid, claims } = read;
    if (typeof claims.sub !== "string" || claims.sub !== claims.iss) throw invalidGrant("the assertion's iss and sub must both name the machine user");
    const client = await findClient(rt, claims.sub);
    const key = client?.kind === "user" && client.userId ? await machineKey(rt, kid, client.userId) : null;
    if (!key || (key.expiresAt && key.expiresAt.getTime() <= now.getTime())) throw invalidGrant("unknown, removed or expired key");
    if (key.user.type !== "MACHINE" || !usable(key.user)) throw invalidGrant("the user is not active");
    const audiences = [rt.issuer, `${rt.issuer}/oauth/v2/token`];
    const marker = await verifyAssertionDeferred(rt, {
      assertion,
      kid,
      pem: key.publicKey,
      now,
      audiences,
      subject: claims.sub,
      owner: { userId: key.user.id },
    });
    const clientId = (client as ClientRecord).clientId;
    const granted = await grantScopes(rt, params.scope, { id: key.user.id, orgId: key.user.orgId }, clientId);
    return issueTokens(rt, {
      userId: key.user.id,
      orgId: key.user.orgId,
      clientId,
      credentialId: `key:${kid}`,
      granted,
      lifetime: rt.lifetimes.jwtProfile,
      tokenType: key.user.accessTokenType,
      now,
      marker,
    });
  },
};
