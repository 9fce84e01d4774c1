// What the instance's and an organization's settings forms share: the copy of the settings being edited, the fields
// both show (sign-in switches, password rules, lockout counts).
import { Checkbox, NumberInput, Switch } from "@mantine/core";
import { useEffect, useState } from "react";
import type { LockoutSettings, LoginSettings, PasswordComplexitySettings } from "../../../gen/svc/settings/v2/settings_pb";
import { useI18n } from "../i18n";

/** The settings as read, edited in place until saved; read again (after a save), they replace the edits. */
export function useDraft<T>(read: T | undefined) {
  const [draft, setDraft] = useState<T>();
  useEffect(() => setDraft(read), [read]);
  return [draft, setDraft] as const;
}

interface FieldsProps<T> {
  s: T;
  setS(s: T): void;
  disabled: boolean;
}

type LoginFlag = "allowUsernamePassword" | "allowRegister" | "allowExternalIdp" | "forceMfa" | "passkeysAllowed" | "ignoreUnknownUsernames";

/** The sign-in switches: which ways in, registration, MFA and unknown usernames. */
export function LoginFlags({ s, setS, disabled }: FieldsProps<LoginSettings>) {
  const { t } = useI18n();
  const flag = (k: LoginFlag, label: string) => (
    <Switch label={label} checked={s[k]} disabled={disabled} onChange={(e) => setS({ ...s, [k]: e.currentTarget.checked })} />
  );
  return (
    <>
      {flag("allowUsernamePassword", t("settings.allowPassword"))}
      {flag("passkeysAllowed", t("settings.passkeys"))}
      {flag("allowExternalIdp", t("settings.externalIdp"))}
      {flag("allowRegister", t("settings.register"))}
      {flag("forceMfa", t("settings.forceMfa"))}
      {flag("ignoreUnknownUsernames", t("settings.ignoreUnknown"))}
    </>
  );
}

/** A password's length and the kinds of character it needs. */
export function PasswordRules({ s, setS, disabled }: FieldsProps<PasswordComplexitySettings>) {
  const { t } = useI18n();
  const flag = (k: "requiresUppercase" | "requiresLowercase" | "requiresNumber" | "requiresSymbol", label: string) => (
    <Checkbox label={label} checked={s[k]} disabled={disabled} onChange={(e) => setS({ ...s, [k]: e.currentTarget.checked })} />
  );
  return (
    <>
      <NumberInput
        label={t("settings.minLength")}
        min={1}
        max={256}
        value={Number(s.minLength)}
        disabled={disabled}
        onChange={(v) => setS({ ...s, minLength: BigInt(Number(v) || 1) })}
      />
      {flag("requiresUppercase", t("settings.upper"))}
      {flag("requiresLowercase", t("settings.lower"))}
      {flag("requiresNumber", t("settings.number"))}
      {flag("requiresSymbol", t("settings.symbol"))}
    </>
  );
}

/** How many wrong passwords and one-time codes lock a user (0: never). */
export function LockoutCounts({ s, setS, disabled }: FieldsProps<LockoutSettings>) {
  const { t } = useI18n();
  const count = (k: "maxPasswordAttempts" | "maxOtpAttempts", label: string) => (
    <NumberInput
      label={label}
      description={t("settings.zeroOff")}
      min={0}
      max={1000}
      value={Number(s[k])}
      disabled={disabled}
      onChange={(v) => setS({ ...s, [k]: BigInt(Number(v) || 0) })}
    />
  );
  return (
    <>
      {count("maxPasswordAttempts", t("settings.maxPasswordAttempts"))}
      {count("maxOtpAttempts", t("settings.maxOtpAttempts"))}
    </>
  );
}
