// Applications of a project: API clients (client credentials) and OIDC
// clients. Client ids are generated; client secrets (256 random bits) are
// returned once and stored as SHA-256; keys for private_key_jwt keep only
// their public half. The token service reads Application/AppKey rows
// directly: `authMethod` is one of AUTH_METHODS, `secretHash` is set only for
// the secret methods, and `config` is parsed with parseAppConfig.

import type { Prisma } from "../../../gen/prisma/client.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { Store } from "../../store/index.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { keyMaterial } from "../identity/key-material.js";
import { newId } from "../ids.js";
import { inCreationOrder, page, type TextMatch } from "../list.js";
import { isUniqueViolation } from "../orgs/members.js";
import { orgSlug } from "../orgs/orgs.js";
import { type ProjectView, stringFilter, targetProject, validText } from "./projects.js";
import { changeState } from "./state-change.js";

export const AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt", "none"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];
export type AccessTokenType = "BEARER" | "JWT";
export type AppState = "ACTIVE" | "INACTIVE";
export type OidcAppType = "web" | "user_agent" | "native";
export const OIDC_GRANT_TYPES = ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"] as const;
export type OidcGrantType = (typeof OIDC_GRANT_TYPES)[number];

export interface ApiAppConfig {
  kind: "api";
}

export interface OidcAppConfig {
  kind: "oidc";
  appType: OidcAppType;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: OidcGrantType[];
  responseTypes: "code"[];
  idTokenRoleAssertion: boolean;
  idTokenUserinfoAssertion: boolean;
  devMode: boolean;
  /** True for public clients (auth method none). */
  pkceRequired: boolean;
}

/** What Application.config holds. */
export type AppConfig = ApiAppConfig | OidcAppConfig;

/** What a caller asks for; validated into the columns and the config by validateSettings. */
export type AppSettings =
  | { kind: "api"; authMethod?: "client_secret_basic" | "private_key_jwt"; accessTokenType?: AccessTokenType }
  | {
      kind: "oidc";
      appType?: OidcAppType;
      authMethod?: AuthMethod;
      accessTokenType?: AccessTokenType;
      redirectUris: string[];
      postLogoutRedirectUris: string[];
      grantTypes: OidcGrantType[];
      responseTypes: "code"[];
      idTokenRoleAssertion: boolean;
      idTokenUserinfoAssertion: boolean;
      devMode: boolean;
    };

export interface AppView {
  id: string;
  projectId: string;
  orgId: string;
  name: string;
  state: AppState;
  clientId: string;
  hasSecret: boolean;
  authMethod: AuthMethod;
  accessTokenType: AccessTokenType;
  config: AppConfig;
  createdAt: Date;
  updatedAt: Date;
}

export interface AppKeyView {
  id: string;
  appId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** The key file of an application key, as the client downloads it. */
export interface AppKeyFile {
  type: "application";
  keyId: string;
  key: string;
  appId: string;
  clientId: string;
  expirationDate?: string;
}

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

const appNotFound = () => notFound("Errors.App.NotFound", "application not found");
const SECRET_METHODS: readonly AuthMethod[] = ["client_secret_basic", "client_secret_post"];
const MAX_URIS = 20;
const MAX_URI_LENGTH = 2000;
const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

// ---------------------------------------------------------------- validation

function uriError(field: string, id: string, message: string) {
  return invalidArgument(`Errors.App.${id}`, `${field}: ${message}`, { field });
}

/**
 * Absolute, no fragment (RFC 6749 §3.1.2). https, except: anything in dev
 * mode; for native apps loopback http (RFC 8252 §7.3) and private-use
 * schemes named after a reversed domain (RFC 8252 §7.1).
 */
function validUri(uri: string, field: string, appType: OidcAppType, devMode: boolean): string {
  if (!uri || uri.length > MAX_URI_LENGTH) throw uriError(field, "Uri.Invalid", `URIs must have 1 to ${MAX_URI_LENGTH} characters`);
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw uriError(field, "Uri.Invalid", `${uri} is not an absolute URI`);
  }
  if (u.hash || uri.includes("#")) throw uriError(field, "Uri.Fragment", `${uri} must not contain a fragment`);
  const scheme = u.protocol.slice(0, -1);
  if (["javascript", "data", "file", "vbscript", "blob"].includes(scheme)) throw uriError(field, "Uri.Scheme", `scheme ${scheme} is not allowed`);
  if (scheme === "https" || devMode) return uri;
  if (scheme === "http") {
    if (appType === "native" && LOOPBACK.has(u.hostname)) return uri;
    throw uriError(field, "Uri.HttpsRequired", `${uri} must use https (http only for native apps on loopback, or in dev mode)`);
  }
  if (appType === "native" && scheme.includes(".")) return uri;
  throw uriError(field, "Uri.Scheme", `${uri}: custom schemes are for native apps and must be a reversed domain name (e.g. com.example.app)`);
}

