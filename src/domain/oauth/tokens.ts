// The OAuth token service's domain: the runtime (signing keys, caches), client
// authentication, assertions (RFC 7523), issuing, resolving, revoking tokens.
// HTTP lives in src/http/oauth; this file knows nothing of Express.
import { createHash, createPublicKey, type KeyObject, timingSafeEqual } from "node:crypto";
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from "jose";
import type { Logger } from "pino";
import { Prisma } from "../../../gen/prisma/client.js";
import type { SigningKeys } from "../../crypto/signing-keys.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import { invalidateAuth, type TaggedCache } from "../../store/auth-cache.js";
import type { PrismaClient } from "../../store/db.js";
import { query, statement } from "../../store/sql.js";
import { type ProjectRoleClaim as RoleClaim, roleClaims } from "../access/user-grants.js";
import type { Clock, Principal } from "../context.js";
import { newId } from "../ids.js";

export const MANAGEMENT_AUDIENCE = "svc";
export const SCOPE_MANAGEMENT = "urn:svc:iam:org:project:id:svc:aud";
export const GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
export const CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/** Accepted clock skew for iat/exp/nbf of assertions. */
const SKEW_S = 60;
const MAX_ASSERTION_AGE_S = 3600;
const MAX_ASSERTION_BYTES = 8 * 1024;
const MAX_TOKEN_BYTES = 8 * 1024;

/** Project ids are always generated (ids.ts): 26 lower-case Crockford base32 characters. */
const PROJECT_ID_SHAPE = /^[0-9a-z]{26}$/;
/** Application client ids are `<generated id>@<project slug>` (apps.ts). */
const APP_CLIENT_ID_SHAPE = /^[0-9a-z]{26}@/;
const PROJECT_AUD = /^urn:svc:iam:org:project:id:([A-Za-z0-9_-]{1,64}):aud$/;
const ROLE_SCOPE = /^urn:svc:iam:org:project:role:([A-Za-z0-9._:-]{1,200})$/;
const ORG_SCOPE = /^urn:svc:iam:org:id:([A-Za-z0-9_-]{1,64})$/;
/** Scope and claim: the user's metadata, each value base64-encoded. */
export const SCOPE_METADATA = "urn:svc:iam:user:metadata";
const SIMPLE_SCOPES = new Set(["openid", "profile", "email", "phone", "urn:svc:iam:org:projects:roles", SCOPE_METADATA]);

/** An RFC 6749 §5.2 error. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
    this.name = "OAuthError";
  }
}
const invalidClient = (d = "client authentication failed") => new OAuthError("invalid_client", d, 401);
const invalidGrant = (d: string) => new OAuthError("invalid_grant", d);

export interface OAuthRuntime {
  db: PrismaClient;
  instanceId: string;
  issuer: string;
  keys: SigningKeys;
  clock: Clock;
  log: Logger;
  lifetimes: { clientCredentials: number; jwtProfile: number };
  tokens: TaggedCache<ResolvedToken>;
  clients: TaggedCache<ClientRecord | null>;
  /** Machine keys with their user, for the JWT profile grant (invalidated per user). */
  machineKeys: TaggedCache<MachineKeyRecord | null>;
  /**
   * Role claims at issuance, per user, scopes and audience; tagged like
   * resolved tokens (the user and its organization), which is what grant,
   * project and organization changes invalidate.
   */
  roleClaims: TaggedCache<Record<string, unknown>>;
  /** Issued tokens. */
  writer: TokenWriter;
  /** Used-assertion markers (a separate queue: the grant waits for its marker before it issues). */
  markers: TokenWriter;
}

type TokenRow = Prisma.OAuthTokenCreateManyInput;

/**
 * Group commit for OAuthToken rows: rows queued while a write is in flight go
 * to the database together in one INSERT (one commit, one WAL flush) instead
 * of one transaction each. Every caller still waits for its row to be
 * committed before it answers, so other replicas can always find the token.
 */
export class TokenWriter {
  private queue: { row: TokenRow; done: (inserted: boolean) => void; fail: (err: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    private readonly db: PrismaClient,
    // One INSERT at a time measured best (bigger batches, fewer round trips and commits).
    private readonly maxInFlight = 1,
    private readonly maxBatch = 200,
  ) {}

  /** Resolves true once committed, false when a row with the same id already exists. */
  insert(row: TokenRow): Promise<boolean> {
    return this.insertMany([row]).then((r) => r[0] === true);
  }

  /** Several rows in the same INSERT; per row whether it was inserted. */
  insertMany(rows: TokenRow[]): Promise<boolean[]> {
    const all = rows.map((row) => new Promise<boolean>((done, fail) => this.queue.push({ row, done, fail })));
    if (this.inFlight < this.maxInFlight) this.flush();
    return Promise.all(all);
  }

  private flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    this.inFlight++;
    // One plain INSERT (Prisma's createManyAndReturn costs several times the CPU of a raw statement).
    const values = Prisma.join(
      batch.map(({ row: r }) => {
        const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : []);
        return Prisma.sql`(${r.id}, ${r.instanceId}, ${r.format}, ${r.tokenHash ?? null}, ${r.userId ?? null}, ${r.clientId}, ${r.appId ?? null},
          ${list(r.scopes)}::text[], ${list(r.audience)}::text[], ${r.expiresAt}::timestamptz, ${r.createdAt ?? new Date()}::timestamptz)`;
      }),
    );
    const insert = query<{ id: string }>(
      this.db,
      statement(Prisma.sql`
        INSERT INTO "OAuthToken" ("id", "instanceId", "format", "tokenHash", "userId", "clientId", "appId", "scopes", "audience", "expiresAt", "createdAt")
        VALUES ${values} ON CONFLICT DO NOTHING RETURNING "id"`),
    );
    insert
      .then(
        (created) => {
          const ids = new Set(created.map((r) => r.id));
          for (const b of batch) b.done(ids.has(b.row.id));
        },
        (err: unknown) => {
          for (const b of batch) b.fail(err);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.flush();
      });
  }
}

