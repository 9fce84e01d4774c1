// Applications of a project: API clients (client credentials) and OIDC
// clients. Client ids are generated; client secrets (256 random bits) are
// returned once and stored as SHA-256; keys for private_key_jwt keep only
// their public half (app-keys.ts). The token service reads Application/AppKey
// rows directly: `authMethod` is one of AUTH_METHODS, `secretHash` is set only
// for the secret methods, and `config` is parsed with parseAppConfig
// (app-settings.ts).

import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { AppChange } from "../../store/apps.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page, type TextMatch } from "../list.js";
import { orgSlug } from "../orgs/orgs.js";
import { withFetchedMetadata } from "../saml/metadata-url.js";
import { appChanged, targetApp } from "./app-access.js";
import { type AccessTokenType, type AppConfig, type AppSettings, type AppState, type AuthMethod, SECRET_METHODS, validateSettings } from "./app-settings.js";
import { commit, projectEvent } from "./command.js";
import { appNotFound } from "./not-found.js";
import { targetProject } from "./project-access.js";
import { changeState } from "./state-change.js";
import { validName } from "./validation.js";

// The API's application service reaches the settings' types and the keys here.
export { addAppKey, listAppKeys, removeAppKey } from "./app-keys.js";
export type { AccessTokenType, AppSettings, AuthMethod, OidcAppType, OidcGrantType, SamlNameIdFormat } from "./app-settings.js";

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

/** The config as the audit trail keeps it: a SAML app's metadata is summarised (entity id, ACS), not copied. */
function eventConfig(config: AppConfig): unknown {
  if (config.kind !== "saml") return config;
  const { metadataXml: _xml, signingCertificates, encryptionCertificate: _enc, ...rest } = config;
  return { ...rest, signingCertificates: signingCertificates.length };
}

export async function createApp(
  ctx: Ctx,
  input: { projectId: string; name: string; settings: AppSettings },
): Promise<{ id: string; clientId: string; clientSecret?: string; createdAt: Date }> {
  const project = await targetProject(ctx, input.projectId, "project.app.write");
  const name = validName(input.name, "name", "Errors.App.Name");
  const v = validateSettings(await withFetchedMetadata(ctx, input.settings), loginOriginsOf(ctx));
  const id = newId();
  const clientId = `${id}@${orgSlug(project.name)}`;
  const clientSecret = SECRET_METHODS.includes(v.authMethod) ? newOpaqueToken() : undefined;
  const app = {
    id,
    projectId: project.id,
    orgId: project.orgId,
    name,
    clientId,
    authMethod: v.authMethod,
    accessTokenType: v.accessTokenType,
    config: v.config,
  };
  const createdAt = await commit(ctx, async (tx, now) => {
    await tx.apps.insert({
      ...app,
      instanceId: ctx.instanceId,
      type: v.type,
      secretHash: clientSecret ? sha256(clientSecret) : null,
      samlEntityId: v.samlEntityId ?? null,
      createdAt: now,
    });
    return projectEvent(project, "project.app.added", {
      appId: id,
      name,
      clientId,
      type: v.type,
      authMethod: v.authMethod,
      accessTokenType: v.accessTokenType,
      config: eventConfig(v.config),
    });
  });
  return { id, clientId, clientSecret, createdAt };
}

export async function getApp(ctx: Ctx, projectId: string, appId: string): Promise<AppView> {
  return (await targetApp(ctx, projectId, appId, "project.app.read")).app;
}

export type AppQuery = { kind: "name"; match: TextMatch } | { kind: "state"; state: AppState };

export async function listApps(ctx: Ctx, input: { projectId: string; page?: PageInput; queries: AppQuery[] }): Promise<ListTotal & { apps: AppView[] }> {
  const project = await targetProject(ctx, input.projectId, "project.app.read");
  const { rows, ...total } = await ctx.store.apps.page(project.id, input.queries, page(input.page));
  return { ...total, apps: rows };
}

/**
 * Renames and/or replaces the settings (of the same kind). Moving away from
 * a secret method drops the secret; moving to one leaves the app without a
 * secret until RegenerateClientSecret.
 */