function validUris(uris: readonly string[], field: string, appType: OidcAppType, devMode: boolean): string[] {
  if (uris.length > MAX_URIS) throw uriError(field, "Uri.TooMany", `at most ${MAX_URIS} URIs`);
  return [...new Set(uris.map((u) => validUri(u, field, appType, devMode)))];
}

export function validateSettings(s: AppSettings): { type: "API" | "OIDC"; authMethod: AuthMethod; accessTokenType: AccessTokenType; config: AppConfig } {
  if (s.kind === "api") {
    return { type: "API", authMethod: s.authMethod ?? "client_secret_basic", accessTokenType: s.accessTokenType ?? "BEARER", config: { kind: "api" } };
  }
  const appType = s.appType ?? "web";
  const authMethod = s.authMethod ?? (appType === "web" ? "client_secret_basic" : "none");
  if (appType === "user_agent" && authMethod !== "none") {
    throw invalidArgument("Errors.App.AuthMethod.PublicClient", "user agent apps are public clients: auth method must be none (PKCE)", {
      field: "auth_method_type",
    });
  }
  if (authMethod === "none" && appType === "web") {
    throw invalidArgument("Errors.App.AuthMethod.NoneForWeb", "auth method none (PKCE) is for native and user agent apps", { field: "auth_method_type" });
  }
  const grantTypes = [...new Set(s.grantTypes.length ? s.grantTypes : (["authorization_code"] as OidcGrantType[]))];
  if (grantTypes.includes("refresh_token") && grantTypes.length === 1) {
    throw invalidArgument("Errors.App.GrantTypes.RefreshAlone", "refresh_token needs authorization_code or device_code as well", { field: "grant_types" });
  }
  const hasCode = grantTypes.includes("authorization_code");
  const responseTypes = [...new Set(s.responseTypes.length ? s.responseTypes : hasCode ? (["code"] as "code"[]) : [])];
  if (hasCode !== responseTypes.includes("code")) {
    throw invalidArgument("Errors.App.ResponseTypes.Mismatch", "response type code goes with the authorization_code grant type, and only with it", {
      field: "response_types",
    });
  }
  const redirectUris = validUris(s.redirectUris, "redirect_uris", appType, s.devMode);
  if (hasCode && redirectUris.length === 0) {
    throw invalidArgument("Errors.App.RedirectUris.Missing", "the authorization_code grant needs at least one redirect URI", { field: "redirect_uris" });
  }
  const config: OidcAppConfig = {
    kind: "oidc",
    appType,
    redirectUris,
    postLogoutRedirectUris: validUris(s.postLogoutRedirectUris, "post_logout_redirect_uris", appType, s.devMode),
    grantTypes,
    responseTypes,
    idTokenRoleAssertion: s.idTokenRoleAssertion,
    idTokenUserinfoAssertion: s.idTokenUserinfoAssertion,
    devMode: s.devMode,
    pkceRequired: authMethod === "none",
  };
  return { type: "OIDC", authMethod, accessTokenType: s.accessTokenType ?? "BEARER", config };
}

/** Reads Application.config as stored by this module; throws on anything else (a corrupt row is an internal error). */
export function parseAppConfig(json: unknown): AppConfig {
  const c = json as Partial<OidcAppConfig> | { kind?: string } | null;
  if (c?.kind === "api") return { kind: "api" };
  if (c?.kind === "oidc" && "redirectUris" in c && Array.isArray(c.redirectUris) && Array.isArray(c.grantTypes)) return c as OidcAppConfig;
  throw new Error("unreadable application config");
}

// ---------------------------------------------------------------- access