const runtimes = new WeakMap<PrismaClient, OAuthRuntime>();
export function registerRuntime(rt: OAuthRuntime): void {
  runtimes.set(rt.db, rt);
}
export function runtimeFor(db: PrismaClient): OAuthRuntime | undefined {
  return runtimes.get(db);
}

// ---------------------------------------------------------------- users

const USER_SELECT = {
  id: true,
  instanceId: true,
  orgId: true,
  type: true,
  state: true,
  username: true,
  givenName: true,
  familyName: true,
  nickName: true,
  displayName: true,
  preferredLanguage: true,
  email: true,
  emailVerified: true,
  phone: true,
  phoneVerified: true,
  updatedAt: true,
  accessTokenType: true,
  org: { select: { state: true } },
  instanceMemberships: { select: { roles: true } },
  orgMemberships: { select: { orgId: true, roles: true } },
} as const;

type UserRow = Prisma.UserGetPayload<{ select: typeof USER_SELECT }>;

export interface UserInfoSource {
  id: string;
  orgId: string;
  username: string;
  givenName: string | null;
  familyName: string | null;
  nickName: string | null;
  displayName: string | null;
  preferredLanguage: string | null;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
  updatedAt: Date;
}

const usable = (u: { state: string; org: { state: string } }) => u.state === "ACTIVE" && u.org.state === "ACTIVE";

function principalOf(u: UserRow, instanceId: string, credentialId: string): Principal {
  return {
    userId: u.id,
    instanceId,
    orgId: u.orgId,
    userType: u.type,
    instanceRoles: u.instanceMemberships.flatMap((m) => m.roles),
    orgRoles: new Map(u.orgMemberships.map((m) => [m.orgId, m.roles])),
    credentialId,
  };
}

// ---------------------------------------------------------------- resolving bearer tokens

interface TokenBase {
  kind: "pat" | "opaque" | "jwt";
  id: string;
  clientId: string;
  appId: string | null;
  scopes: string[];
  audience: string[];
  /** ms since epoch; null for a PAT without expiry. */
  expiresAt: number | null;
  issuedAt: number;
  management: boolean;
}

/** A token standing for a user (PATs, machine users' grants). */
export interface UserToken extends TokenBase {
  subject: "user";
  principal: Principal;
  user: UserInfoSource;
  /** Filled lazily for userinfo/introspection. */
  roles?: Record<string, RoleClaim>;
  /** Filled lazily when the metadata scope was granted; null when the user has none. */
  metadata?: Record<string, string> | null;
}

/**
 * An API application's own token (client_credentials): no user behind it, so
 * no principal. Never carries the management audience; valid while the app,
 * its project and its organization are active.
 */
export interface AppToken extends TokenBase {
  subject: "app";
  orgId: string;
  projectId: string;
}

export type ResolvedToken = UserToken | AppToken;

const tokenKey = (token: string) => createHash("sha256").update(token).digest("base64");

/**
 * Any bearer token (PAT, opaque or JWT access token) → what it stands for, or
 * undefined when it is unknown, expired, revoked, or its user/org is not active.
 */
export async function resolveToken(rt: OAuthRuntime, token: string, now: Date): Promise<ResolvedToken | undefined> {
  if (token.length > MAX_TOKEN_BYTES) return undefined;
  const nowMs = now.getTime();
  let key: string;
  let jwt: { jti: string } | undefined;
  if (token.split(".").length === 3) {
    const jti = await verifyAccessJwt(rt, token, now);
    if (!jti) return undefined;
    key = `j:${jti}`;
    jwt = { jti };
  } else {
    key = `o:${tokenKey(token)}`;
  }
  const cached = rt.tokens.get(key);
  if (cached) return cached.expiresAt !== null && cached.expiresAt <= nowMs ? undefined : cached;
  const gen = rt.tokens.generation();
  let resolved: ResolvedToken | undefined;
  if (jwt) {
    const row = await rt.db.oAuthToken.findUnique({ where: { id: jwt.jti }, include: { user: { select: USER_SELECT } } });
    if (row && row.format === "jwt") resolved = await fromOAuthRow(rt, row, "jwt");
  } else {
    const hash = sha256(token);
    const [pat, oauth] = await Promise.all([
      rt.db.personalAccessToken.findUnique({ where: { tokenHash: hash }, include: { user: { select: USER_SELECT } } }),
      rt.db.oAuthToken.findUnique({ where: { tokenHash: hash }, include: { user: { select: USER_SELECT } } }),
    ]);
    if (pat && pat.instanceId === rt.instanceId && pat.user.instanceId === rt.instanceId && usable(pat.user)) {
      resolved = {
        subject: "user",
        kind: "pat",
        id: pat.id,
        clientId: pat.user.id,
        appId: null,
        scopes: ["openid", SCOPE_MANAGEMENT],
        audience: [MANAGEMENT_AUDIENCE],
        expiresAt: pat.expiresAt?.getTime() ?? null,
        issuedAt: pat.createdAt.getTime(),
        management: true,
        principal: principalOf(pat.user as UserRow, rt.instanceId, pat.id),
        user: pat.user,
      };
    } else if (oauth && oauth.format === "opaque") {
      resolved = await fromOAuthRow(rt, oauth, "opaque");
    }
  }
  if (!resolved) return undefined;
  // App tokens are tagged with their org: every change to an app, its project or its org invalidates by org.
  const tags = resolved.subject === "user" ? { userId: resolved.principal.userId, orgId: resolved.principal.orgId } : { orgId: resolved.orgId };
  rt.tokens.set(key, resolved, gen, tags);
  return resolved.expiresAt !== null && resolved.expiresAt <= nowMs ? undefined : resolved;
}