export async function updateApp(ctx: Ctx, input: { projectId: string; appId: string; name?: string; settings?: AppSettings }): Promise<Date> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  const change: AppChange = {};
  if (input.name !== undefined) {
    const name = validName(input.name, "name", "Errors.App.Name");
    if (name !== app.name) change.name = name;
  }
  let changedSettings: ReturnType<typeof validateSettings> | undefined;
  if (input.settings) {
    if (input.settings.kind !== app.config.kind)
      throw invalidArgument("Errors.App.Kind.Immutable", `the application is an ${app.config.kind} application`, { field: "config" });
    changedSettings = validateSettings(await withFetchedMetadata(ctx, input.settings), loginOriginsOf(ctx));
    change.authMethod = changedSettings.authMethod;
    change.accessTokenType = changedSettings.accessTokenType;
    change.config = changedSettings.config;
    if (!SECRET_METHODS.includes(changedSettings.authMethod)) change.secretHash = null;
    if (changedSettings.samlEntityId) change.samlEntityId = changedSettings.samlEntityId;
  }
  if (Object.keys(change).length === 0) return ctx.clock();
  return commit(ctx, async (tx, now) => {
    await tx.apps.update(app.id, change, now);
    return appChanged(tx, project, "project.app.changed", {
      appId: app.id,
      name: change.name,
      ...(changedSettings
        ? { authMethod: changedSettings.authMethod, accessTokenType: changedSettings.accessTokenType, config: eventConfig(changedSettings.config) }
        : {}),
      secretRemoved: change.secretHash === null && app.hasSecret,
    });
  });
}

async function setAppState(ctx: Ctx, projectId: string, appId: string, state: AppState): Promise<Date> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  return changeState(ctx, state, {
    update: (tx, to, at) => tx.apps.setState(app.id, to, at),
    errors: { alreadyInactive: "Errors.App.AlreadyInactive", notInactive: "Errors.App.NotInactive", noun: "application" },
    invalidate: (tx) => tx.auth.invalidate({ orgId: project.orgId }),
    event: (moved) => projectEvent(project, `project.app.${moved}`, { appId: app.id }),
  });
}

export const deactivateApp = (ctx: Ctx, projectId: string, appId: string) => setAppState(ctx, projectId, appId, "INACTIVE");
export const reactivateApp = (ctx: Ctx, projectId: string, appId: string) => setAppState(ctx, projectId, appId, "ACTIVE");

export async function deleteApp(ctx: Ctx, projectId: string, appId: string): Promise<Date> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  return commit(ctx, async (tx) => {
    if (!(await tx.apps.delete(app.id))) throw appNotFound();
    return appChanged(tx, project, "project.app.removed", { appId: app.id, name: app.name });
  });
}

/** A new client secret replacing the previous one, for the secret auth methods only. */
export async function regenerateAppSecret(ctx: Ctx, projectId: string, appId: string): Promise<{ clientSecret: string; changedAt: Date }> {
  const { project, app } = await targetApp(ctx, projectId, appId, "project.app.write");
  if (!SECRET_METHODS.includes(app.authMethod)) {
    throw failedPrecondition("Errors.App.Secret.NotSupported", `the application authenticates with ${app.authMethod}, not a client secret`);
  }
  const clientSecret = newOpaqueToken();
  const changedAt = await commit(ctx, async (tx, now) => {
    await tx.apps.setSecret(app.id, sha256(clientSecret), now);
    // Drops the cached client record with the old secret, and the tokens the old secret got.
    const revokedTokens = await tx.tokens.revokeIssued({ appId: app.id }, now, "secret");
    // And the refresh tokens: each was issued under the old secret, and must not outlive it (its holder would keep
    // minting access tokens with a secret nobody should have any more).
    const revokedRefreshTokens = await tx.refreshTokens.revokeOfApp(app.id, now);
    return appChanged(tx, project, "project.app.secret.changed", { appId: app.id, replaced: app.hasSecret, revokedTokens, revokedRefreshTokens });
  });
  return { clientSecret, changedAt };
}

/** The origins an application's login base URL may name: the instance's own and SVC_LOGIN_UI_ALLOWED_ORIGINS. */
function loginOriginsOf(ctx: Ctx): readonly string[] {
  return ctx.authn?.loginOrigins ?? (ctx.authn ? [new URL(ctx.authn.externalUrl).origin] : []);
}
