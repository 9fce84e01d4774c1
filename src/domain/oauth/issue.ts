// Issuing: an access token in the client's format and, with `openid` and a
// user, an ID token. Machine grants write the row through the batching token
// writer; the authorization code and refresh grants write it themselves, in
// the statement that redeems their grant.
import type { TokenActor, TokenRow } from "../../store/tokens.js";
import type { SigningAlg } from "../access/app-settings.js";
import { type ActionFunction, appendClaims } from "../actions/functions.js";
import { storeAnsweredMetadata } from "../actions/metadata.js";
import { userContext } from "../actions/payload.js";
import { newId } from "../ids.js";
import { issuanceRoleClaims, metadataClaim, userClaims } from "./claims.js";
import { invalidGrant } from "./errors.js";
import { atHash } from "./id-token.js";
import type { UserInfoSource } from "./resolve.js";
import type { OAuthRuntime } from "./runtime.js";
import { type GrantedScopes, MANAGEMENT_AUDIENCE, SCOPE_METADATA, scopeValue } from "./scopes.js";
import { formatFor } from "./token-formats.js";

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope?: string;
  id_token?: string;
  refresh_token?: string;
  /** RFC 8693 §2.2.1: what a token exchange issued. */
  issued_token_type?: string;
}

/** What a user's sign-in adds to the ID token (authorization code and refresh grants). */
export interface SignIn {
  /** The auth request's nonce (never on refreshed ID tokens: OIDC Core §12.2). */
  nonce?: string;
  authTime: Date;
  sessionId?: string;
  amr: string[];
  /** The app asks for the profile/email/phone claims in the ID token itself (else they are userinfo's only). */
  userinfoClaims: boolean;
  /** The app asks for the role claims in the ID token. */
  roleClaims: boolean;
}

export interface IssueInput {
  userId?: string;
  /** The user's profile when the caller read it already (else it is read when the ID token needs it). */
  profile?: UserInfoSource;
  /** The user's organization (what cached role claims are tagged with). */
  orgId?: string;
  clientId: string;
  appId?: string;
  /** What the client authenticated with (see ClientRecord.credential). */
  credentialId?: string;
  granted: GrantedScopes;
  lifetime: number;
  tokenType: "BEARER" | "JWT";
  /** The algorithm of the ID token and of a JWT access token (the app's id_token_signed_response_alg); RS256 when absent. */
  alg?: SigningAlg;
  now: Date;
  /** RFC 8693 §4.1: the party acting for the subject (a JWT access token carries it as the `act` claim). */
  act?: TokenActor;
  /** A used-assertion marker to write with the token; the grant fails if it already exists. */
  marker?: TokenRow;
  /** A user's interactive sign-in: the ID token's sign-in claims, and the grant the token belongs to. */
  signIn?: SignIn & { idTokenLifetime: number; grantId: string };
}

/** A token ready to be handed out once its row is written. */
export interface PreparedTokens {
  response: TokenResponse;
  row: TokenRow;
}

/**
 * Issues an access token (opaque or JWT per `tokenType`) and, with `openid`
 * and a user, an ID token. Without `userId` the token is the app's own
 * (`appId` required): its subject is the client id and it carries no user
 * or role claims.
 */
export async function issueTokens(rt: OAuthRuntime, input: IssueInput): Promise<TokenResponse> {
  const { response, row } = await prepareTokens(rt, input);
  await stored(rt, row, input.marker);
  return response;
}

