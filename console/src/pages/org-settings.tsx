// An organization's own sign-in, password and lockout settings: each shows whether the organization follows the
// instance's or has its own, saves its own (the whole message as read, changed, with update_mask "*") and resets to
// the instance's.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Card, Checkbox, Group, NumberInput, SimpleGrid, Stack, Switch, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useState } from "react";
import { type LockoutSettings, type LoginSettings, type PasswordComplexitySettings, ResourceOwnerType } from "../../../gen/svc/settings/v2/settings_pb";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { useI18n } from "../i18n";
import { ApiError, ConfirmButton } from "../ui";

function useRefresh() {
  const client = useQueryClient();
  return { onSuccess: () => client.invalidateQueries() };
}

function Section(props: {
  title: string;
  own: boolean | undefined;
  canWrite: boolean;
  error: unknown;
  saving: boolean;
  onSave(): void;
  onReset(): Promise<unknown>;
  children: ReactNode;
}) {
  const { t } = useI18n();
  return (
    <Card withBorder>
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={3} size="h4">
          {props.title}
        </Title>
        {props.own !== undefined && (
          <Badge variant="filled" autoContrast color={props.own ? "blue.9" : "gray.7"}>
            {t(props.own ? "orgSettings.own" : "orgSettings.inherited")}
          </Badge>
        )}
      </Group>
      <Stack>
        {props.children}
        <ApiError error={props.error} />
        {props.canWrite && (
          <Group>
            <Button loading={props.saving} onClick={props.onSave}>
              {t("orgSettings.save")}
            </Button>
            {props.own && (
              <ConfirmButton
                label={t("orgSettings.reset")}
                title={t("orgSettings.resetTitle")}
                body={t("orgSettings.resetBody", { section: props.title })}
                confirmLabel={t("orgSettings.reset")}
                onConfirm={props.onReset}
              />
            )}
          </Group>
        )}
      </Stack>
    </Card>
  );
}

function LoginSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const got = useQuery(SettingsService.method.getLoginSettings, { organizationId: orgId });
  const set = useMutation(SettingsService.method.setLoginSettings, refresh);
  const reset = useMutation(SettingsService.method.resetLoginSettings, refresh);
  const [s, setS] = useState<LoginSettings>();
  useEffect(() => setS(got.data?.settings), [got.data]);
  const flag = (k: "allowUsernamePassword" | "allowRegister" | "allowExternalIdp" | "forceMfa" | "passkeysAllowed" | "ignoreUnknownUsernames", label: string) =>
    s && <Switch label={label} checked={s[k]} disabled={!canWrite} onChange={(e) => setS({ ...s, [k]: e.currentTarget.checked })} />;
  return (
    <Section
      title={t("settings.login")}
      own={s && s.resourceOwnerType === ResourceOwnerType.ORG}
      canWrite={canWrite && !!s}
      error={got.error ?? set.error ?? reset.error}
      saving={set.isPending}
      onSave={() => s && set.mutate({ organizationId: orgId, settings: s, updateMask: { paths: ["*"] } })}
      onReset={() => reset.mutateAsync({ organizationId: orgId })}
    >
      {flag("allowUsernamePassword", t("settings.allowPassword"))}
      {flag("passkeysAllowed", t("settings.passkeys"))}
      {flag("allowExternalIdp", t("settings.externalIdp"))}
      {flag("allowRegister", t("settings.register"))}
      {flag("forceMfa", t("settings.forceMfa"))}
      {flag("ignoreUnknownUsernames", t("settings.ignoreUnknown"))}
    </Section>
  );
}

function PasswordSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const got = useQuery(SettingsService.method.getPasswordComplexitySettings, { organizationId: orgId });
  const set = useMutation(SettingsService.method.setPasswordComplexitySettings, refresh);
  const reset = useMutation(SettingsService.method.resetPasswordComplexitySettings, refresh);
  const [s, setS] = useState<PasswordComplexitySettings>();
  useEffect(() => setS(got.data?.settings), [got.data]);
  const flag = (k: "requiresUppercase" | "requiresLowercase" | "requiresNumber" | "requiresSymbol", label: string) =>
    s && <Checkbox label={label} checked={s[k]} disabled={!canWrite} onChange={(e) => setS({ ...s, [k]: e.currentTarget.checked })} />;
  return (
    <Section
      title={t("settings.passwords")}
      own={s && s.resourceOwnerType === ResourceOwnerType.ORG}
      canWrite={canWrite && !!s}
      error={got.error ?? set.error ?? reset.error}
      saving={set.isPending}
      onSave={() => s && set.mutate({ organizationId: orgId, settings: s, updateMask: { paths: ["*"] } })}
      onReset={() => reset.mutateAsync({ organizationId: orgId })}
    >
      {s && (
        <NumberInput
          label={t("settings.minLength")}
          min={1}
          max={256}
          value={Number(s.minLength)}
          disabled={!canWrite}
          onChange={(v) => setS({ ...s, minLength: BigInt(Number(v) || 1) })}
        />
      )}
      {flag("requiresUppercase", t("settings.upper"))}
      {flag("requiresLowercase", t("settings.lower"))}
      {flag("requiresNumber", t("settings.number"))}
      {flag("requiresSymbol", t("settings.symbol"))}
    </Section>
  );
}

function LockoutSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const got = useQuery(SettingsService.method.getLockoutSettings, { organizationId: orgId });
  const set = useMutation(SettingsService.method.setLockoutSettings, refresh);
  const reset = useMutation(SettingsService.method.resetLockoutSettings, refresh);
  const [s, setS] = useState<LockoutSettings>();
  useEffect(() => setS(got.data?.settings), [got.data]);
  const count = (k: "maxPasswordAttempts" | "maxOtpAttempts", label: string) =>
    s && (
      <NumberInput
        label={label}
        description={t("settings.zeroOff")}
        min={0}
        max={1000}
        value={Number(s[k])}
        disabled={!canWrite}
        onChange={(v) => setS({ ...s, [k]: BigInt(Number(v) || 0) })}
      />
    );
  return (
    <Section
      title={t("settings.lockout")}
      own={s && s.resourceOwnerType === ResourceOwnerType.ORG}
      canWrite={canWrite && !!s}
      error={got.error ?? set.error ?? reset.error}
      saving={set.isPending}
      onSave={() => s && set.mutate({ organizationId: orgId, settings: s, updateMask: { paths: ["*"] } })}
      onReset={() => reset.mutateAsync({ organizationId: orgId })}
    >
      {count("maxPasswordAttempts", t("settings.maxPasswordAttempts"))}
      {count("maxOtpAttempts", t("settings.maxOtpAttempts"))}
    </Section>
  );
}

export function OrgSettings({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <LoginSection orgId={orgId} canWrite={canWrite} />
      <Stack>
        <PasswordSection orgId={orgId} canWrite={canWrite} />
        <LockoutSection orgId={orgId} canWrite={canWrite} />
      </Stack>
    </SimpleGrid>
  );
}
