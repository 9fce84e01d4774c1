import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  AccessTokenType,
  ApiAuthMethodType,
  type ApiConfig,
  type Application,
  type ApplicationQuery,
  ApplicationSchema,
  AppState,
  OidcAppType,
  OidcAuthMethodType,
  type OidcConfig,
  OidcGrantType,
  OidcResponseType,
  type SamlConfig,
} from "../../gen/svc/app/v2/app_pb.js";
import type { ApplicationService } from "../../gen/svc/app/v2/app_service_pb.js";
import {
  type AppQuery,
  type AppSettings,
  type AppView,
  type AuthMethod,
  addAppKey,
  createApp,
  type OidcAppType as DomainAppType,
  type OidcGrantType as DomainGrantType,
  type AccessTokenType as DomainTokenType,
  deactivateApp,
  deleteApp,
  getApp,
  listAppKeys,
  listApps,
  reactivateApp,
  regenerateAppSecret,
  removeAppKey,
  updateApp,
} from "../domain/access/apps.js";
import { invalidArgument } from "../domain/errors.js";
import { samlConfigOf, samlSettings } from "./app-saml.js";
import { ctxOf } from "./connect.js";
import { changed, dateOpt, deleted, details, enumValue, listDetails, listPage, textMatch, ts, tsOpt } from "./convert.js";

const TOKEN_TYPE: Record<number, DomainTokenType | undefined> = {
  [AccessTokenType.UNSPECIFIED]: undefined,
  [AccessTokenType.BEARER]: "BEARER",
  [AccessTokenType.JWT]: "JWT",
};
const API_AUTH: Record<number, "client_secret_basic" | "private_key_jwt" | undefined> = {
  [ApiAuthMethodType.UNSPECIFIED]: undefined,
  [ApiAuthMethodType.BASIC]: "client_secret_basic",
  [ApiAuthMethodType.PRIVATE_KEY_JWT]: "private_key_jwt",
};
const OIDC_AUTH: Record<number, AuthMethod | undefined> = {
  [OidcAuthMethodType.UNSPECIFIED]: undefined,
  [OidcAuthMethodType.BASIC]: "client_secret_basic",
  [OidcAuthMethodType.POST]: "client_secret_post",
  [OidcAuthMethodType.NONE]: "none",
  [OidcAuthMethodType.PRIVATE_KEY_JWT]: "private_key_jwt",
};
const APP_TYPE: Record<number, DomainAppType | undefined> = {
  [OidcAppType.UNSPECIFIED]: undefined,
  [OidcAppType.WEB]: "web",
  [OidcAppType.USER_AGENT]: "user_agent",
  [OidcAppType.NATIVE]: "native",
};
const GRANT_TYPE: Record<number, DomainGrantType> = {
  [OidcGrantType.AUTHORIZATION_CODE]: "authorization_code",
  [OidcGrantType.REFRESH_TOKEN]: "refresh_token",
  [OidcGrantType.DEVICE_CODE]: "urn:ietf:params:oauth:grant-type:device_code",
};
const RESPONSE_TYPE: Record<number, "code"> = { [OidcResponseType.CODE]: "code" };

function known<T>(table: Record<number, T>, value: number, field: string): T {
  if (!(value in table)) throw invalidArgument(`Errors.App.${field}.Invalid`, `unknown ${field} ${value}`, { field });
  return table[value] as T;
}

const reverse = <T extends string>(table: Record<number, T | undefined>, value: T): number =>
  Number(Object.entries(table).find(([, v]) => v === value)?.[0] ?? 0);

function toSettings(
  config:
    | { case: "api"; value: ApiConfig }
    | { case: "oidc"; value: OidcConfig }
    | { case: "saml"; value: SamlConfig }
    | { case: undefined; value?: undefined },
): AppSettings | undefined {
  switch (config.case) {
    case "saml":
      return samlSettings(config.value);
    case "api":
      return {
        kind: "api",
        authMethod: known(API_AUTH, config.value.authMethodType, "auth_method_type"),
        accessTokenType: known(TOKEN_TYPE, config.value.accessTokenType, "access_token_type"),
      };
    case "oidc": {
      const c = config.value;
      return {
        kind: "oidc",
        appType: known(APP_TYPE, c.appType, "app_type"),
        authMethod: known(OIDC_AUTH, c.authMethodType, "auth_method_type"),
        accessTokenType: known(TOKEN_TYPE, c.accessTokenType, "access_token_type"),
        redirectUris: c.redirectUris,
        postLogoutRedirectUris: c.postLogoutRedirectUris,
        grantTypes: c.grantTypes.map((g) => known(GRANT_TYPE, g, "grant_types")),
        responseTypes: c.responseTypes.map((r) => known(RESPONSE_TYPE, r, "response_types")),
        idTokenRoleAssertion: c.idTokenRoleAssertion,
        idTokenUserinfoAssertion: c.idTokenUserinfoAssertion,
        devMode: c.devMode,
        loginBaseUrl: c.loginBaseUrl,
        consentRequired: c.consentRequired,
        idTokenSignedResponseAlg: c.idTokenSignedResponseAlg,
        requirePushedAuthorizationRequests: c.requirePushedAuthorizationRequests,
        backchannelLogoutUri: c.backchannelLogoutUri,
        backchannelLogoutSessionRequired: c.backchannelLogoutSessionRequired,
        frontchannelLogoutUri: c.frontchannelLogoutUri,
        frontchannelLogoutSessionRequired: c.frontchannelLogoutSessionRequired,
      };
    }
    case undefined:
      return undefined;
  }
}

