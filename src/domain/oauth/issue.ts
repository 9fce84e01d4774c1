// Issuing: an access token in the client's format and, with `openid` and a
// user, an ID token; the row is written through the batching token writer.
import type { TokenRow } from "../../store/tokens.js";
import { newId } from "../ids.js";
import { issuanceRoleClaims, metadataClaim, userClaims } from "./claims.js";
import { invalidGrant } from "./errors.js";
import type { OAuthRuntime } from "./runtime.js";
import { type GrantedScopes, MANAGEMENT_AUDIENCE, SCOPE_METADATA, scopeValue } from "./scopes.js";
import { formatFor } from "./token-formats.js";

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope?: string;
  id_token?: string;
}

export interface IssueInput {
  userId?: string;
  /** The user's organization (what cached role claims are tagged with). */
  orgId?: string;
  clientId: string;
  appId?: string;
  /** What the client authenticated with (see ClientRecord.credential). */
  credentialId?: string;
  granted: GrantedScopes;
  lifetime: number;
  tokenType: "BEARER" | "JWT";
  now: Date;
  /** A used-assertion marker to write with the token; the grant fails if it already exists. */
  marker?: TokenRow;
}

/**
 * Issues an access token (opaque or JWT per `tokenType`) and, with `openid`
 * and a user, an ID token. Without `userId` the token is the app's own
 * (`appId` required): its subject is the client id and it carries no user
 * or role claims.
 */
export async function issueTokens(rt: OAuthRuntime, input: IssueInput): Promise<TokenResponse> {
  const { granted, now, userId } = input;
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + input.lifetime;
  const id = newId();
  if (!userId && !input.appId) throw new Error("a token needs a user or an app");
  const format = formatFor(input.tokenType);
  const needUser = userId !== undefined && granted.scopes.includes("openid");
  const [user, roles, metadata] = await Promise.all([
    needUser ? rt.store.tokens.findUser(userId) : undefined,
    userId && (format.name === "jwt" || needUser) ? issuanceRoleClaims(rt, userId, input.orgId, granted) : {},
    // In the ID token only (as userinfo and introspection give it); JWT access tokens stay small.
    needUser && granted.scopes.includes(SCOPE_METADATA) ? metadataClaim(rt, userId) : null,
  ]);
  const { token, tokenHash } = await format.encode(rt, {
    jti: id,
    sub: userId ?? input.clientId,
    aud: granted.audience,
    client_id: input.clientId,
    scope: scopeValue(granted.scopes),
    iat,
    exp,
    extra: roles,
  });
  const row: TokenRow = {
    id,
    instanceId: rt.instanceId,
    format: format.name,
    tokenHash,
    userId: userId ?? null,
    clientId: input.clientId,
    appId: input.appId ?? null,
    credentialId: input.credentialId ?? null,
    scopes: granted.scopes,
    audience: granted.audience,
    expiresAt: new Date(exp * 1000),
    createdAt: now,
  };
  await stored(rt, row, input.marker);
  const res: TokenResponse = { access_token: token, token_type: "Bearer", expires_in: input.lifetime, scope: scopeValue(granted.scopes) };
  if (needUser && user) {
    res.id_token = await rt.keys.sign({
      iss: rt.issuer,
      aud: [input.clientId, ...granted.audience.filter((a) => a !== input.clientId && a !== MANAGEMENT_AUDIENCE)],
      azp: input.clientId,
      iat,
      exp,
      ...userClaims(user, granted.scopes),
      ...roles,
      ...(metadata ? { [SCOPE_METADATA]: metadata } : {}),
    });
  }
  return res;
}

async function stored(rt: OAuthRuntime, row: TokenRow, marker?: TokenRow): Promise<void> {
  const [token, fresh] = await rt.store.tokens.insertBatched(marker ? [row, marker] : [row]);
  // A replayed assertion: the token row just written is never handed out (and is purged after it expires).
  if (marker && !fresh) throw invalidGrant("the assertion was already used");
  if (!token) throw new Error("token id collision");
}
