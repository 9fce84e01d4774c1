// What settings are: the kinds, their built-in defaults, how a Set input is
// validated into the stored value and how a stored value is read back. Pure:
// no store, no context (settings.ts reads and writes them).

import { invalidArgument } from "../errors.js";
import { FALLBACK_LANGUAGE, MAIL_LANGUAGES, type MailLanguage, supportedLanguage } from "../mail/texts.js";

export type ResourceOwner = "instance" | "org";

export interface PasswordComplexity {
  minLength: number;
  requiresUppercase: boolean;
  requiresLowercase: boolean;
  requiresNumber: boolean;
  requiresSymbol: boolean;
  /** How many previous passwords a new one must differ from; 0: no history. */
  historyCount: number;
  resourceOwner: ResourceOwner;
}

export interface PasswordExpiry {
  /** 0: passwords never expire. */
  maxAgeDays: number;
  expireWarnDays: number;
}

export interface Lockout {
  /** 0: failed password checks never lock. */
  maxPasswordAttempts: number;
  /** 0: failed OTP checks never lock. */
  maxOtpAttempts: number;
  /** Reaching maxPasswordAttempts locks the user (state LOCKED) until unlocked; else only its password, for a while. */
  permanentLockout: boolean;
  /** The first temporary password lock; each further lock period doubles it, up to maxLockoutDurationSeconds. */
  lockoutDurationSeconds: number;
  maxLockoutDurationSeconds: number;
}

/** Second factors after a password: TOTP ("otp"), a WebAuthn key ("u2f"), codes by e-mail ("otp_email"). */
export const SECOND_FACTORS = ["otp", "u2f", "otp_email"] as const;
export type SecondFactor = (typeof SECOND_FACTORS)[number];
/** Factors that are two by themselves: a passkey whose authenticator verified the user. */
export const MULTI_FACTORS = ["u2f_with_verification"] as const;
export type MultiFactor = (typeof MULTI_FACTORS)[number];

export interface Login {
  allowUsernamePassword: boolean;
  allowRegister: boolean;
  allowExternalIdp: boolean;
  forceMfa: boolean;
  passkeysAllowed: boolean;
  ignoreUnknownUsernames: boolean;
  passwordCheckLifetimeSeconds: number;
  externalLoginCheckLifetimeSeconds: number;
  mfaInitSkipLifetimeSeconds: number;
  secondFactorCheckLifetimeSeconds: number;
  multiFactorCheckLifetimeSeconds: number;
  secondFactors: SecondFactor[];
  multiFactors: MultiFactor[];
}

export interface Security {
  allowedCorsOrigins: string[];
  iframeEnabled: boolean;
  iframeAllowedOrigins: string[];
}

export interface Branding {
  primaryColor: string;
  backgroundColor: string;
  warnColor: string;
  fontColor: string;
  /** Empty: no logo. */
  logoUrl: string;
  hideLoginNameSuffix: boolean;
  disableWatermark: boolean;
  /** auto: follows the browser's prefers-color-scheme. */
  themeMode: ThemeMode;
  darkPrimaryColor: string;
  darkBackgroundColor: string;
  darkWarnColor: string;
  darkFontColor: string;
  /** Empty: the light logo in both themes. */
  darkLogoUrl: string;
}

export const THEME_MODES = ["auto", "light", "dark"] as const;
export type ThemeMode = (typeof THEME_MODES)[number];

export interface DomainSettings {
  loginNameIncludesDomain: boolean;
  smtpSenderAddressMatchesInstanceDomain: boolean;
  /** Instance-wide (only the instance default counts): usernames unique across organizations, not just in each. */
  usernamesUniqueInInstance: boolean;
}

/** The language of the hosted login and of mails when neither the user nor the request decides it. */
export interface LanguageSettings {
  defaultLanguage: MailLanguage;
}

/** The stored value of each kind; the key is the `kind` column. */
export interface SettingValues {
  password_complexity: Omit<PasswordComplexity, "resourceOwner">;
  password_expiry: PasswordExpiry;
  lockout: Lockout;
  login: Login;
  security: Security;
  branding: Branding;
  domain: DomainSettings;
  language: LanguageSettings;
}

export type SettingKind = keyof SettingValues;
export type Effective<K extends SettingKind> = SettingValues[K] & { resourceOwner: ResourceOwner };

/** What a Set accepts: like the value, but lifetimes left out take their built-in default. */
export type SettingInput<K extends SettingKind> = K extends "login"
  ? Omit<Login, `${string}LifetimeSeconds`> & Partial<Pick<Login, `${string}LifetimeSeconds` & keyof Login>>
  : K extends "lockout"
    ? Pick<Lockout, "maxPasswordAttempts" | "maxOtpAttempts"> & Partial<Lockout>
    : SettingValues[K];

export type LockoutPolicy = Effective<"lockout">;
const HOUR = 3600;