async function fromOAuthRow(
  rt: OAuthRuntime,
  row: {
    id: string;
    instanceId: string;
    clientId: string;
    appId: string | null;
    scopes: string[];
    audience: string[];
    expiresAt: Date;
    createdAt: Date;
    revokedAt: Date | null;
    user: UserRow | null;
  },
  kind: "opaque" | "jwt",
): Promise<ResolvedToken | undefined> {
  if (row.instanceId !== rt.instanceId || row.revokedAt) return undefined;
  const base = {
    kind,
    id: row.id,
    clientId: row.clientId,
    appId: row.appId,
    scopes: row.scopes,
    audience: row.audience,
    expiresAt: row.expiresAt.getTime(),
    issuedAt: row.createdAt.getTime(),
  };
  if (row.user) {
    if (row.user.instanceId !== rt.instanceId || !usable(row.user)) return undefined;
    return {
      ...base,
      subject: "user",
      management: row.audience.includes(MANAGEMENT_AUDIENCE) && row.scopes.includes(SCOPE_MANAGEMENT),
      principal: principalOf(row.user, rt.instanceId, row.id),
      user: row.user,
    };
  }
  if (!row.appId) return undefined;
  // An API application's own token lives exactly as long as the client may authenticate: deactivating
  // or deleting the app, its project or its org ends it at once (the client record is read fresh, or
  // from the client cache that those changes invalidate by org). Regenerating the secret or removing
  // a key does not: as in Keycloak, Okta or Auth0, a credential rotation leaves issued tokens alone
  // (RFC 6749 ties a token to its grant, not to the credential used), so rotating never causes an outage;
  // a token known to be leaked is revoked (RFC 7009) or the app deactivated.
  const app = await findClient(rt, row.clientId);
  if (app?.kind !== "app" || app.appId !== row.appId || app.appType !== "API" || !app.active || !app.projectId) return undefined;
  return { ...base, subject: "app", management: false, orgId: app.orgId, projectId: app.projectId };
}