function toApp(a: AppView): Application {
  const tokenType = reverse(TOKEN_TYPE, a.accessTokenType);
  const config: Application["config"] =
    a.config.kind === "saml"
      ? { case: "saml", value: samlConfigOf(a.config) }
      : a.config.kind === "api"
        ? {
            case: "api",
            value: { $typeName: "svc.app.v2.ApiConfig", authMethodType: reverse(API_AUTH, a.authMethod as "client_secret_basic"), accessTokenType: tokenType },
          }
        : {
            case: "oidc",
            value: {
              $typeName: "svc.app.v2.OidcConfig",
              redirectUris: a.config.redirectUris,
              postLogoutRedirectUris: a.config.postLogoutRedirectUris,
              grantTypes: a.config.grantTypes.map((g) => reverse(GRANT_TYPE, g)),
              responseTypes: a.config.responseTypes.map((r) => reverse(RESPONSE_TYPE, r)),
              appType: reverse(APP_TYPE, a.config.appType),
              authMethodType: reverse(OIDC_AUTH, a.authMethod),
              accessTokenType: tokenType,
              idTokenRoleAssertion: a.config.idTokenRoleAssertion,
              idTokenUserinfoAssertion: a.config.idTokenUserinfoAssertion,
              devMode: a.config.devMode,
              loginBaseUrl: a.config.loginBaseUrl ?? "",
              consentRequired: a.config.consentRequired === true,
              idTokenSignedResponseAlg: a.config.idTokenSignedResponseAlg ?? "RS256",
              requirePushedAuthorizationRequests: a.config.requirePushedAuthorizationRequests === true,
              backchannelLogoutUri: a.config.backchannelLogoutUri ?? "",
              backchannelLogoutSessionRequired: a.config.backchannelLogoutSessionRequired === true,
              frontchannelLogoutUri: a.config.frontchannelLogoutUri ?? "",
              frontchannelLogoutSessionRequired: a.config.frontchannelLogoutSessionRequired === true,
            },
          };
  return create(ApplicationSchema, {
    id: a.id,
    details: details(a, a.orgId),
    projectId: a.projectId,
    name: a.name,
    state: a.state === "ACTIVE" ? AppState.ACTIVE : AppState.INACTIVE,
    clientId: a.clientId,
    config,
    hasClientSecret: a.hasSecret,
  });
}

const STATE_FROM: Record<number, "ACTIVE" | "INACTIVE"> = { [AppState.ACTIVE]: "ACTIVE", [AppState.INACTIVE]: "INACTIVE" };

function toQuery(q: ApplicationQuery): AppQuery {
  const v = q.query;
  switch (v.case) {
    case "nameQuery":
      return { kind: "name", match: textMatch(v.value.name, v.value.method) };
    case "stateQuery":
      return { kind: "state", state: enumValue(STATE_FROM, v.value.state, "State") };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

export function applicationService(): ServiceImpl<typeof ApplicationService> {
  return {
    async createApplication(req, hctx) {
      const settings = toSettings(req.config);
      if (!settings) throw invalidArgument("Errors.App.Config.Missing", "an application needs an api, oidc or saml configuration", { field: "config" });
      const out = await createApp(ctxOf(hctx), { projectId: req.projectId, name: req.name, settings });
      return { appId: out.id, clientId: out.clientId, clientSecret: out.clientSecret ?? "", creationDate: ts(out.createdAt) };
    },
    async getApplication(req, hctx) {
      return { app: toApp(await getApp(ctxOf(hctx), req.projectId, req.appId)) };
    },
    async listApplications(req, hctx) {
      const out = await listApps(ctxOf(hctx), { projectId: req.projectId, page: listPage(req.query), queries: req.queries.map(toQuery) });
      return { details: listDetails(ctxOf(hctx), out), result: out.apps.map(toApp) };
    },
    async updateApplication(req, hctx) {
      const input = { projectId: req.projectId, appId: req.appId, name: req.name, settings: toSettings(req.config) };
      return changed(await updateApp(ctxOf(hctx), input));
    },
    async deactivateApplication(req, hctx) {
      return changed(await deactivateApp(ctxOf(hctx), req.projectId, req.appId));
    },
    async reactivateApplication(req, hctx) {
      return changed(await reactivateApp(ctxOf(hctx), req.projectId, req.appId));
    },
    async deleteApplication(req, hctx) {
      return deleted(await deleteApp(ctxOf(hctx), req.projectId, req.appId));
    },
    async regenerateClientSecret(req, hctx) {
      const out = await regenerateAppSecret(ctxOf(hctx), req.projectId, req.appId);
      return { clientSecret: out.clientSecret, changeDate: ts(out.changedAt) };
    },
    async addApplicationKey(req, hctx) {
      const out = await addAppKey(ctxOf(hctx), {
        projectId: req.projectId,
        appId: req.appId,
        expiresAt: dateOpt(req.expirationDate, "expiration_date"),
        publicKey: req.publicKey,
      });
      return {
        keyId: out.id,
        keyDetails: out.keyFile ? new TextEncoder().encode(JSON.stringify(out.keyFile)) : new Uint8Array(),
        creationDate: ts(out.createdAt),
      };
    },
    async listApplicationKeys(req, hctx) {
      const out = await listAppKeys(ctxOf(hctx), { projectId: req.projectId, appId: req.appId, page: listPage(req.query) });
      return {
        details: listDetails(ctxOf(hctx), out),
        result: out.keys.map((k) => ({ id: k.id, appId: k.appId, creationDate: ts(k.createdAt), expirationDate: tsOpt(k.expiresAt) })),
      };
    },
    async removeApplicationKey(req, hctx) {
      return deleted(await removeAppKey(ctxOf(hctx), { projectId: req.projectId, appId: req.appId, keyId: req.keyId }));
    },
  };
}