const APP_SELECT = {
  id: true,
  projectId: true,
  orgId: true,
  name: true,
  state: true,
  clientId: true,
  secretHash: true,
  authMethod: true,
  accessTokenType: true,
  config: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.ApplicationSelect;

function toView(row: Prisma.ApplicationGetPayload<{ select: typeof APP_SELECT }>): AppView {
  const { secretHash, config, authMethod, ...rest } = row;
  return { ...rest, authMethod: authMethod as AuthMethod, hasSecret: secretHash !== null, config: parseAppConfig(config) };
}

async function targetApp(
  ctx: Ctx,
  projectId: string,
  appId: string,
  permission: "project.app.read" | "project.app.write",
): Promise<{ project: ProjectView; app: AppView }> {
  const project = await targetProject(ctx, projectId, permission);
  const row = await ctx.db.application.findFirst({ where: { id: appId ?? "", projectId: project.id }, select: APP_SELECT });
  if (!row) throw appNotFound();
  return { project, app: toView(row) };
}

function nameTaken(err: unknown): unknown {
  return isUniqueViolation(err) ? alreadyExists("Errors.App.AlreadyExists", "the project already has an application with this name") : err;
}

// ---------------------------------------------------------------- applications

export async function createApp(
  ctx: Ctx,
  input: { projectId: string; name: string; settings: AppSettings },
): Promise<{ id: string; clientId: string; clientSecret?: string; createdAt: Date }> {
  const project = await targetProject(ctx, input.projectId, "project.app.write");
  const name = validText(input.name, "name", "Errors.App.Name", { required: true }) as string;
  const v = validateSettings(input.settings);
  const id = newId();
  const clientId = `${id}@${orgSlug(project.name)}`;
  const clientSecret = SECRET_METHODS.includes(v.authMethod) ? newOpaqueToken() : undefined;
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.db.application.create({
        data: {
          id,
          instanceId: ctx.instanceId,
          projectId: project.id,
          orgId: project.orgId,
          name,
          type: v.type,
          clientId,
          secretHash: clientSecret ? sha256(clientSecret) : null,
          authMethod: v.authMethod,
          accessTokenType: v.accessTokenType,
          config: v.config as unknown as Prisma.InputJsonValue,
          createdAt: now,
          updatedAt: now,
        },
      });
      await recordEvent(ctx, tx, {
        aggregateType: "project",
        aggregateId: project.id,
        orgId: project.orgId,
        type: "project.app.added",
        payload: { appId: id, name, clientId, type: v.type, authMethod: v.authMethod, accessTokenType: v.accessTokenType, config: v.config },
      });
    });
  } catch (err) {
    throw nameTaken(err);
  }
  return { id, clientId, clientSecret, createdAt: now };
}

export async function getApp(ctx: Ctx, projectId: string, appId: string): Promise<AppView> {
  return (await targetApp(ctx, projectId, appId, "project.app.read")).app;
}

export type AppQuery = { kind: "name"; match: TextMatch } | { kind: "state"; state: AppState };

export async function listApps(ctx: Ctx, input: { projectId: string; page?: PageInput; queries: AppQuery[] }): Promise<{ total: number; apps: AppView[] }> {
  const project = await targetProject(ctx, input.projectId, "project.app.read");
  const p = page(input.page);
  const where: Prisma.ApplicationWhereInput = {
    projectId: project.id,
    AND: input.queries.map((q) => (q.kind === "name" ? { name: stringFilter(q.match) } : { state: q.state })),
  };
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.application.count({ where }),
    ctx.db.application.findMany({ where, ...inCreationOrder(p), select: APP_SELECT }),
  ]);
  return { total, apps: rows.map(toView) };
}

/**
 * Renames and/or replaces the settings (of the same kind). Moving away from
 * a secret method drops the secret; moving to one leaves the app without a
 * secret until RegenerateClientSecret.
 */
export async function updateApp(ctx: Ctx, input: { projectId: string; appId: string; name?: string; settings?: AppSettings }): Promise<Date> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  const data: Prisma.ApplicationUpdateInput = {};
  if (input.name !== undefined) {
    const name = validText(input.name, "name", "Errors.App.Name", { required: true }) as string;
    if (name !== app.name) data.name = name;
  }
  let changedSettings: ReturnType<typeof validateSettings> | undefined;
  if (input.settings) {
    if (input.settings.kind !== app.config.kind)
      throw invalidArgument("Errors.App.Kind.Immutable", `the application is an ${app.config.kind} application`, { field: "config" });
    changedSettings = validateSettings(input.settings);
    data.authMethod = changedSettings.authMethod;
    data.accessTokenType = changedSettings.accessTokenType;
    data.config = changedSettings.config as unknown as Prisma.InputJsonValue;
    if (!SECRET_METHODS.includes(changedSettings.authMethod)) data.secretHash = null;
  }
  const now = ctx.clock();
  if (Object.keys(data).length === 0) return now;
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.db.application.update({ where: { id: app.id }, data: { ...data, updatedAt: now } });
      await appChanged(ctx, tx, project, "project.app.changed", {
        appId: app.id,
        name: data.name,
        ...(changedSettings
          ? { authMethod: changedSettings.authMethod, accessTokenType: changedSettings.accessTokenType, config: changedSettings.config }
          : {}),
        secretRemoved: data.secretHash === null && app.hasSecret,
      });
    });
  } catch (err) {
    throw nameTaken(err);
  }
  return now;
}

/**
 * Records a change of an application (audited on its project) and drops what
 * the caches derived from it: client records and app tokens are tagged with the org.
 */
async function appChanged(ctx: Ctx, tx: Store, project: ProjectView, type: string, payload: Record<string, unknown>): Promise<void> {
  await tx.auth.invalidate({ orgId: project.orgId });
  await recordEvent(ctx, tx, { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, type, payload });
}