/** Signature, issuer, type and lifetime of one of our JWT access tokens → its jti. */
async function verifyAccessJwt(rt: OAuthRuntime, token: string, now: Date): Promise<string | undefined> {
  try {
    const header = decodeProtectedHeader(token);
    if (header.alg !== "RS256" || typeof header.kid !== "string") return undefined;
    const key = await rt.keys.publicKey(header.kid);
    if (!key) return undefined;
    const { payload } = await jwtVerify(token, key, { algorithms: ["RS256"], issuer: rt.issuer, typ: "at+jwt", currentDate: now });
    return typeof payload.jti === "string" ? payload.jti : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- clients

export interface ClientRecord {
  kind: "user" | "app";
  clientId: string;
  /** Machine user id, for user clients. */
  userId?: string;
  orgId: string;
  appId?: string;
  /** For app clients: API apps may use client_credentials; OIDC apps authenticate for introspection and revocation only. */
  appType?: "API" | "OIDC";
  projectId?: string;
  secretHash: Uint8Array | null;
  authMethod?: string;
  accessTokenType: "BEARER" | "JWT";
  active: boolean;
}

async function findClient(rt: OAuthRuntime, clientId: string): Promise<ClientRecord | null> {
  if (clientId.length === 0 || clientId.length > 200) return null;
  const cached = rt.clients.get(clientId);
  if (cached !== undefined) return cached;
  const gen = rt.clients.generation();
  const [app, user] = await Promise.all([
    rt.db.application.findUnique({
      where: { clientId },
      select: {
        id: true,
        instanceId: true,
        orgId: true,
        projectId: true,
        type: true,
        state: true,
        secretHash: true,
        authMethod: true,
        accessTokenType: true,
        project: { select: { state: true, org: { select: { state: true } } } },
      },
    }),
    rt.db.user.findUnique({
      where: { instanceId_usernameLower: { instanceId: rt.instanceId, usernameLower: clientId.toLowerCase() } },
      select: { id: true, username: true, orgId: true, type: true, state: true, secretHash: true, accessTokenType: true, org: { select: { state: true } } },
    }),
  ]);
  let rec: ClientRecord | null = null;
  if (app && app.instanceId === rt.instanceId && (app.type === "API" || app.type === "OIDC")) {
    rec = {
      kind: "app",
      clientId,
      orgId: app.orgId,
      appId: app.id,
      appType: app.type,
      projectId: app.projectId,
      secretHash: app.secretHash,
      authMethod: app.authMethod,
      accessTokenType: app.accessTokenType,
      active: app.state === "ACTIVE" && app.project.state === "ACTIVE" && app.project.org.state === "ACTIVE",
    };
  } else if (user && user.type === "MACHINE") {
    rec = {
      kind: "user",
      // The registered client id (the username as stored), whatever case it was given in: tokens,
      // introspection and revocation compare it.
      clientId: user.username,
      userId: user.id,
      orgId: user.orgId,
      secretHash: user.secretHash,
      accessTokenType: user.accessTokenType,
      active: usable(user),
    };
  }
  // Apps are kept for a second only (their changes do notify, by org; this bounds anything missed).
  rt.clients.set(clientId, rec, gen, { userId: rec?.userId, orgId: rec?.orgId }, rec === null || rec.kind === "app" ? 1_000 : undefined);
  return rec;
}

export interface ClientAuthInput {
  basic?: { clientId: string; secret: string };
  form: Record<string, string | undefined>;
  /** Audiences a client assertion may name (issuer and this endpoint). */
  endpoint: string;
}

/** RFC 6749 §2.3 / RFC 7523 §2.2: exactly one client authentication method. */
export async function authenticateClient(rt: OAuthRuntime, input: ClientAuthInput, now: Date): Promise<ClientRecord> {
  const { form } = input;
  const methods = [input.basic !== undefined, form.client_secret !== undefined, form.client_assertion !== undefined].filter(Boolean).length;
  if (methods === 0) throw invalidClient("no client authentication");
  if (methods > 1) throw new OAuthError("invalid_request", "more than one client authentication method");
  if (input.basic) {
    if (form.client_id !== undefined && form.client_id !== input.basic.clientId)
      throw new OAuthError("invalid_request", "client_id differs from the Basic credentials");
    return checkSecret(await findClient(rt, input.basic.clientId), input.basic.secret, "client_secret_basic");
  }
  if (form.client_secret !== undefined) {
    if (!form.client_id) throw new OAuthError("invalid_request", "client_id is required with client_secret");
    return checkSecret(await findClient(rt, form.client_id), form.client_secret, "client_secret_post");
  }
  if (form.client_assertion_type !== CLIENT_ASSERTION_TYPE) throw new OAuthError("invalid_request", `client_assertion_type must be ${CLIENT_ASSERTION_TYPE}`);
  const assertion = form.client_assertion as string;
  let claims: Record<string, unknown>;
  let kid: string;
  try {
    ({ kid } = assertionHeader(assertion));
    claims = unverifiedClaims(assertion);
  } catch {
    throw invalidClient("malformed client assertion");
  }
  if (typeof claims.iss !== "string" || claims.iss !== claims.sub) throw invalidClient("the client assertion's iss and sub must both be the client id");
  if (form.client_id !== undefined && form.client_id !== claims.iss) throw invalidClient("client_id differs from the assertion's issuer");
  const client = await findClient(rt, claims.iss);
  if (!client?.active) throw invalidClient();
  if (client.kind === "app" && client.authMethod !== "private_key_jwt") throw invalidClient("the client does not use private_key_jwt");
  const pem =
    client.kind === "app"
      ? await rt.db.appKey.findFirst({ where: { id: kid, appId: client.appId }, select: { publicKey: true, expiresAt: true } })
      : await rt.db.machineKey.findFirst({ where: { id: kid, userId: client.userId }, select: { publicKey: true, expiresAt: true } });
  if (!pem || (pem.expiresAt && pem.expiresAt.getTime() <= now.getTime())) throw invalidClient("unknown or expired key");
  try {
    const owner = client.kind === "app" ? { appId: client.appId as string } : { userId: client.userId as string };
    // OIDC Core §9: the audience SHOULD be the token endpoint, whichever endpoint the client authenticates at.
    const audiences = [...new Set([rt.issuer, `${rt.issuer}/oauth/v2/token`, input.endpoint])];
    await verifyAssertion(rt, assertion, kid, pem.publicKey, now, audiences, claims.iss, owner);
  } catch (err) {
    if (err instanceof OAuthError) throw invalidClient(err.description);
    throw err;
  }
  return client;
}

function checkSecret(client: ClientRecord | null, secret: string, method: string): ClientRecord {
  // Compare against a dummy when there is nothing to compare, so timing does not tell which ids exist.
  const expected = client?.secretHash ?? new Uint8Array(32);
  const ok = timingSafeEqual(sha256(secret), expected.length === 32 ? expected : new Uint8Array(32));
  if (!client?.secretHash || !ok || !client.active) throw invalidClient();
  if (client.kind === "app" && client.authMethod !== method && !(client.authMethod === "client_secret_basic" && method === "client_secret_post")) {
    throw invalidClient(`the client is not registered for ${method}`);
  }
  return client;
}

// ---------------------------------------------------------------- assertions

function assertionHeader(assertion: string): { kid: string } {
  if (assertion.length > MAX_ASSERTION_BYTES) throw new Error("too long");
  const header = decodeProtectedHeader(assertion);
  if (header.alg !== "RS256") throw new Error("alg");
  if (typeof header.kid !== "string" || header.kid.length === 0 || header.kid.length > 100) throw new Error("kid");
  return { kid: header.kid };
}

function unverifiedClaims(jws: string): Record<string, unknown> {
  const part = jws.split(".")[1];
  if (!part) throw new Error("malformed");
  const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown;
  if (!claims || typeof claims !== "object" || Array.isArray(claims)) throw new Error("malformed");
  return claims as Record<string, unknown>;
}

const importedKeys = new Map<string, KeyObject>();
function publicKeyObject(id: string, pem: string): KeyObject {
  const k = `${id}\n${pem}`;
  let key = importedKeys.get(k);
  if (!key) {
    key = createPublicKey(pem);
    if (importedKeys.size > 10_000) importedKeys.clear();
    importedKeys.set(k, key);
  }
  return key;
}

/**
 * Signature (RS256 only), exp in the future, iat present, not in the future
 * beyond the skew and at most an hour old, aud naming one of `audiences`,
 * and single use: the jti (or, without one, the assertion itself) is recorded
 * until the assertion expires, in the database so every replica sees it.
 */
async function verifyAssertion(
  rt: OAuthRuntime,
  assertion: string,
  kid: string,
  pem: string,
  now: Date,
  audiences: string[],
  subject: string,
  /** Whose assertion it is: the marker row belongs to the user or the app (and goes with it). */
  owner: { userId: string; appId?: undefined } | { appId: string; userId?: undefined },
  deferMarker?: (row: TokenRow) => void,
): Promise<Record<string, unknown>> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(assertion, publicKeyObject(kid, pem), {
      algorithms: ["RS256"],
      audience: audiences,
      issuer: subject,
      subject,
      currentDate: now,
      clockTolerance: SKEW_S,
      requiredClaims: ["exp", "iat"],
    }));
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw invalidGrant("the assertion has expired");
    if (err instanceof joseErrors.JWTClaimValidationFailed) throw invalidGrant(`the assertion's ${err.claim} claim is not acceptable`);
    throw invalidGrant("the assertion's signature does not verify");
  }
  const nowS = Math.floor(now.getTime() / 1000);
  const iat = payload.iat as number;
  const exp = payload.exp as number;
  if (iat > nowS + SKEW_S) throw invalidGrant("the assertion was issued in the future");
  if (nowS - iat > MAX_ASSERTION_AGE_S) throw invalidGrant("the assertion is older than one hour");
  // Without a jti the assertion is identified by its signing input (header and claims): the encoded
  // signature is malleable (base64url padding bits are ignored on decoding), the signed part is not.
  const signed = assertion.slice(0, assertion.lastIndexOf("."));
  const marker = createHash("sha256")
    .update(`${subject}\n${typeof payload.jti === "string" ? payload.jti : signed}`)
    .digest("base64url");
  const row: TokenRow = {
    id: `assertion:${marker}`,
    instanceId: rt.instanceId,
    format: "assertion",
    userId: owner.userId ?? null,
    appId: owner.appId ?? null,
    clientId: subject,
    // Kept while the assertion could still be accepted: until exp (with the skew), but never past the
    // one-hour age limit, so a far-future exp does not keep markers for years.
    expiresAt: new Date(Math.max(Math.min(exp + SKEW_S, iat + MAX_ASSERTION_AGE_S + 1), nowS + SKEW_S) * 1000),
    createdAt: now,
  };
  // The JWT profile grant writes the marker in the same INSERT as the token (and refuses if it existed).
  if (deferMarker) deferMarker(row);
  else if (!(await rt.markers.insert(row))) throw invalidGrant("the assertion was already used");
  return payload;
}

