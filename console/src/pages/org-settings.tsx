// An organization's own sign-in, password and lockout settings: each shows whether the organization follows the
// instance's or has its own, saves its own (the whole message as read, changed, with update_mask "*") and resets to
// the instance's.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Card, Group, SimpleGrid, Stack, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { type LockoutSettings, type LoginSettings, type PasswordComplexitySettings, ResourceOwnerType } from "../../../gen/svc/settings/v2/settings_pb";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { SaveRow } from "../fields";
import { useI18n } from "../i18n";
import { ConfirmButton } from "../ui";
import { LockoutCounts, LoginFlags, PasswordRules, useDraft } from "./settings-form";

function useRefresh() {
  const client = useQueryClient();
  return { onSuccess: () => client.invalidateQueries() };
}

interface Calls<T> {
  got: { data?: { settings?: T }; error: unknown };
  set: { error: unknown; isPending: boolean; mutate(r: { organizationId: string; settings: T; updateMask: { paths: string[] } }): void };
  reset: { error: unknown; mutateAsync(r: { organizationId: string }): Promise<unknown> };
}

/** One kind of the organization's settings: whose they are, the fields, save (all of them) and reset to the instance's. */
function Section<T extends { resourceOwnerType: ResourceOwnerType }>(props: {
  title: string;
  orgId: string;
  canWrite: boolean;
  calls: Calls<T>;
  children(s: T, setS: (s: T) => void): ReactNode;
}) {
  const { t } = useI18n();
  const { got, set, reset } = props.calls;
  const [s, setS] = useDraft(got.data?.settings);
  const own = s && s.resourceOwnerType === ResourceOwnerType.ORG;
  return (
    <Card withBorder>
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={3} size="h4">
          {props.title}
        </Title>
        {own !== undefined && (
          <Badge variant="filled" autoContrast color={own ? "blue.9" : "gray.7"}>
            {t(own ? "orgSettings.own" : "orgSettings.inherited")}
          </Badge>
        )}
      </Group>
      <Stack>
        {s && props.children(s, setS)}
        <SaveRow
          error={got.error ?? set.error ?? reset.error}
          canWrite={props.canWrite && !!s}
          saving={set.isPending}
          onSave={() => s && set.mutate({ organizationId: props.orgId, settings: s, updateMask: { paths: ["*"] } })}
          label={t("orgSettings.save")}
        >
          {own && (
            <ConfirmButton
              label={t("orgSettings.reset")}
              title={t("orgSettings.resetTitle")}
              body={t("orgSettings.resetBody", { section: props.title })}
              confirmLabel={t("orgSettings.reset")}
              onConfirm={() => reset.mutateAsync({ organizationId: props.orgId })}
            />
          )}
        </SaveRow>
      </Stack>
    </Card>
  );
}

function LoginSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const calls = {
    got: useQuery(SettingsService.method.getLoginSettings, { organizationId: orgId }),
    set: useMutation(SettingsService.method.setLoginSettings, refresh),
    reset: useMutation(SettingsService.method.resetLoginSettings, refresh),
  };
  return (
    <Section<LoginSettings> title={t("settings.login")} orgId={orgId} canWrite={canWrite} calls={calls}>
      {(s, setS) => <LoginFlags s={s} setS={setS} disabled={!canWrite} />}
    </Section>
  );
}

function PasswordSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const calls = {
    got: useQuery(SettingsService.method.getPasswordComplexitySettings, { organizationId: orgId }),
    set: useMutation(SettingsService.method.setPasswordComplexitySettings, refresh),
    reset: useMutation(SettingsService.method.resetPasswordComplexitySettings, refresh),
  };
  return (
    <Section<PasswordComplexitySettings> title={t("settings.passwords")} orgId={orgId} canWrite={canWrite} calls={calls}>
      {(s, setS) => <PasswordRules s={s} setS={setS} disabled={!canWrite} />}
    </Section>
  );
}

function LockoutSection({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const calls = {
    got: useQuery(SettingsService.method.getLockoutSettings, { organizationId: orgId }),
    set: useMutation(SettingsService.method.setLockoutSettings, refresh),
    reset: useMutation(SettingsService.method.resetLockoutSettings, refresh),
  };
  return (
    <Section<LockoutSettings> title={t("settings.lockout")} orgId={orgId} canWrite={canWrite} calls={calls}>
      {(s, setS) => <LockoutCounts s={s} setS={setS} disabled={!canWrite} />}
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