export const DEFAULT_SETTINGS: { readonly [K in SettingKind]: Readonly<SettingValues[K]> } = {
  password_complexity: { minLength: 8, requiresUppercase: true, requiresLowercase: true, requiresNumber: true, requiresSymbol: true, historyCount: 0 },
  password_expiry: { maxAgeDays: 0, expireWarnDays: 0 },
  // On by default: 10 wrong passwords lock a user's password for a while, doubling per further lock period (as
  // Keycloak's temporary lockout); a permanent lock is an option, never for a last owner (identity/lockout.ts).
  lockout: { maxPasswordAttempts: 10, maxOtpAttempts: 5, permanentLockout: false, lockoutDurationSeconds: 300, maxLockoutDurationSeconds: 3600 },
  login: {
    allowUsernamePassword: true,
    allowRegister: false,
    allowExternalIdp: true,
    forceMfa: false,
    passkeysAllowed: true,
    ignoreUnknownUsernames: false,
    passwordCheckLifetimeSeconds: 240 * HOUR,
    externalLoginCheckLifetimeSeconds: 240 * HOUR,
    mfaInitSkipLifetimeSeconds: 720 * HOUR,
    secondFactorCheckLifetimeSeconds: 18 * HOUR,
    multiFactorCheckLifetimeSeconds: 12 * HOUR,
    secondFactors: [...SECOND_FACTORS],
    multiFactors: [...MULTI_FACTORS],
  },
  security: { allowedCorsOrigins: [], iframeEnabled: false, iframeAllowedOrigins: [] },
  branding: {
    primaryColor: "#2f6feb",
    backgroundColor: "#ffffff",
    warnColor: "#d93025",
    fontColor: "#1f2328",
    logoUrl: "",
    hideLoginNameSuffix: false,
    disableWatermark: false,
    themeMode: "auto",
    darkPrimaryColor: "#6ea8fe",
    darkBackgroundColor: "#0d1117",
    darkWarnColor: "#ff7b72",
    darkFontColor: "#e6edf3",
    darkLogoUrl: "",
  },
  domain: { loginNameIncludesDomain: true, smtpSenderAddressMatchesInstanceDomain: false, usernamesUniqueInInstance: false },
  language: { defaultLanguage: FALLBACK_LANGUAGE },
};

/** The documented instance default: at least 8 characters of all four classes. */
export const DEFAULT_PASSWORD_COMPLEXITY: PasswordComplexity = { ...DEFAULT_SETTINGS.password_complexity, resourceOwner: "instance" };

// ---------------------------------------------------------------- validation

const MIN_PASSWORD_LENGTH = 1;
const MAX_PASSWORD_LENGTH = 256;
const MAX_DAYS = 3650;
const MAX_ATTEMPTS = 1000;
const MAX_FIRST_LOCK_SECONDS = 86_400;
const MAX_LOCK_SECONDS = 30 * 86_400;
const MAX_PASSWORD_HISTORY = 24;
const MAX_LIFETIME_SECONDS = 87_600 * HOUR;
const MAX_ORIGINS = 100;
const COLOR = /^#[0-9a-fA-F]{6}$/;
// scheme://host[:port] and nothing else: no path, query, fragment or userinfo.
const ORIGIN = /^https?:\/\/[^/?#@\s\\]+$/i;

function integer(value: number, id: string, field: string, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidArgument(id, `${field} must be a whole number from ${min} to ${max}`, { field });
  }
  return value;
}

function origins(list: readonly string[], field: string): string[] {
  if (list.length > MAX_ORIGINS) throw invalidArgument("Errors.Settings.Security.TooManyOrigins", `${field} takes at most ${MAX_ORIGINS} origins`, { field });
  const out = new Set<string>();
  for (const raw of list) {
    const value = raw.trim();
    let origin: string | undefined;
    if (value.length <= 255 && ORIGIN.test(value)) {
      try {
        origin = new URL(value).origin;
      } catch {
        origin = undefined;
      }
    }
    if (!origin || origin === "null") {
      throw invalidArgument(
        "Errors.Settings.Security.OriginInvalid",
        `${field}: "${value.slice(0, 80)}" is not an origin of the form scheme://host[:port] (http or https)`,
        {
          field,
        },
      );
    }
    out.add(origin);
  }
  return [...out];
}

function color(value: string, field: string): string {
  if (!COLOR.test(value)) throw invalidArgument("Errors.Settings.Branding.ColorInvalid", `${field} must be a colour of the form #rrggbb`, { field });
  return value.toLowerCase();
}

function logoUrl(value: string, field: string): string {
  const v = value.trim();
  if (!v) return "";
  let url: URL | undefined;
  try {
    url = new URL(v);
  } catch {
    url = undefined;
  }
  if (!url || v.length > 2048 || url.protocol !== "https:" || url.username || url.password) {
    throw invalidArgument("Errors.Settings.Branding.LogoUrlInvalid", `${field} must be an https URL of at most 2048 characters`, { field });
  }
  return v;
}