// ---------------------------------------------------------------- scopes and issuing

export interface GrantedScopes {
  scopes: string[];
  audience: string[];
  projectIds: string[];
}

/** Unknown scopes are dropped; project audiences must name projects of this instance. */
export async function grantScopes(
  rt: OAuthRuntime,
  requested: string | undefined,
  user: { orgId: string },
  clientId: string,
  appProjectId?: string,
): Promise<GrantedScopes> {
  const raw = (requested ?? "").split(" ").filter(Boolean).slice(0, 100);
  const scopes: string[] = [];
  const wantedProjects: string[] = [];
  for (const s of raw) {
    if (scopes.includes(s)) continue;
    if (SIMPLE_SCOPES.has(s) || s === SCOPE_MANAGEMENT || ROLE_SCOPE.test(s)) {
      scopes.push(s);
      continue;
    }
    const project = PROJECT_AUD.exec(s)?.[1];
    if (project) {
      wantedProjects.push(project);
      scopes.push(s);
    } else if (ORG_SCOPE.exec(s)?.[1] === user.orgId) {
      scopes.push(s);
    }
  }
  const projectIds: string[] = [];
  // A machine user's username or id is chosen by whoever creates it: it must not put a project id or
  // the management audience in the token's aud (resource servers of that project would accept it).
  const clientMayBeProject = PROJECT_ID_SHAPE.test(clientId);
  let clientIsAmbiguous = clientId === MANAGEMENT_AUDIENCE;
  if (wantedProjects.length || clientMayBeProject) {
    const found = await projectsOf(rt, clientMayBeProject ? [...wantedProjects, clientId] : wantedProjects);
    const ok = new Set(found.map((p) => p.id));
    for (const p of wantedProjects) if (ok.has(p)) projectIds.push(p);
    if (ok.has(clientId)) clientIsAmbiguous = true;
  }
  // Nor an application's client id (a user id may be chosen at creation, "@" included).
  if (!clientIsAmbiguous && APP_CLIENT_ID_SHAPE.test(clientId) && (await rt.db.application.findUnique({ where: { clientId }, select: { id: true } }))) {
    clientIsAmbiguous = true;
  }
  const kept = scopes.filter((s) => {
    const m = s === SCOPE_MANAGEMENT ? null : PROJECT_AUD.exec(s);
    return !m || projectIds.includes(m[1] as string);
  });
  if (appProjectId && !projectIds.includes(appProjectId)) projectIds.unshift(appProjectId);
  const audience = [...(clientIsAmbiguous ? [] : [clientId]), ...projectIds];
  if (kept.includes(SCOPE_MANAGEMENT)) audience.push(MANAGEMENT_AUDIENCE);
  return { scopes: kept, audience: [...new Set(audience)], projectIds };
}

/**
 * Scopes of an API application's own token: only what means something without
 * a user. The audience is fixed to the app's project and itself, never the
 * management API (an app has no permissions there) nor other projects (an app
 * cannot widen its reach across projects or organizations); the scopes naming
 * exactly these are echoed, everything else (openid, profile, email, phone,
 * offline_access, metadata and role scopes, the management audience) is
 * dropped, as unknown scopes are.
 */
export function grantAppScopes(requested: string | undefined, app: { clientId: string; orgId: string; projectId: string }): GrantedScopes {
  const raw = new Set((requested ?? "").split(" ").filter(Boolean).slice(0, 100));
  const scopes = [...raw].filter((s) => PROJECT_AUD.exec(s)?.[1] === app.projectId || ORG_SCOPE.exec(s)?.[1] === app.orgId);
  return { scopes, audience: [app.projectId, app.clientId], projectIds: [app.projectId] };
}

