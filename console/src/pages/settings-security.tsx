// The instance's browser-facing security: the origins allowed to call the API from a browser (CORS), and whether
// (and by which origins) the hosted login may be embedded in an iframe.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Stack, Switch, Textarea } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { SaveRow } from "../fields";
import { useI18n } from "../i18n";
import { ApiError } from "../ui";

const origins = (s: string) => s.split(/[\s,]+/).filter(Boolean);

export function Security({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const got = useQuery(SettingsService.method.getSecuritySettings, {});
  const set = useMutation(SettingsService.method.setSecuritySettings, { onSuccess: () => client.invalidateQueries() });
  const [cors, setCors] = useState("");
  const [iframe, setIframe] = useState(false);
  const [frameOrigins, setFrameOrigins] = useState("");
  useEffect(() => {
    const s = got.data?.settings;
    if (!s) return;
    setCors(s.allowedCorsOrigins.join("\n"));
    setIframe(s.embeddedIframe?.enabled ?? false);
    setFrameOrigins((s.embeddedIframe?.allowedOrigins ?? []).join("\n"));
  }, [got.data]);
  if (!got.data) return <ApiError error={got.error} />;
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        set.mutate({
          settings: { allowedCorsOrigins: origins(cors), embeddedIframe: { enabled: iframe, allowedOrigins: origins(frameOrigins) } },
          updateMask: { paths: ["*"] },
        });
      }}
    >
      <Stack>
        <Textarea
          label={t("settings.corsOrigins")}
          description={t("settings.corsHint")}
          placeholder="https://app.example.com"
          value={cors}
          onChange={(e) => setCors(e.currentTarget.value)}
          disabled={readOnly}
          autosize
          minRows={2}
        />
        <Switch label={t("settings.iframe")} checked={iframe} disabled={readOnly} onChange={(e) => setIframe(e.currentTarget.checked)} />
        {iframe && (
          <Textarea
            label={t("settings.iframeOrigins")}
            placeholder="https://portal.example.com"
            value={frameOrigins}
            onChange={(e) => setFrameOrigins(e.currentTarget.value)}
            disabled={readOnly}
            autosize
            minRows={1}
          />
        )}
        <SaveRow error={set.error} canWrite={!readOnly} saving={set.isPending}>
          {set.isSuccess && <span role="status">{t("apps.saved")}</span>}
        </SaveRow>
      </Stack>
    </form>
  );
}