async function setAppState(ctx: Ctx, projectId: string, appId: string, state: AppState): Promise<Date> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  return changeState(ctx, state, {
    update: (tx, data) => tx.db.application.updateMany({ where: { id: app.id, state: { not: state } }, data }),
    errors: { alreadyInactive: "Errors.App.AlreadyInactive", notInactive: "Errors.App.NotInactive", noun: "application" },
    invalidate: (tx) => tx.auth.invalidate({ orgId: project.orgId }),
    event: { aggregateType: "project", aggregateId: project.id, orgId: project.orgId, eventType: "project.app", payload: { appId: app.id } },
  });
}

export const deactivateApp = (ctx: Ctx, projectId: string, appId: string) => setAppState(ctx, projectId, appId, "INACTIVE");
export const reactivateApp = (ctx: Ctx, projectId: string, appId: string) => setAppState(ctx, projectId, appId, "ACTIVE");

export async function deleteApp(ctx: Ctx, projectId: string, appId: string): Promise<Date> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await tx.db.application.deleteMany({ where: { id: app.id } });
    if (count === 0) throw appNotFound();
    await appChanged(ctx, tx, project, "project.app.removed", { appId: app.id, name: app.name });
  });
  return now;
}

/** A new client secret replacing the previous one, for the secret auth methods only. */
export async function regenerateAppSecret(ctx: Ctx, projectId: string, appId: string): Promise<{ clientSecret: string; changedAt: Date }> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  if (!SECRET_METHODS.includes(app.authMethod)) {
    throw failedPrecondition("Errors.App.Secret.NotSupported", `the application authenticates with ${app.authMethod}, not a client secret`);
  }
  const clientSecret = newOpaqueToken();
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.db.application.update({ where: { id: app.id }, data: { secretHash: sha256(clientSecret), updatedAt: now } });
    // Drops the cached client record with the old secret; tokens already issued stay valid (see fromOAuthRow in tokens.ts).
    await appChanged(ctx, tx, project, "project.app.secret.changed", { appId: app.id, replaced: app.hasSecret });
  });
  return { clientSecret, changedAt: now };
}

// ---------------------------------------------------------------- keys

export async function addAppKey(
  ctx: Ctx,
  input: { projectId: string; appId: string; expiresAt?: Date; publicKey?: Uint8Array },
): Promise<AppKeyView & { keyFile?: AppKeyFile }> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  if (app.authMethod !== "private_key_jwt")
    throw failedPrecondition("Errors.App.Key.NotSupported", `the application authenticates with ${app.authMethod}, not private_key_jwt`);
  const now = ctx.clock();
  if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) {
    throw invalidArgument("Errors.App.Key.ExpirationInPast", "expiration_date must be in the future", { field: "expiration_date" });
  }
  const id = newId();
  const { publicKeyPem: publicKey, privateKeyPem } = await keyMaterial(input.publicKey, "Errors.App.Key.Invalid");
  const keyFile: AppKeyFile | undefined = privateKeyPem
    ? { type: "application", keyId: id, key: privateKeyPem, appId: app.id, clientId: app.clientId, expirationDate: input.expiresAt?.toISOString() }
    : undefined;
  await ctx.store.transaction(async (tx) => {
    await tx.db.appKey.create({ data: { id, instanceId: ctx.instanceId, appId: app.id, publicKey, expiresAt: input.expiresAt ?? null, createdAt: now } });
    await recordEvent(ctx, tx, {
      aggregateType: "project",
      aggregateId: project.id,
      orgId: project.orgId,
      type: "project.app.key.added",
      payload: { appId: app.id, keyId: id, expiresAt: input.expiresAt?.toISOString(), generated: keyFile !== undefined },
    });
  });
  return { id, appId: app.id, createdAt: now, expiresAt: input.expiresAt ?? null, keyFile };
}

export async function listAppKeys(ctx: Ctx, input: { projectId: string; appId: string; page?: PageInput }): Promise<{ total: number; keys: AppKeyView[] }> {
  const { app } = await targetApp(ctx, input.projectId, input.appId, "project.app.read");
  const p = page(input.page);
  const where = { appId: app.id };
  const [total, keys] = await ctx.db.$transaction([
    ctx.db.appKey.count({ where }),
    ctx.db.appKey.findMany({
      where,
      ...inCreationOrder(p),
      select: { id: true, appId: true, createdAt: true, expiresAt: true },
    }),
  ]);
  return { total, keys };
}

export async function removeAppKey(ctx: Ctx, input: { projectId: string; appId: string; keyId: string }): Promise<Date> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await tx.db.appKey.deleteMany({ where: { id: input.keyId ?? "", appId: app.id } });
    if (count === 0) throw notFound("Errors.App.Key.NotFound", "application key not found");
    await appChanged(ctx, tx, project, "project.app.key.removed", { appId: app.id, keyId: input.keyId });
  });
  return now;
}