/** The role claims a token with these scopes carries. */
/** tokenRoleClaims for a token about to be issued, cached per user, scopes and audience (see OAuthRuntime.roleClaims). */
async function issuanceRoleClaims(rt: OAuthRuntime, userId: string, orgId: string | undefined, granted: GrantedScopes): Promise<Record<string, unknown>> {
  if (!orgId) return tokenRoleClaims(rt, userId, granted.scopes, granted.audience);
  const key = `${userId}\n${granted.scopes.join(" ")}\n${granted.audience.join(" ")}`;
  const hit = rt.roleClaims.get(key);
  if (hit) return hit;
  const generation = rt.roleClaims.generation();
  const claims = await tokenRoleClaims(rt, userId, granted.scopes, granted.audience);
  rt.roleClaims.set(key, claims, generation, { userId, orgId });
  return claims;
}

/** The instance's projects among `ids` with their role-assertion setting (one prepared statement, off Prisma's runtime). */
function projectsOf(rt: OAuthRuntime, ids: string[]): Promise<{ id: string; projectRoleAssertion: boolean }[]> {
  return query<{ id: string; projectRoleAssertion: boolean }>(
    rt.db,
    statement(
      Prisma.sql`SELECT "id", "projectRoleAssertion" FROM "Project" WHERE "id" = ANY(${ids}::text[]) AND "instanceId" = ${rt.instanceId}`,
      "token_projects",
    ),
  );
}

export async function tokenRoleClaims(
  rt: OAuthRuntime,
  userId: string,
  scopes: readonly string[],
  audience: readonly string[],
  primaryProjectId?: string,
): Promise<Record<string, unknown>> {
  const projectIds = audience.filter((a) => a !== MANAGEMENT_AUDIENCE);
  if (projectIds.length === 0) return {};
  const projects = await projectsOf(rt, projectIds);
  const allRoles = scopes.includes("urn:svc:iam:org:projects:roles");
  const roleFilter = scopes.map((s) => ROLE_SCOPE.exec(s)?.[1]).filter((k): k is string => k !== undefined);
  const asserted = projects.filter((p) => p.projectRoleAssertion || allRoles || roleFilter.length > 0).map((p) => p.id);
  if (asserted.length === 0) return {};
  const claims = await roleClaims(rt.db, rt.instanceId, userId, asserted);
  const out: Record<string, unknown> = {};
  const primary = primaryProjectId ?? projectIds.find((id) => projects.some((p) => p.id === id));
  for (const id of asserted) {
    let claim = claims.get(id) ?? {};
    if (roleFilter.length && !allRoles) claim = Object.fromEntries(Object.entries(claim).filter(([k]) => roleFilter.includes(k)));
    if (Object.keys(claim).length === 0) continue;
    out[`urn:svc:iam:org:project:${id}:roles`] = claim;
    if (id === primary) out["urn:svc:iam:org:project:roles"] = claim;
  }
  return out;
}

/**
 * The `urn:svc:iam:user:metadata` claim: every metadata key of the user with
 * its value base64-encoded (ZITADEL's shape); null when the user has none.
 */
async function metadataClaim(rt: OAuthRuntime, userId: string): Promise<Record<string, string> | null> {
  const rows = await rt.db.userMetadata.findMany({ where: { userId }, select: { key: true, value: true }, orderBy: { key: "asc" } });
  if (rows.length === 0) return null;
  return Object.fromEntries(rows.map((r) => [r.key, Buffer.from(r.value).toString("base64")]));
}

/** OpenID Connect standard claims by scope. */
export function userClaims(user: UserInfoSource, scopes: readonly string[]): Record<string, unknown> {
  const c: Record<string, unknown> = { sub: user.id };
  if (scopes.includes("profile")) {
    const name = user.displayName ?? ([user.givenName, user.familyName].filter(Boolean).join(" ") || undefined);
    Object.assign(c, {
      name,
      given_name: user.givenName ?? undefined,
      family_name: user.familyName ?? undefined,
      nickname: user.nickName ?? undefined,
      preferred_username: user.username,
      locale: user.preferredLanguage ?? undefined,
      updated_at: Math.floor(user.updatedAt.getTime() / 1000),
    });
  }
  if (scopes.includes("email") && user.email) Object.assign(c, { email: user.email, email_verified: user.emailVerified });
  if (scopes.includes("phone") && user.phone) Object.assign(c, { phone_number: user.phone, phone_number_verified: user.phoneVerified });
  for (const k of Object.keys(c)) if (c[k] === undefined) delete c[k];
  return c;
}

/**
 * The `scope` of a response or token: RFC 6749 §3.3 makes a scope at least one
 * scope token, so a grant of none leaves the member out (JSON drops undefined).
 */
function scopeValue(scopes: readonly string[]): string | undefined {
  return scopes.length ? scopes.join(" ") : undefined;
}

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope?: string;
  id_token?: string;
}

/**
 * Issues an access token (opaque or JWT per `tokenType`) and, with `openid`
 * and a user, an ID token. Without `userId` the token is the app's own
 * (`appId` required): its subject is the client id and it carries no user
 * or role claims.
 */