/** The tokens of `input` and the row to write; nothing is written. */
export async function prepareTokens(rt: OAuthRuntime, input: IssueInput): Promise<PreparedTokens> {
  const { granted, now, userId, signIn } = input;
  const iat = Math.floor(now.getTime() / 1000);
  const id = newId();
  if (!userId && !input.appId) throw new Error("a token needs a user or an app");
  const format = formatFor(input.tokenType);
  const needUser = userId !== undefined && granted.scopes.includes("openid");
  // A sign-in's ID token carries the profile and role claims only where the app asks for them there.
  const userinfoInIdToken = !signIn || signIn.userinfoClaims;
  const rolesInIdToken = !signIn || signIn.roleClaims;
  const [user, roles, metadata] = await Promise.all([
    needUser && userinfoInIdToken ? (input.profile ?? rt.store.tokens.findUser(userId)) : undefined,
    userId && (format.name === "jwt" || (needUser && rolesInIdToken)) ? issuanceRoleClaims(rt, userId, input.orgId, granted) : {},
    // In the ID token only (as userinfo and introspection give it); JWT access tokens stay small.
    needUser && userinfoInIdToken && granted.scopes.includes(SCOPE_METADATA) ? metadataClaim(rt, userId) : null,
  ]);
  const accessClaims = {
    jti: id,
    sub: userId ?? input.clientId,
    aud: granted.audience,
    client_id: input.clientId,
    scope: scopeValue(granted.scopes),
    iat,
    exp: iat + input.lifetime,
  };
  // A JWT access token's claims, and the user claims of the ID token, pass their functions' targets (if any).
  const profile = async () => user ?? input.profile ?? (userId ? await rt.store.tokens.findUser(userId) : null) ?? undefined;
  const extra =
    format.name === "jwt" && userId
      ? await withActions(rt, "preaccesstoken", roles, accessClaims, await actionUser(rt, "preaccesstoken", profile), input.clientId)
      : roles;
  const { token, tokenHash } = await format.encode(rt, { ...accessClaims, extra: input.act ? { ...extra, act: input.act } : extra, alg: input.alg });
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
    sessionId: signIn?.sessionId ?? null,
    grantId: signIn?.grantId ?? null,
    ...(input.act ? { act: input.act } : {}),
    expiresAt: new Date(accessClaims.exp * 1000),
    createdAt: now,
  };
  const response: TokenResponse = { access_token: token, token_type: "Bearer", expires_in: input.lifetime, scope: scopeValue(granted.scopes) };
  if (needUser && (user || !userinfoInIdToken)) {
    // The user claims of the ID token (where the app asks for them there: else userinfo gives them, and runs them).
    const userinfo = user
      ? await withActions(
          rt,
          "preuserinfo",
          { ...userClaims(user, granted.scopes), ...(rolesInIdToken ? roles : {}), ...(metadata ? { [SCOPE_METADATA]: metadata } : {}) },
          {},
          await actionUser(rt, "preuserinfo", profile),
          input.clientId,
        )
      : rolesInIdToken
        ? roles
        : {};
    const common = {
      iss: rt.issuer,
      aud: [input.clientId, ...granted.audience.filter((a) => a !== input.clientId && a !== MANAGEMENT_AUDIENCE)],
      azp: input.clientId,
      iat,
    };
    const idClaims = signIn
      ? {
          ...common,
          sub: userId,
          exp: iat + signIn.idTokenLifetime,
          auth_time: Math.floor(signIn.authTime.getTime() / 1000),
          ...(signIn.nonce !== undefined ? { nonce: signIn.nonce } : {}),
          at_hash: atHash(token, input.alg),
          ...(signIn.sessionId ? { sid: signIn.sessionId } : {}),
          amr: signIn.amr,
          ...userinfo,
        }
      : { ...common, exp: accessClaims.exp, ...userinfo };
    response.id_token = await rt.keys.sign(idClaims, undefined, input.alg);
  }
  return { response, row };
}

/** The user a function's targets are told about: loaded only when the function has targets. */
export async function actionUser(
  rt: OAuthRuntime,
  fn: ActionFunction,
  profile: () => Promise<UserInfoSource | undefined>,
): Promise<UserInfoSource | undefined> {
  return rt.actions && (await rt.actions.has(fn)) ? profile() : undefined;
}

/**
 * `claims` with what `fn`'s targets append (see src/domain/actions/functions.ts); `context` is what else they are
 * told (the token's protocol claims). Without targets, or without a user to tell them about, `claims` as they are.
 */
export async function withActions(
  rt: OAuthRuntime,
  fn: "preuserinfo" | "preaccesstoken",
  claims: Record<string, unknown>,
  context: Record<string, unknown>,
  user: UserInfoSource | undefined,
  clientId: string,
): Promise<Record<string, unknown>> {
  if (!rt.actions || !user) return claims;
  const field = fn === "preuserinfo" ? "userinfo" : "claims";
  const payload = { [field]: { ...context, ...claims }, clientId, ...(await userContext(rt.store, rt.instanceId, user)) };
  const answers = await rt.actions.call(fn, payload, (p, answer) => ({ ...p, [field]: appendClaims(p[field] as Record<string, unknown>, [answer]) }));
  await storeAnsweredMetadata(rt, user, answers);
  return answers.length ? appendClaims(claims, answers) : claims;
}

async function stored(rt: OAuthRuntime, row: TokenRow, marker?: TokenRow): Promise<void> {
  const [token, fresh] = await rt.store.tokens.insertBatched(marker ? [row, marker] : [row]);
  // A replayed assertion: the token row just written is never handed out (and is purged after it expires).
  if (marker && !fresh) throw invalidGrant("the assertion was already used");
  if (!token) throw new Error("token id collision");
}
