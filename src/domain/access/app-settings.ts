// What an application is configured with: its auth method, access token
// type and kind-specific settings (OIDC redirect URIs, grant and response
// types), validated here into the row's columns and its config.

import { invalidArgument } from "../errors.js";
import { parseSpMetadata, type SpMetadata } from "../saml/sp-metadata.js";

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
  /** The application's own login UI (the authorization endpoint adds ?authRequest=<id>); the instance's when unset. */
  loginBaseUrl?: string;
  /** The user's consent to the requested scopes is asked once (oauth/consent.ts); absent: not asked unless prompt=consent. */
  consentRequired?: boolean;
  /** The algorithm of its ID tokens and JWT access tokens; absent: RS256. */
  idTokenSignedResponseAlg?: SigningAlg;
  /** The authorization endpoint accepts its requests only through PAR (RFC 9126). */
  requirePushedAuthorizationRequests?: boolean;
  /** OIDC Back-Channel Logout 1.0: where a logout token is POSTed when a session it signed into ends. */
  backchannelLogoutUri?: string;
  /** The client requires the logout token's sid (svc always sends it; kept and shown as registered). */
  backchannelLogoutSessionRequired?: boolean;
  /** OIDC Front-Channel Logout 1.0: loaded in an iframe of svc's logout page when a session it signed into ends there. */
  frontchannelLogoutUri?: string;
  /** The iframe's URL carries iss and sid. */
  frontchannelLogoutSessionRequired?: boolean;
}

/** The algorithms the instance signs with (one key of each, rotated together: src/crypto/signing-keys.ts). */
export const SIGNING_ALGS = ["RS256", "ES256", "EdDSA"] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

/** persistent: the user id; pairwise: an opaque persistent id per user and SP; transient: random per session and SP. */
export const SAML_NAME_ID_FORMATS = ["emailAddress", "persistent", "unspecified", "transient", "pairwise"] as const;
export type SamlNameIdFormat = (typeof SAML_NAME_ID_FORMATS)[number];
/** basic: UserID, Email, ... (attrname-format:basic); urnOid: the eduPerson/X.500 urn:oid names (attrname-format:uri). */
export type SamlAttributeProfile = "basic" | "urnOid";

/** A SAML service provider: what svc read from its metadata (kept as sent) and how assertions are made for it. */
export interface SamlAppConfig extends SpMetadata {
  kind: "saml";
  metadataXml: string;
  metadataUrl?: string;
  nameIdFormat: SamlNameIdFormat;
  /** Project role keys the assertion's Roles attribute may carry. */
  roleKeys: string[];
  assertionLifetimeSeconds: number;
  signResponse: boolean;
  /** Assertions are encrypted for the SP's encryption certificate (which the metadata must give). */
  encryptAssertions?: boolean;
  /** The attributes' names (basic when absent). */
  attributeProfile?: SamlAttributeProfile;
}

/** What Application.config holds. */
export type AppConfig = ApiAppConfig | OidcAppConfig | SamlAppConfig;

export interface SamlSettings {
  kind: "saml";
  metadataXml: Uint8Array;
  /** Where the metadata was fetched from (instead of metadataXml), kept for display. */
  metadataUrl?: string;
  nameIdFormat?: SamlNameIdFormat;
  roleKeys: string[];
  assertionLifetimeSeconds?: number;
  signResponse: boolean;
  encryptAssertions?: boolean;
  attributeProfile?: SamlAttributeProfile;
}

/** What a caller asks for; validated into the columns and the config by validateSettings. */
export type AppSettings =
  | { kind: "api"; authMethod?: "client_secret_basic" | "private_key_jwt"; accessTokenType?: AccessTokenType }
  | (Omit<OidcAppConfig, "appType" | "pkceRequired" | "loginBaseUrl" | "idTokenSignedResponseAlg"> & {
      loginBaseUrl?: string;
      idTokenSignedResponseAlg?: string;
      appType?: OidcAppType;
      authMethod?: AuthMethod;
      accessTokenType?: AccessTokenType;
    })
  | SamlSettings;

/** The auth methods that authenticate with a client secret. */
export const SECRET_METHODS: readonly AuthMethod[] = ["client_secret_basic", "client_secret_post"];
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

/**
 * The login UI of an app: absolute, no fragment, on one of `loginOrigins` (the instance's own and the operator's
 * SVC_LOGIN_UI_ALLOWED_ORIGINS): the login UI receives the users' passwords, so whoever may edit an application (an
 * ORG_OWNER) must not be able to send its users' sign-ins to a site of its choosing. Empty means the instance's.
 */
function validLoginUrl(raw: string | undefined, loginOrigins: readonly string[]): string | undefined {
  if (!raw) return undefined;
  const field = "login_base_url";
  if (raw.length > MAX_URI_LENGTH) throw uriError(field, "Uri.Invalid", `at most ${MAX_URI_LENGTH} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw uriError(field, "Uri.Invalid", `${raw} is not an absolute URI`);
  }
  if (u.hash || raw.includes("#")) throw uriError(field, "Uri.Fragment", `${raw} must not contain a fragment`);
  if (loginOrigins.includes(u.origin)) return raw;
  throw invalidArgument(
    "Errors.App.LoginBaseUrl.NotAllowed",
    `login_base_url must be on the instance's own origin or one of SVC_LOGIN_UI_ALLOWED_ORIGINS, not ${u.origin}`,
    { field },
  );
}

function validUris(uris: readonly string[], field: string, appType: OidcAppType, devMode: boolean): string[] {
  if (uris.length > MAX_URIS) throw uriError(field, "Uri.TooMany", `at most ${MAX_URIS} URIs`);
  return [...new Set(uris.map((u) => validUri(u, field, appType, devMode)))];
}