export async function issueTokens(
  rt: OAuthRuntime,
  input: {
    userId?: string;
    /** The user's organization (what cached role claims are tagged with). */
    orgId?: string;
    clientId: string;
    appId?: string;
    granted: GrantedScopes;
    lifetime: number;
    tokenType: "BEARER" | "JWT";
    now: Date;
    /** A used-assertion marker to write with the token; the grant fails if it already exists. */
    marker?: TokenRow;
  },
): Promise<TokenResponse> {
  const { granted, now } = input;
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + input.lifetime;
  const expiresAt = new Date(exp * 1000);
  const id = newId();
  const userId = input.userId;
  if (!userId && !input.appId) throw new Error("a token needs a user or an app");
  const needUser = userId !== undefined && granted.scopes.includes("openid");
  const [user, roles, metadata] = await Promise.all([
    needUser ? rt.db.user.findUnique({ where: { id: userId }, select: USER_SELECT }) : undefined,
    userId && (input.tokenType === "JWT" || needUser) ? issuanceRoleClaims(rt, userId, input.orgId, granted) : {},
    // In the ID token only (as userinfo and introspection give it); JWT access tokens stay small.
    needUser && granted.scopes.includes(SCOPE_METADATA) ? metadataClaim(rt, userId) : null,
  ]);
  let accessToken: string;
  const row = {
    id,
    instanceId: rt.instanceId,
    userId: userId ?? null,
    clientId: input.clientId,
    appId: input.appId ?? null,
    scopes: granted.scopes,
    audience: granted.audience,
    expiresAt,
    createdAt: now,
  };
  if (input.tokenType === "JWT") {
    accessToken = await rt.keys.sign(
      {
        iss: rt.issuer,
        sub: userId ?? input.clientId,
        aud: granted.audience,
        client_id: input.clientId,
        scope: scopeValue(granted.scopes),
        iat,
        nbf: iat,
        exp,
        jti: id,
        ...roles,
      },
      "at+jwt",
    );
    await stored(rt, { ...row, format: "jwt", tokenHash: null }, input.marker);
  } else {
    accessToken = newOpaqueToken();
    await stored(rt, { ...row, format: "opaque", tokenHash: sha256(accessToken) }, input.marker);
  }
  const res: TokenResponse = { access_token: accessToken, token_type: "Bearer", expires_in: input.lifetime, scope: scopeValue(granted.scopes) };
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
  const [token, fresh] = await rt.writer.insertMany(marker ? [row, marker] : [row]);
  // A replayed assertion: the token row just written is never handed out (and is purged after it expires).
  if (marker && !fresh) throw invalidGrant("the assertion was already used");
  if (!token) throw new Error("token id collision");
}

/** Client credentials for a machine user or an API application (the client itself is the subject). */
export async function clientCredentialsGrant(rt: OAuthRuntime, client: ClientRecord, scope: string | undefined, now: Date): Promise<TokenResponse> {
  if (client.kind === "app") {
    // OIDC apps act for users (authorization code flow), never on their own behalf.
    if (client.appType !== "API" || !client.appId || !client.projectId) {
      throw new OAuthError("unauthorized_client", "only API applications and machine users may use the client_credentials grant");
    }
    return issueTokens(rt, {
      clientId: client.clientId,
      appId: client.appId,
      granted: grantAppScopes(scope, { clientId: client.clientId, orgId: client.orgId, projectId: client.projectId }),
      lifetime: rt.lifetimes.clientCredentials,
      tokenType: client.accessTokenType,
      now,
    });
  }
  if (!client.userId) throw new OAuthError("unauthorized_client", "this client may not use the client_credentials grant");
  const granted = await grantScopes(rt, scope, { orgId: client.orgId }, client.clientId);
  return issueTokens(rt, {
    userId: client.userId,
    orgId: client.orgId,
    clientId: client.clientId,
    granted,
    lifetime: rt.lifetimes.clientCredentials,
    tokenType: client.accessTokenType,
    now,
  });
}

interface MachineKeyRecord {
  publicKey: string;
  expiresAt: Date | null;
  user: { id: string; orgId: string; type: string; state: string; accessTokenType: "BEARER" | "JWT"; org: { state: string } };
}

async function machineKey(rt: OAuthRuntime, kid: string, userId: string): Promise<MachineKeyRecord | null> {
  const cacheKey = `${kid}\n${userId}`;
  const cached = rt.machineKeys.get(cacheKey);
  if (cached !== undefined) return cached;
  const gen = rt.machineKeys.generation();
  const key = await rt.db.machineKey.findFirst({
    where: { id: kid, userId, instanceId: rt.instanceId },
    select: {
      publicKey: true,
      expiresAt: true,
      user: { select: { id: true, orgId: true, type: true, state: true, accessTokenType: true, org: { select: { state: true } } } },
    },
  });
  // Unknown keys are remembered briefly only (a key added a moment later must work).
  rt.machineKeys.set(cacheKey, key, gen, { userId: key?.user.id, orgId: key?.user.orgId }, key ? undefined : 1_000);
  return key;
}

/** RFC 7523 §2.1 with our rules: iss = sub = machine user id, signed by one of its keys. */
export async function jwtBearerGrant(rt: OAuthRuntime, assertion: string | undefined, scope: string | undefined, now: Date): Promise<TokenResponse> {
  if (!assertion) throw new OAuthError("invalid_request", "assertion is required");
  let kid: string;
  let claims: Record<string, unknown>;
  try {
    ({ kid } = assertionHeader(assertion));
    claims = unverifiedClaims(assertion);
  } catch {
    throw invalidGrant("the assertion is not an RS256 JWT with a kid");
  }
  if (typeof claims.sub !== "string" || claims.sub !== claims.iss) throw invalidGrant("the assertion's iss and sub must both be the user id");
  const key = await machineKey(rt, kid, claims.sub);
  if (!key || (key.expiresAt && key.expiresAt.getTime() <= now.getTime())) throw invalidGrant("unknown, removed or expired key");
  if (key.user.type !== "MACHINE" || !usable(key.user)) throw invalidGrant("the user is not active");
  let marker: TokenRow | undefined;
  await verifyAssertion(rt, assertion, kid, key.publicKey, now, [rt.issuer, `${rt.issuer}/oauth/v2/token`], claims.sub, { userId: key.user.id }, (m) => {
    marker = m;
  });
  const granted = await grantScopes(rt, scope, { orgId: key.user.orgId }, key.user.id);
  return issueTokens(rt, {
    userId: key.user.id,
    orgId: key.user.orgId,
    clientId: key.user.id,
    granted,
    lifetime: rt.lifetimes.jwtProfile,
    tokenType: key.user.accessTokenType,
    now,
    marker,
  });
}

