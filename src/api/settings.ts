import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { Duration, FieldMask } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type BrandingSettings,
  BrandingSettingsSchema,
  type DomainSettings,
  DomainSettingsSchema,
  type LanguageSettings,
  LanguageSettingsSchema,
  type LockoutSettings,
  LockoutSettingsSchema,
  type LoginSettings,
  LoginSettingsSchema,
  MultiFactorType,
  type PasswordComplexitySettings,
  PasswordComplexitySettingsSchema,
  type PasswordExpirySettings,
  PasswordExpirySettingsSchema,
  ResourceOwnerType,
  SecondFactorType,
  type SecuritySettings,
  SecuritySettingsSchema,
  ThemeMode,
} from "../../gen/svc/settings/v2/settings_pb.js";
import type { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { MAIL_LANGUAGES, type MailLanguage } from "../domain/mail/texts.js";
import {
  type Effective,
  getSettings,
  type ResourceOwner,
  resetSettings,
  type SettingInput,
  type SettingKind,
  setSettings,
} from "../domain/settings/settings.js";
import type { MultiFactor, SecondFactor, ThemeMode as ThemeModeName } from "../domain/settings/values.js";
import { ctxOf } from "./connect.js";
import { details, ts } from "./convert.js";
import { applyUpdateMask } from "./update-mask.js";

const SECOND_FACTORS: Record<SecondFactor, SecondFactorType> = {
  otp: SecondFactorType.OTP,
  u2f: SecondFactorType.U2F,
  otp_email: SecondFactorType.OTP_EMAIL,
};
const MULTI_FACTORS: Record<MultiFactor, MultiFactorType> = { u2f_with_verification: MultiFactorType.U2F_WITH_VERIFICATION };

/** The domain names of proto enum values; an unknown or unspecified value is InvalidArgument. */
function fromEnum<T extends string>(table: Record<T, number>, values: readonly number[], field: string): T[] {
  return values.map((v) => {
    const name = (Object.keys(table) as T[]).find((k) => table[k] === v);
    if (!name) throw invalidArgument("Errors.Settings.Login.FactorInvalid", `${field}: unknown value ${v}`, { field });
    return name;
  });
}

const owner = (o: ResourceOwner) => (o === "org" ? ResourceOwnerType.ORG : ResourceOwnerType.INSTANCE);

const duration = (seconds: number): MessageInitShape<typeof LoginSettingsSchema>["passwordCheckLifetime"] => ({ seconds: BigInt(seconds), nanos: 0 });
// Fractions of a second are not whole seconds and fail validation in the domain.
const seconds = (d: Duration | undefined): number | undefined => (d ? Number(d.seconds) + d.nanos / 1e9 : undefined);

/** The proto ⇄ domain translation of one kind of setting. */
interface Mapping<K extends SettingKind, S extends DescMessage> {
  kind: K;
  schema: S;
  toProto(v: Effective<K>): MessageInitShape<S>;
  fromProto(m: MessageShape<S>): SettingInput<K>;
}

function handlers<K extends SettingKind, S extends DescMessage>(m: Mapping<K, S>) {
  return {
    async get(req: { organizationId: string }, hctx: HandlerContext) {
      return { settings: m.toProto(await getSettings(ctxOf(hctx), m.kind, req.organizationId || undefined)) };
    },
    async set(req: { organizationId: string; settings?: MessageShape<S>; updateMask?: FieldMask }, hctx: HandlerContext) {
      const patch = req.settings;
      // AIP-134: the fields named (update_mask, else the populated ones) change; the others keep what the owner has now.
      const update =
        patch && ((current: Effective<K>) => m.fromProto(applyUpdateMask(m.schema, create(m.schema, m.toProto(current)), patch, req.updateMask, "settings")));
      const row = await setSettings(ctxOf(hctx), m.kind, req.organizationId || undefined, update);
      return { details: details(row, row.ownerId) };
    },
    async reset(req: { organizationId: string }, hctx: HandlerContext) {
      const r = await resetSettings(ctxOf(hctx), m.kind, req.organizationId || undefined);
      return { details: { changeDate: ts(r.changedAt), resourceOwner: r.ownerId } };
    },
  };
}

const passwordComplexity: Mapping<"password_complexity", typeof PasswordComplexitySettingsSchema> = {
  kind: "password_complexity",
  schema: PasswordComplexitySettingsSchema,
  toProto: (s) => ({
    minLength: BigInt(s.minLength),
    requiresUppercase: s.requiresUppercase,
    requiresLowercase: s.requiresLowercase,
    requiresNumber: s.requiresNumber,
    requiresSymbol: s.requiresSymbol,
    historyCount: s.historyCount,
    resourceOwnerType: owner(s.resourceOwner),
  }),
  fromProto: (p: PasswordComplexitySettings) => ({
    minLength: Number(p.minLength),
    requiresUppercase: p.requiresUppercase,
    requiresLowercase: p.requiresLowercase,
    requiresNumber: p.requiresNumber,
    requiresSymbol: p.requiresSymbol,
    historyCount: p.historyCount,
  }),
};

const passwordExpiry: Mapping<"password_expiry", typeof PasswordExpirySettingsSchema> = {
  kind: "password_expiry",
  schema: PasswordExpirySettingsSchema,
  toProto: (s) => ({ maxAgeDays: BigInt(s.maxAgeDays), expireWarnDays: BigInt(s.expireWarnDays), resourceOwnerType: owner(s.resourceOwner) }),
  fromProto: (p: PasswordExpirySettings) => ({ maxAgeDays: Number(p.maxAgeDays), expireWarnDays: Number(p.expireWarnDays) }),
};

const lockout: Mapping<"lockout", typeof LockoutSettingsSchema> = {
  kind: "lockout",
  schema: LockoutSettingsSchema,
  toProto: (s) => ({
    maxPasswordAttempts: BigInt(s.maxPasswordAttempts),
    maxOtpAttempts: BigInt(s.maxOtpAttempts),
    resourceOwnerType: owner(s.resourceOwner),
    permanentLockout: s.permanentLockout,
    lockoutDurationSeconds: BigInt(s.lockoutDurationSeconds),
    maxLockoutDurationSeconds: BigInt(s.maxLockoutDurationSeconds),
  }),
  fromProto: (p: LockoutSettings) => ({
    maxPasswordAttempts: Number(p.maxPasswordAttempts),
    maxOtpAttempts: Number(p.maxOtpAttempts),
    permanentLockout: p.permanentLockout,
    lockoutDurationSeconds: Number(p.lockoutDurationSeconds),
    maxLockoutDurationSeconds: Number(p.maxLockoutDurationSeconds),
  }),
};

const login: Mapping<"login", typeof LoginSettingsSchema> = {
  kind: "login",
  schema: LoginSettingsSchema,
  toProto: (s) => ({
    allowUsernamePassword: s.allowUsernamePassword,
    allowRegister: s.allowRegister,
    allowExternalIdp: s.allowExternalIdp,
    forceMfa: s.forceMfa,
    passkeysAllowed: s.passkeysAllowed,
    ignoreUnknownUsernames: s.ignoreUnknownUsernames,
    passwordCheckLifetime: duration(s.passwordCheckLifetimeSeconds),
    externalLoginCheckLifetime: duration(s.externalLoginCheckLifetimeSeconds),
    mfaInitSkipLifetime: duration(s.mfaInitSkipLifetimeSeconds),
    secondFactorCheckLifetime: duration(s.secondFactorCheckLifetimeSeconds),
    multiFactorCheckLifetime: duration(s.multiFactorCheckLifetimeSeconds),
    resourceOwnerType: owner(s.resourceOwner),
    secondFactors: s.secondFactors.map((f) => SECOND_FACTORS[f]),
    multiFactors: s.multiFactors.map((f) => MULTI_FACTORS[f]),
  }),
  fromProto: (p: LoginSettings) => ({
    allowUsernamePassword: p.allowUsernamePassword,
    allowRegister: p.allowRegister,
    allowExternalIdp: p.allowExternalIdp,
    forceMfa: p.forceMfa,
    passkeysAllowed: p.passkeysAllowed,
    ignoreUnknownUsernames: p.ignoreUnknownUsernames,
    passwordCheckLifetimeSeconds: seconds(p.passwordCheckLifetime),
    externalLoginCheckLifetimeSeconds: seconds(p.externalLoginCheckLifetime),
    mfaInitSkipLifetimeSeconds: seconds(p.mfaInitSkipLifetime),
    secondFactorCheckLifetimeSeconds: seconds(p.secondFactorCheckLifetime),
    multiFactorCheckLifetimeSeconds: seconds(p.multiFactorCheckLifetime),
    secondFactors: fromEnum(SECOND_FACTORS, p.secondFactors, "second_factors"),
    multiFactors: fromEnum(MULTI_FACTORS, p.multiFactors, "multi_factors"),
  }),
};

const security: Mapping<"security", typeof SecuritySettingsSchema> = {
  kind: "security",
  schema: SecuritySettingsSchema,
  toProto: (s) => ({
    allowedCorsOrigins: s.allowedCorsOrigins,
    embeddedIframe: { enabled: s.iframeEnabled, allowedOrigins: s.iframeAllowedOrigins },
    resourceOwnerType: owner(s.resourceOwner),
  }),
  fromProto: (p: SecuritySettings) => ({
    allowedCorsOrigins: p.allowedCorsOrigins,
    iframeEnabled: p.embeddedIframe?.enabled ?? false,
    iframeAllowedOrigins: p.embeddedIframe?.allowedOrigins ?? [],
  }),
};

const THEME_TO_PROTO: Record<ThemeModeName, ThemeMode> = { auto: ThemeMode.AUTO, light: ThemeMode.LIGHT, dark: ThemeMode.DARK };
const THEME_FROM_PROTO: Record<number, ThemeModeName> = {
  [ThemeMode.UNSPECIFIED]: "auto",
  [ThemeMode.AUTO]: "auto",
  [ThemeMode.LIGHT]: "light",
  [ThemeMode.DARK]: "dark",
};

const branding: Mapping<"branding", typeof BrandingSettingsSchema> = {
  kind: "branding",
  schema: BrandingSettingsSchema,
  toProto: (s) => ({
    primaryColor: s.primaryColor,
    backgroundColor: s.backgroundColor,
    warnColor: s.warnColor,
    fontColor: s.fontColor,
    logoUrl: s.logoUrl,
    hideLoginNameSuffix: s.hideLoginNameSuffix,
    disableWatermark: s.disableWatermark,
    resourceOwnerType: owner(s.resourceOwner),
    themeMode: THEME_TO_PROTO[s.themeMode],
    darkPrimaryColor: s.darkPrimaryColor,
    darkBackgroundColor: s.darkBackgroundColor,
    darkWarnColor: s.darkWarnColor,
    darkFontColor: s.darkFontColor,
    darkLogoUrl: s.darkLogoUrl,
  }),
  fromProto: (p: BrandingSettings) => ({
    primaryColor: p.primaryColor,
    backgroundColor: p.backgroundColor,
    warnColor: p.warnColor,
    fontColor: p.fontColor,
    logoUrl: p.logoUrl,
    hideLoginNameSuffix: p.hideLoginNameSuffix,
    disableWatermark: p.disableWatermark,
    themeMode: THEME_FROM_PROTO[p.themeMode] ?? "auto",
    darkPrimaryColor: p.darkPrimaryColor,
    darkBackgroundColor: p.darkBackgroundColor,
    darkWarnColor: p.darkWarnColor,
    darkFontColor: p.darkFontColor,
    darkLogoUrl: p.darkLogoUrl,
  }),
};

const domain: Mapping<"domain", typeof DomainSettingsSchema> = {
  kind: "domain",
  schema: DomainSettingsSchema,
  toProto: (s) => ({
    loginNameIncludesDomain: s.loginNameIncludesDomain,
    smtpSenderAddressMatchesInstanceDomain: s.smtpSenderAddressMatchesInstanceDomain,
    usernamesUniqueInInstance: s.usernamesUniqueInInstance,
    resourceOwnerType: owner(s.resourceOwner),
  }),
  fromProto: (p: DomainSettings) => ({
    loginNameIncludesDomain: p.loginNameIncludesDomain,
    smtpSenderAddressMatchesInstanceDomain: p.smtpSenderAddressMatchesInstanceDomain,
    usernamesUniqueInInstance: p.usernamesUniqueInInstance,
  }),
};

const language: Mapping<"language", typeof LanguageSettingsSchema> = {
  kind: "language",
  schema: LanguageSettingsSchema,
  toProto: (s) => ({ defaultLanguage: s.defaultLanguage, supportedLanguages: [...MAIL_LANGUAGES], resourceOwnerType: owner(s.resourceOwner) }),
  fromProto: (p: LanguageSettings) => ({ defaultLanguage: p.defaultLanguage as MailLanguage }),
};

export function settingsService(): ServiceImpl<typeof SettingsService> {
  const pc = handlers(passwordComplexity);
  const pe = handlers(passwordExpiry);
  const lo = handlers(lockout);
  const li = handlers(login);
  const se = handlers(security);
  const br = handlers(branding);
  const dm = handlers(domain);
  const la = handlers(language);
  return {
    getPasswordComplexitySettings: pc.get,
    setPasswordComplexitySettings: pc.set,
    resetPasswordComplexitySettings: pc.reset,
    getPasswordExpirySettings: pe.get,
    setPasswordExpirySettings: pe.set,
    resetPasswordExpirySettings: pe.reset,
    getLockoutSettings: lo.get,
    setLockoutSettings: lo.set,
    resetLockoutSettings: lo.reset,
    getLoginSettings: li.get,
    setLoginSettings: li.set,
    resetLoginSettings: li.reset,
    getSecuritySettings: se.get,
    setSecuritySettings: se.set,
    resetSecuritySettings: se.reset,
    getBrandingSettings: br.get,
    setBrandingSettings: br.set,
    resetBrandingSettings: br.reset,
    getDomainSettings: dm.get,
    setDomainSettings: dm.set,
    resetDomainSettings: dm.reset,
    getLanguageSettings: la.get,
    setLanguageSettings: la.set,
    resetLanguageSettings: la.reset,
  };
}