function lifetime(value: number | undefined, fallback: number, field: string): number {
  return value === undefined ? fallback : integer(value, "Errors.Settings.Login.LifetimeInvalid", field, 0, MAX_LIFETIME_SECONDS);
}

/** Checks and normalizes a Set input into the value that is stored. Pure; throws InvalidArgument. */
export function validateSetting<K extends SettingKind>(kind: K, input: SettingInput<K>): SettingValues[K] {
  return VALIDATORS[kind](input as never) as SettingValues[K];
}

const VALIDATORS: { [K in SettingKind]: (input: SettingInput<K>) => SettingValues[K] } = {
  password_complexity: (i) => ({
    minLength: integer(i.minLength, "Errors.Settings.PasswordComplexity.MinLengthInvalid", "min_length", MIN_PASSWORD_LENGTH, MAX_PASSWORD_LENGTH),
    requiresUppercase: i.requiresUppercase,
    requiresLowercase: i.requiresLowercase,
    requiresNumber: i.requiresNumber,
    requiresSymbol: i.requiresSymbol,
    historyCount: integer(i.historyCount, "Errors.Settings.PasswordComplexity.HistoryCountInvalid", "history_count", 0, MAX_PASSWORD_HISTORY),
  }),
  password_expiry: (i) => {
    const maxAgeDays = integer(i.maxAgeDays, "Errors.Settings.PasswordExpiry.MaxAgeInvalid", "max_age_days", 0, MAX_DAYS);
    const expireWarnDays = integer(i.expireWarnDays, "Errors.Settings.PasswordExpiry.WarnDaysInvalid", "expire_warn_days", 0, MAX_DAYS);
    if (expireWarnDays > maxAgeDays) {
      throw invalidArgument(
        "Errors.Settings.PasswordExpiry.WarnDaysInvalid",
        maxAgeDays === 0 ? "expire_warn_days must be 0 while expiry is off" : "expire_warn_days must not exceed max_age_days",
        { field: "expire_warn_days" },
      );
    }
    return { maxAgeDays, expireWarnDays };
  },
  lockout: (i) => {
    const d = DEFAULT_SETTINGS.lockout;
    const first = integer(
      i.lockoutDurationSeconds || d.lockoutDurationSeconds,
      "Errors.Settings.Lockout.DurationInvalid",
      "lockout_duration_seconds",
      1,
      MAX_FIRST_LOCK_SECONDS,
    );
    const longest = integer(
      i.maxLockoutDurationSeconds || Math.max(first, d.maxLockoutDurationSeconds),
      "Errors.Settings.Lockout.DurationInvalid",
      "max_lockout_duration_seconds",
      first,
      MAX_LOCK_SECONDS,
    );
    return {
      maxPasswordAttempts: integer(i.maxPasswordAttempts, "Errors.Settings.Lockout.MaxAttemptsInvalid", "max_password_attempts", 0, MAX_ATTEMPTS),
      maxOtpAttempts: integer(i.maxOtpAttempts, "Errors.Settings.Lockout.MaxAttemptsInvalid", "max_otp_attempts", 0, MAX_ATTEMPTS),
      permanentLockout: i.permanentLockout === true,
      lockoutDurationSeconds: first,
      maxLockoutDurationSeconds: longest,
    };
  },
  login: (i) => {
    // Without any way to sign in, nobody (administrators included) could log in again.
    if (!i.allowUsernamePassword && !i.allowExternalIdp && !i.passkeysAllowed) {
      throw invalidArgument("Errors.Settings.Login.NoLoginMethod", "allow at least one of username/password, external identity providers or passkeys");
    }
    const d = DEFAULT_SETTINGS.login;
    return {
      allowUsernamePassword: i.allowUsernamePassword,
      allowRegister: i.allowRegister,
      allowExternalIdp: i.allowExternalIdp,
      forceMfa: i.forceMfa,
      passkeysAllowed: i.passkeysAllowed,
      ignoreUnknownUsernames: i.ignoreUnknownUsernames,
      passwordCheckLifetimeSeconds: lifetime(i.passwordCheckLifetimeSeconds, d.passwordCheckLifetimeSeconds, "password_check_lifetime"),
      externalLoginCheckLifetimeSeconds: lifetime(i.externalLoginCheckLifetimeSeconds, d.externalLoginCheckLifetimeSeconds, "external_login_check_lifetime"),
      mfaInitSkipLifetimeSeconds: lifetime(i.mfaInitSkipLifetimeSeconds, d.mfaInitSkipLifetimeSeconds, "mfa_init_skip_lifetime"),
      secondFactorCheckLifetimeSeconds: lifetime(i.secondFactorCheckLifetimeSeconds, d.secondFactorCheckLifetimeSeconds, "second_factor_check_lifetime"),
      multiFactorCheckLifetimeSeconds: lifetime(i.multiFactorCheckLifetimeSeconds, d.multiFactorCheckLifetimeSeconds, "multi_factor_check_lifetime"),
      // Empty: all of them (no factor at all would leave force_mfa unsatisfiable).
      secondFactors: i.secondFactors.length ? [...new Set(i.secondFactors)] : [...SECOND_FACTORS],
      multiFactors: i.multiFactors.length ? [...new Set(i.multiFactors)] : [...MULTI_FACTORS],
    };
  },
  security: (i) => ({
    allowedCorsOrigins: origins(i.allowedCorsOrigins, "allowed_cors_origins"),
    iframeEnabled: i.iframeEnabled,
    iframeAllowedOrigins: origins(i.iframeAllowedOrigins, "embedded_iframe.allowed_origins"),
  }),
  branding: (i) => ({
    primaryColor: color(i.primaryColor, "primary_color"),
    backgroundColor: color(i.backgroundColor, "background_color"),
    warnColor: color(i.warnColor, "warn_color"),
    fontColor: color(i.fontColor, "font_color"),
    logoUrl: logoUrl(i.logoUrl, "logo_url"),
    hideLoginNameSuffix: i.hideLoginNameSuffix,
    disableWatermark: i.disableWatermark,
    themeMode: THEME_MODES.includes(i.themeMode) ? i.themeMode : "auto",
    darkPrimaryColor: i.darkPrimaryColor ? color(i.darkPrimaryColor, "dark_primary_color") : DEFAULT_SETTINGS.branding.darkPrimaryColor,
    darkBackgroundColor: i.darkBackgroundColor ? color(i.darkBackgroundColor, "dark_background_color") : DEFAULT_SETTINGS.branding.darkBackgroundColor,
    darkWarnColor: i.darkWarnColor ? color(i.darkWarnColor, "dark_warn_color") : DEFAULT_SETTINGS.branding.darkWarnColor,
    darkFontColor: i.darkFontColor ? color(i.darkFontColor, "dark_font_color") : DEFAULT_SETTINGS.branding.darkFontColor,
    darkLogoUrl: logoUrl(i.darkLogoUrl, "dark_logo_url"),
  }),
  domain: (i) => ({
    loginNameIncludesDomain: i.loginNameIncludesDomain,
    smtpSenderAddressMatchesInstanceDomain: i.smtpSenderAddressMatchesInstanceDomain,
    usernamesUniqueInInstance: i.usernamesUniqueInInstance,
  }),
  language: (i) => {
    const defaultLanguage = supportedLanguage(i.defaultLanguage);
    if (!defaultLanguage) {
      throw invalidArgument("Errors.Settings.Language.Unsupported", `default_language must be one of ${MAIL_LANGUAGES.join(", ")}`, {
        field: "default_language",
      });
    }
    return { defaultLanguage };
  },
};