/**
 * Whether the token was issued to this client, by identity rather than by client id string: a machine
 * user's tokens (client credentials or JWT profile) are its own, an app's own tokens are the app's.
 */
function issuedTo(t: ResolvedToken, caller: ClientRecord): boolean {
  if (t.subject === "user") return caller.kind === "user" && caller.userId === t.principal.userId && t.appId === null;
  return caller.kind === "app" && caller.appId !== undefined && t.appId === caller.appId;
}

/** RFC 7662: what an authenticated client may learn about a token. */
export async function introspect(rt: OAuthRuntime, caller: ClientRecord, token: string | undefined, now: Date): Promise<Record<string, unknown>> {
  // RFC 7662 §2.1: the token is required; a request without one is malformed (RFC 6749 §5.2 invalid_request).
  if (!token) throw new OAuthError("invalid_request", "token is required");
  const t = await resolveToken(rt, token, now);
  if (!t || t.kind === "pat") return { active: false };
  // A client sees its own tokens and (an application) tokens meant for its project. Client ids are not
  // matched against the audience: a machine user's id or username is chosen by its creator and may
  // spell a project id or the management audience.
  const mine = issuedTo(t, caller) || (caller.kind === "app" && caller.projectId !== undefined && t.audience.includes(caller.projectId));
  if (!mine) return { active: false };
  const common = {
    active: true,
    scope: scopeValue(t.scopes),
    client_id: t.clientId,
    token_type: "Bearer",
    exp: t.expiresAt === null ? undefined : Math.floor(t.expiresAt / 1000),
    iat: Math.floor(t.issuedAt / 1000),
    nbf: Math.floor(t.issuedAt / 1000),
  };
  // An app's own token: the app is the subject, there are no user claims.
  if (t.subject === "app") return { ...common, sub: t.clientId, aud: t.audience, iss: rt.issuer, jti: t.id };
  const [roles, metadata] = await Promise.all([rolesOf(rt, t, caller.projectId), metadataOf(rt, t)]);
  return {
    ...common,
    sub: t.principal.userId,
    aud: t.audience,
    iss: rt.issuer,
    jti: t.id,
    username: t.user.username,
    ...userClaims(t.user, t.scopes),
    ...roles,
    ...metadata,
  };
}

/**
 * The token's role claims, kept on the cached token. `urn:svc:iam:org:project:roles`
 * is the claim of the asking project (`primary`, an introspecting API app's
 * project) or of the first project of the audience: derived per call, so that
 * the cache serves every project alike.
 */
async function rolesOf(rt: OAuthRuntime, t: UserToken, primary?: string): Promise<Record<string, unknown>> {
  if (!t.roles) t.roles = (await tokenRoleClaims(rt, t.principal.userId, t.scopes, t.audience)) as Record<string, RoleClaim>;
  if (!primary) return t.roles;
  const { [PRIMARY_ROLES_CLAIM]: _default, ...perProject } = t.roles;
  const own = t.roles[`urn:svc:iam:org:project:${primary}:roles`];
  return own ? { ...perProject, [PRIMARY_ROLES_CLAIM]: own } : perProject;
}

const PRIMARY_ROLES_CLAIM = "urn:svc:iam:org:project:roles";

/**
 * The metadata claim when the scope was granted: one query, kept on the cached
 * token (metadata changes invalidate the user's cached tokens).
 */
async function metadataOf(rt: OAuthRuntime, t: UserToken): Promise<Record<string, unknown>> {
  if (!t.scopes.includes(SCOPE_METADATA)) return {};
  if (t.metadata === undefined) t.metadata = await metadataClaim(rt, t.principal.userId);
  return t.metadata ? { [SCOPE_METADATA]: t.metadata } : {};
}

/** OIDC userinfo: needs `openid` and a user; claims by scope plus role and metadata claims. */
export async function userinfo(rt: OAuthRuntime, t: UserToken): Promise<Record<string, unknown>> {
  const [roles, metadata] = await Promise.all([rolesOf(rt, t), metadataOf(rt, t)]);
  return { ...userClaims(t.user, t.scopes), ...roles, ...metadata };
}

/** RFC 7009. Unknown tokens are fine; a token of another client is refused. */
export async function revoke(rt: OAuthRuntime, caller: ClientRecord, token: string | undefined, now: Date): Promise<void> {
  if (!token) throw new OAuthError("invalid_request", "token is required");
  const t = await resolveToken(rt, token, now);
  if (!t || t.kind === "pat") return;
  if (!issuedTo(t, caller)) throw new OAuthError("unauthorized_client", "the token was not issued to this client");
  await rt.db.$transaction(async (tx) => {
    await tx.oAuthToken.updateMany({ where: { id: t.id, revokedAt: null }, data: { revokedAt: now } });
    await invalidateAuth(tx, t.subject === "user" ? { userId: t.principal.userId } : { orgId: t.orgId });
  });
}
