// The instance's languages and mails: the default language of the hosted login and of mails (LanguageSettings), and
// the instance's own subject, heading and text of each mail in each language (MailTextService), with the variables
// they may name and a reset to svc's texts.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Code, Group, SegmentedControl, Select, Stack, Text, Textarea, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { MailTextService } from "../../../gen/svc/settings/v2/mail_text_service_pb";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { SaveRow } from "../fields";
import { type MessageKey, useI18n } from "../i18n";
import { ApiError, ConfirmButton } from "../ui";

const LANGUAGE_NAMES: Record<string, MessageKey> = { en: "mail.langEn", de: "mail.langDe" };

export function Languages({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const got = useQuery(SettingsService.method.getLanguageSettings, {});
  const set = useMutation(SettingsService.method.setLanguageSettings, { onSuccess: () => client.invalidateQueries() });
  const s = got.data?.settings;
  if (!s) return <ApiError error={got.error} />;
  return (
    <Stack>
      <Select
        label={t("mail.defaultLanguage")}
        description={t("mail.defaultLanguageHint")}
        value={s.defaultLanguage}
        disabled={readOnly}
        allowDeselect={false}
        data={s.supportedLanguages.map((l) => ({ value: l, label: LANGUAGE_NAMES[l] ? t(LANGUAGE_NAMES[l]) : l }))}
        onChange={(v) => v && set.mutate({ settings: { defaultLanguage: v }, updateMask: { paths: ["default_language"] } })}
      />
      <ApiError error={set.error} />
      {set.isSuccess && <span role="status">{t("apps.saved")}</span>}
    </Stack>
  );
}

const TYPES: [string, MessageKey][] = [
  ["verify_email", "mail.typeVerify"],
  ["password_reset", "mail.typeReset"],
  ["otp_email", "mail.typeOtp"],
  ["invite_user", "mail.typeInvite"],
];

export function MailTexts({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [type, setType] = useState("verify_email");
  const [language, setLanguage] = useState("en");
  const which = { type, language };
  const got = useQuery(MailTextService.method.getMailText, which);
  const saved = { onSuccess: () => client.invalidateQueries() };
  const set = useMutation(MailTextService.method.setMailText, saved);
  const reset = useMutation(MailTextService.method.resetMailText, saved);
  const [text, setText] = useState({ subject: "", title: "", text: "" });
  useEffect(() => {
    const m = got.data?.text;
    if (m) setText({ subject: m.subject, title: m.title, text: m.text });
  }, [got.data]);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        set.mutate({ ...which, text });
      }}
    >
      <Stack>
        <Group wrap="wrap">
          <Select
            label={t("mail.type")}
            value={type}
            allowDeselect={false}
            data={TYPES.map(([v, k]) => ({ value: v, label: t(k) }))}
            onChange={(v) => v && setType(v)}
          />
          <SegmentedControl
            aria-label={t("mail.language")}
            value={language}
            onChange={setLanguage}
            data={Object.entries(LANGUAGE_NAMES).map(([v, k]) => ({ value: v, label: t(k) }))}
          />
          {got.data && <Badge variant="default">{t(got.data.isDefault ? "mail.isDefault" : "mail.isOwn")}</Badge>}
        </Group>
        <ApiError error={got.error} />
        <TextInput label={t("mail.subject")} value={text.subject} disabled={readOnly} onChange={(e) => setText({ ...text, subject: e.currentTarget.value })} />
        <TextInput label={t("mail.heading")} value={text.title} disabled={readOnly} onChange={(e) => setText({ ...text, title: e.currentTarget.value })} />
        <Textarea
          label={t("mail.text")}
          value={text.text}
          disabled={readOnly}
          autosize
          minRows={3}
          onChange={(e) => setText({ ...text, text: e.currentTarget.value })}
        />
        <Text size="sm">
          {t("mail.variables")}{" "}
          {got.data?.variables.map((v) => (
            <Code key={v} mr={4}>{`{${v}}`}</Code>
          ))}
        </Text>
        <SaveRow error={set.error ?? reset.error} canWrite={!readOnly} saving={set.isPending}>
          {got.data && !got.data.isDefault && (
            <ConfirmButton
              label={t("mail.reset")}
              title={t("mail.reset")}
              body={t("mail.resetBody")}
              confirmLabel={t("mail.reset")}
              onConfirm={() => reset.mutateAsync(which)}
            />
          )}
          {set.isSuccess && <span role="status">{t("apps.saved")}</span>}
        </SaveRow>
      </Stack>
    </form>
  );
}