/**
 * A stored value over the built-in default, field by field: fields added in
 * later versions, or of an unexpected type, take the default.
 */
export function parseStored<K extends SettingKind>(kind: K, stored: unknown): SettingValues[K] {
  const defaults = DEFAULT_SETTINGS[kind] as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, d] of Object.entries(defaults)) out[key] = Array.isArray(d) ? [...d] : d;
  if (stored && typeof stored === "object" && !Array.isArray(stored)) {
    for (const [key, value] of Object.entries(stored)) {
      const d = defaults[key];
      if (d === undefined) continue;
      const sameShape = Array.isArray(d) ? Array.isArray(value) && value.every((v) => typeof v === "string") : typeof value === typeof d;
      if (sameShape) out[key] = value;
    }
  }
  return out as unknown as SettingValues[K];
}

export function checkPassword(password: string, policy: Omit<PasswordComplexity, "resourceOwner" | "historyCount">): void {
  const missing: string[] = [];
  if ([...password].length < policy.minLength) missing.push(`at least ${policy.minLength} characters`);
  if (policy.requiresUppercase && !/\p{Lu}/u.test(password)) missing.push("an uppercase letter");
  if (policy.requiresLowercase && !/\p{Ll}/u.test(password)) missing.push("a lowercase letter");
  if (policy.requiresNumber && !/\p{Nd}/u.test(password)) missing.push("a number");
  if (policy.requiresSymbol && !/[^\p{L}\p{N}\s]/u.test(password)) missing.push("a symbol");
  if (password.length > 1024) throw invalidArgument("Errors.User.Password.TooLong", "the password must be at most 1024 characters");
  if (missing.length) {
    throw invalidArgument("Errors.User.Password.Complexity", `the password does not meet the complexity policy: it needs ${missing.join(", ")}`);
  }
}
