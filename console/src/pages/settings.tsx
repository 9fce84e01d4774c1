// Instance-wide settings (instance administrators only): the sign-in methods, password rules, lockout, security,
// languages and mail texts, and who administers the instance. Each form sends the whole settings message it read, changed.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Group, NumberInput, SimpleGrid, Stack, Switch, Table } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { InstanceService } from "../../../gen/svc/instance/v2/instance_service_pb";
import type { LockoutSettings, LoginSettings, PasswordComplexitySettings } from "../../../gen/svc/settings/v2/settings_pb";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { type Access, useAccess } from "../access";
import { SaveRow } from "../fields";
import { useI18n } from "../i18n";
import { useLink } from "../router";
import { ApiError, PageHeader, TitledCard } from "../ui";
import { LockoutCounts, LoginFlags, PasswordRules, useDraft } from "./settings-form";
import { LoginMore } from "./settings-login-more";
import { Languages, MailTexts } from "./settings-mail";
import { Security } from "./settings-security";

function useSaved() {
  const client = useQueryClient();
  return { onSuccess: () => client.invalidateQueries() };
}

/** One kind of the instance's settings: read, edited here, saved whole (update_mask "*"). */
function SettingsForm<T>(props: {
  readOnly: boolean;
  got: { data?: { settings?: T }; error: unknown };
  set: { error: unknown; isPending: boolean; mutate(r: { settings: T; updateMask: { paths: string[] } }): void };
  children(s: T, setS: (s: T) => void): ReactNode;
}) {
  const { got, set } = props;
  const [s, setS] = useDraft(got.data?.settings);
  if (!s) return <ApiError error={got.error} />;
  return (
    <Stack>
      {props.children(s, setS)}
      <SaveRow error={set.error} canWrite={!props.readOnly} saving={set.isPending} onSave={() => set.mutate({ settings: s, updateMask: { paths: ["*"] } })} />
    </Stack>
  );
}

function Login({ readOnly }: { readOnly: boolean }) {
  const got = useQuery(SettingsService.method.getLoginSettings, {});
  const set = useMutation(SettingsService.method.setLoginSettings, useSaved());
  return (
    <SettingsForm<LoginSettings> readOnly={readOnly} got={got} set={set}>
      {(s, setS) => (
        <>
          <LoginFlags s={s} setS={setS} disabled={readOnly} />
          <LoginMore s={s} setS={setS} readOnly={readOnly} />
        </>
      )}
    </SettingsForm>
  );
}

function Passwords({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const got = useQuery(SettingsService.method.getPasswordComplexitySettings, {});
  const set = useMutation(SettingsService.method.setPasswordComplexitySettings, useSaved());
  return (
    <SettingsForm<PasswordComplexitySettings> readOnly={readOnly} got={got} set={set}>
      {(s, setS) => (
        <>
          <PasswordRules s={s} setS={setS} disabled={readOnly} />
          <NumberInput
            label={t("settings.historyCount")}
            description={t("settings.zeroOff")}
            min={0}
            max={24}
            value={s.historyCount}
            disabled={readOnly}
            onChange={(v) => setS({ ...s, historyCount: Number(v) || 0 })}
          />
        </>
      )}
    </SettingsForm>
  );
}

function Lockout({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const got = useQuery(SettingsService.method.getLockoutSettings, {});
  const set = useMutation(SettingsService.method.setLockoutSettings, useSaved());
  return (
    <SettingsForm<LockoutSettings> readOnly={readOnly} got={got} set={set}>
      {(s, setS) => (
        <>
          <LockoutCounts s={s} setS={setS} disabled={readOnly} />
          <Switch
            label={t("settings.permanentLockout")}
            description={t("settings.permanentLockoutHint")}
            checked={s.permanentLockout}
            disabled={readOnly}
            onChange={(e) => setS({ ...s, permanentLockout: e.currentTarget.checked })}
          />
          {!s.permanentLockout && (
            <Group grow align="flex-start">
              <NumberInput
                label={t("settings.lockoutDuration")}
                min={0}
                max={86400}
                value={Number(s.lockoutDurationSeconds) || 300}
                disabled={readOnly}
                onChange={(v) => setS({ ...s, lockoutDurationSeconds: BigInt(Number(v) || 0) })}
              />
              <NumberInput
                label={t("settings.maxLockoutDuration")}
                min={0}
                max={2592000}
                value={Number(s.maxLockoutDurationSeconds) || 3600}
                disabled={readOnly}
                onChange={(v) => setS({ ...s, maxLockoutDurationSeconds: BigInt(Number(v) || 0) })}
              />
            </Group>
          )}
        </>
      )}
    </SettingsForm>
  );
}

function Administrators() {
  const { t } = useI18n();
  const members = useQuery(InstanceService.method.listInstanceMembers, { query: { limit: 100 } });
  return (
    <>
      <ApiError error={members.error} />
      <Table data-testid="instance-members">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("orgs.user")}</Table.Th>
            <Table.Th>{t("orgs.roles")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {members.data?.result.map((m) => (
            <Table.Tr key={m.userId}>
              <Table.Td>{m.preferredLoginName || m.displayName}</Table.Td>
              <Table.Td>
                <Group gap={4}>
                  {m.roles.map((r) => (
                    <Badge key={r} variant="outline" color="gray.8">
                      {r}
                    </Badge>
                  ))}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </>
  );
}

function BrandingLink() {
  const { t } = useI18n();
  const link = useLink("/settings/branding");
  return (
    <Button component="a" variant="default" {...link}>
      {t("branding.title")}
    </Button>
  );
}

export default function Settings(_props: { params: string[] }) {
  const { t } = useI18n();
  const access = useAccess().data as Access | undefined;
  const readOnly = !access?.instanceWrite;
  return (
    <>
      <PageHeader title={t("settings.title")} actions={<BrandingLink />} />
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <TitledCard title={t("settings.login")}>
          <Login readOnly={readOnly} />
        </TitledCard>
        <Stack>
          <TitledCard title={t("settings.passwords")}>
            <Passwords readOnly={readOnly} />
          </TitledCard>
          <TitledCard title={t("settings.lockout")}>
            <Lockout readOnly={readOnly} />
          </TitledCard>
        </Stack>
      </SimpleGrid>
      <Stack mt="md">
        <TitledCard title={t("settings.security")}>
          <Security readOnly={readOnly} />
        </TitledCard>
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          <TitledCard title={t("mail.languages")}>
            <Languages readOnly={readOnly} />
          </TitledCard>
          <TitledCard title={t("mail.texts")}>
            <MailTexts readOnly={readOnly} />
          </TitledCard>
        </SimpleGrid>
        <TitledCard title={t("settings.admins")}>
          <Administrators />
        </TitledCard>
      </Stack>
    </>
  );
}