export interface ValidSettings {
  type: "API" | "OIDC" | "SAML";
  authMethod: AuthMethod;
  accessTokenType: AccessTokenType;
  config: AppConfig;
  samlEntityId?: string;
}

const MAX_ROLE_KEYS = 100;
const MAX_ASSERTION_LIFETIME = 3_600;

function validateSaml(s: SamlSettings): ValidSettings {
  const metadata = parseSpMetadata(s.metadataXml);
  const lifetime = s.assertionLifetimeSeconds || 300;
  if (lifetime < 30 || lifetime > MAX_ASSERTION_LIFETIME) {
    throw invalidArgument("Errors.App.Saml.AssertionLifetime", `assertion_lifetime_seconds: 30 to ${MAX_ASSERTION_LIFETIME}`, {
      field: "saml.assertion_lifetime_seconds",
    });
  }
  const roleKeys = [...new Set(s.roleKeys)];
  if (roleKeys.length > MAX_ROLE_KEYS || roleKeys.some((k) => !k || k.length > 200)) {
    throw invalidArgument("Errors.App.Saml.RoleKeys", `role_keys: at most ${MAX_ROLE_KEYS} keys of 1 to 200 characters`, { field: "saml.role_keys" });
  }
  if (s.encryptAssertions && !metadata.encryptionCertificate) {
    throw invalidArgument(
      "Errors.App.Saml.Encryption.NoCertificate",
      'saml.encrypt_assertions: the SP\'s metadata has no encryption certificate (a KeyDescriptor with use="encryption" or without use)',
      { field: "saml.encrypt_assertions" },
    );
  }
  const config: SamlAppConfig = {
    kind: "saml",
    ...metadata,
    metadataXml: Buffer.from(s.metadataXml).toString("utf8"),
    ...(s.metadataUrl ? { metadataUrl: s.metadataUrl } : {}),
    nameIdFormat: s.nameIdFormat ?? "emailAddress",
    roleKeys,
    assertionLifetimeSeconds: lifetime,
    signResponse: s.signResponse,
    encryptAssertions: !!s.encryptAssertions,
    attributeProfile: s.attributeProfile ?? "basic",
  };
  return { type: "SAML", authMethod: "none", accessTokenType: "BEARER", config, samlEntityId: metadata.entityId };
}

function validSigningAlg(alg: string | undefined): SigningAlg {
  if (!alg) return "RS256";
  const known = SIGNING_ALGS.find((a) => a === alg);
  if (known) return known;
  throw invalidArgument("Errors.App.SigningAlg.Unsupported", `id_token_signed_response_alg: one of ${SIGNING_ALGS.join(", ")}, not ${alg.slice(0, 40)}`, {
    field: "id_token_signed_response_alg",
  });
}

/**
 * A logout URI (Back-Channel Logout 1.0 §2.2): absolute, no fragment, https (http only in dev mode, as redirect URIs);
 * svc calls it itself, so never a custom scheme. Empty: none.
 */
function validLogoutUri(raw: string | undefined, field: string, devMode: boolean): string | undefined {
  if (!raw) return undefined;
  if (raw.length > MAX_URI_LENGTH) throw uriError(field, "Uri.Invalid", `at most ${MAX_URI_LENGTH} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw uriError(field, "Uri.Invalid", `${raw} is not an absolute URI`);
  }
  if (u.hash || raw.includes("#")) throw uriError(field, "Uri.Fragment", `${raw} must not contain a fragment`);
  if (u.protocol === "https:" || (u.protocol === "http:" && devMode)) return raw;
  throw uriError(field, "Uri.HttpsRequired", `${raw} must use https (http only in dev mode)`);
}

/** Checks an application's settings. `loginOrigins`: the origins its login base URL may name (see validLoginUrl). */
export function validateSettings(s: AppSettings, loginOrigins: readonly string[] = []): ValidSettings {
  if (s.kind === "saml") return validateSaml(s);
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
  const loginBaseUrl = validLoginUrl(s.loginBaseUrl, loginOrigins);
  if (loginBaseUrl) config.loginBaseUrl = loginBaseUrl;
  if (s.consentRequired) config.consentRequired = true;
  const alg = validSigningAlg(s.idTokenSignedResponseAlg);
  if (alg !== "RS256") config.idTokenSignedResponseAlg = alg;
  if (s.requirePushedAuthorizationRequests) config.requirePushedAuthorizationRequests = true;
  const backchannel = validLogoutUri(s.backchannelLogoutUri, "backchannel_logout_uri", s.devMode);
  if (backchannel) config.backchannelLogoutUri = backchannel;
  if (s.backchannelLogoutSessionRequired) config.backchannelLogoutSessionRequired = true;
  const frontchannel = validLogoutUri(s.frontchannelLogoutUri, "frontchannel_logout_uri", s.devMode);
  if (frontchannel) config.frontchannelLogoutUri = frontchannel;
  if (s.frontchannelLogoutSessionRequired) config.frontchannelLogoutSessionRequired = true;
  return { type: "OIDC", authMethod, accessTokenType: s.accessTokenType ?? "BEARER", config };
}

/** Reads Application.config as stored by this module; throws on anything else (a corrupt row is an internal error). */
export function parseAppConfig(json: unknown): AppConfig {
  const c = json as Partial<OidcAppConfig> | { kind?: string } | null;
  if (c?.kind === "api") return { kind: "api" };
  const saml = json as Partial<SamlAppConfig> | null;
  if (saml?.kind === "saml" && Array.isArray(saml.acs) && typeof saml.entityId === "string") return saml as SamlAppConfig;
  if (c?.kind === "oidc" && "redirectUris" in c && Array.isArray(c.redirectUris) && Array.isArray(c.grantTypes)) return c as OidcAppConfig;
  throw new Error("unreadable application config");
}
