// The hosted login's branding (the instance default): colours for light and dark, logos, which theme applies, the
// login-name suffix and the watermark, with a live preview that uses the hosted login's own custom properties
// (--primary, --background, --warn, --font and the mixes src/http/login/assets/login.css derives from them).
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, Card, Checkbox, ColorInput, Group, SegmentedControl, SimpleGrid, Stack, Text, TextInput, Title, useComputedColorScheme } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { type CSSProperties, useEffect, useState } from "react";
import { type BrandingSettings, ThemeMode } from "../../../gen/svc/settings/v2/settings_pb";
import { SettingsService } from "../../../gen/svc/settings/v2/settings_service_pb";
import { useAccess } from "../access";
import { useI18n } from "../i18n";
import { ApiError, PageHeader } from "../ui";

/** The built-in dark palette (BrandingSettings' documentation): what an empty dark colour means. */
const DARK_DEFAULT = { primary: "#6ea8fe", background: "#0d1117", warn: "#ff7b72", font: "#e6edf3" };
const COLOR = /^#[0-9a-fA-F]{6}$/;
const safe = (c: string, fallback: string) => (COLOR.test(c) ? c : fallback);

type Scheme = "light" | "dark";

function palette(b: BrandingSettings, scheme: Scheme) {
  if (scheme === "dark") {
    return {
      primary: safe(b.darkPrimaryColor, DARK_DEFAULT.primary),
      background: safe(b.darkBackgroundColor, DARK_DEFAULT.background),
      warn: safe(b.darkWarnColor, DARK_DEFAULT.warn),
      font: safe(b.darkFontColor, DARK_DEFAULT.font),
      logo: b.darkLogoUrl || b.logoUrl,
    };
  }
  return {
    primary: safe(b.primaryColor, "#2f6feb"),
    background: safe(b.backgroundColor, "#ffffff"),
    warn: safe(b.warnColor, "#d93025"),
    font: safe(b.fontColor, "#1f2328"),
    logo: b.logoUrl,
  };
}

/** The name page of the hosted login, drawn with its layout's variables. */
function Preview({ b, scheme }: { b: BrandingSettings; scheme: Scheme }) {
  const { t } = useI18n();
  const p = palette(b, scheme);
  const vars = {
    "--primary": p.primary,
    "--background": p.background,
    "--warn": p.warn,
    "--font": p.font,
    "--muted": "color-mix(in srgb, var(--font) 70%, var(--background))",
    "--border": "color-mix(in srgb, var(--font) 25%, var(--background))",
    "--page": "color-mix(in srgb, var(--background) 94%, var(--font))",
    "--link": "color-mix(in srgb, var(--primary) 80%, var(--font))",
    background: "var(--page)",
    color: "var(--font)",
    colorScheme: scheme,
    padding: "2rem 1rem",
    borderRadius: 8,
    font: '1rem / 1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
  } as CSSProperties;
  const loginName = b.hideLoginNameSuffix ? "alice" : "alice@acme.example";
  return (
    <div
      style={vars}
      data-testid={`branding-preview-${scheme}`}
      aria-label={t("branding.previewOf", { scheme: t(scheme === "dark" ? "branding.dark" : "branding.light") })}
      role="img"
    >
      <div
        style={{
          maxWidth: "22rem",
          margin: "0 auto",
          padding: "1.5rem",
          background: "var(--background)",
          border: "1px solid var(--border)",
          borderRadius: "0.75rem",
        }}
      >
        {p.logo && <img src={p.logo} alt="" style={{ display: "block", maxHeight: "3rem", maxWidth: "12rem", marginBottom: "1rem" }} />}
        <div style={{ fontSize: "1.4rem", fontWeight: 700, lineHeight: 1.25, marginBottom: "0.25rem" }}>{t("branding.sampleTitle")}</div>
        <div style={{ color: "var(--muted)", marginBottom: "1rem" }}>{loginName}</div>
        <div style={{ fontWeight: 600, fontSize: "0.9rem", marginBottom: 4 }}>{t("branding.samplePassword")}</div>
        <div style={{ border: "1px solid var(--warn)", borderRadius: 6, height: "2.4rem", background: "var(--background)" }} />
        <div style={{ color: "var(--warn)", fontSize: "0.9rem", margin: "0.25rem 0 1rem" }}>{t("branding.sampleError")}</div>
        <div
          style={{
            background: "var(--primary)",
            color: "var(--background)",
            borderRadius: 6,
            padding: "0.6rem",
            textAlign: "center",
            fontWeight: 600,
          }}
        >
          {t("branding.sampleContinue")}
        </div>
        <div style={{ color: "var(--link)", textDecoration: "underline", marginTop: "0.75rem", fontSize: "0.9rem" }}>{t("branding.sampleForgot")}</div>
      </div>
      {!b.disableWatermark && (
        <div style={{ textAlign: "center", color: "var(--muted)", fontSize: "0.8rem", marginTop: "0.75rem" }}>{t("branding.watermark")}</div>
      )}
    </div>
  );
}

type ColorKey = "primaryColor" | "backgroundColor" | "warnColor" | "fontColor" | "darkPrimaryColor" | "darkBackgroundColor" | "darkWarnColor" | "darkFontColor";

export default function Branding(_props: { params: string[] }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const readOnly = !useAccess().data?.instanceWrite;
  const got = useQuery(SettingsService.method.getBrandingSettings, {});
  const set = useMutation(SettingsService.method.setBrandingSettings, { onSuccess: () => client.invalidateQueries() });
  const [b, setB] = useState<BrandingSettings>();
  // Under "auto", the preview starts in the console's own scheme.
  const [scheme, setScheme] = useState<Scheme>(useComputedColorScheme("light"));
  useEffect(() => setB(got.data?.settings), [got.data]);
  const color = (k: ColorKey, label: string) =>
    b && (
      <ColorInput
        label={label}
        format="hex"
        value={b[k]}
        placeholder={k.startsWith("dark") ? t("branding.darkDefault") : undefined}
        disabled={readOnly}
        onChange={(v) => setB({ ...b, [k]: v })}
        withEyeDropper={false}
      />
    );
  // Under "auto" both palettes apply (by the browser's choice): the preview shows either; otherwise the one in force.
  const shown: Scheme = b?.themeMode === ThemeMode.DARK ? "dark" : b?.themeMode === ThemeMode.LIGHT ? "light" : scheme;
  return (
    <>
      <PageHeader title={t("branding.title")} back={{ to: "/settings", label: t("nav.settings") }} />
      <ApiError error={got.error} />
      {b && (
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              set.mutate({ settings: b, updateMask: { paths: ["*"] } });
            }}
          >
            <Stack>
              <Card withBorder>
                <Stack>
                  <SegmentedControl
                    value={String(b.themeMode === ThemeMode.UNSPECIFIED ? ThemeMode.AUTO : b.themeMode)}
                    onChange={(v) => setB({ ...b, themeMode: Number(v) as ThemeMode })}
                    disabled={readOnly}
                    aria-label={t("branding.theme")}
                    data={[
                      { value: String(ThemeMode.AUTO), label: t("branding.auto") },
                      { value: String(ThemeMode.LIGHT), label: t("branding.light") },
                      { value: String(ThemeMode.DARK), label: t("branding.dark") },
                    ]}
                  />
                  <Title order={2} size="h5">
                    {t("branding.lightColors")}
                  </Title>
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    {color("primaryColor", t("branding.primary"))}
                    {color("backgroundColor", t("branding.background"))}
                    {color("warnColor", t("branding.warn"))}
                    {color("fontColor", t("branding.font"))}
                  </SimpleGrid>
                  <TextInput
                    label={t("branding.logo")}
                    placeholder="https://…"
                    value={b.logoUrl}
                    disabled={readOnly}
                    onChange={(e) => setB({ ...b, logoUrl: e.currentTarget.value })}
                  />
                  <Title order={2} size="h5">
                    {t("branding.darkColors")}
                  </Title>
                  <SimpleGrid cols={{ base: 1, sm: 2 }}>
                    {color("darkPrimaryColor", t("branding.primary"))}
                    {color("darkBackgroundColor", t("branding.background"))}
                    {color("darkWarnColor", t("branding.warn"))}
                    {color("darkFontColor", t("branding.font"))}
                  </SimpleGrid>
                  <TextInput
                    label={t("branding.darkLogo")}
                    placeholder="https://…"
                    value={b.darkLogoUrl}
                    disabled={readOnly}
                    onChange={(e) => setB({ ...b, darkLogoUrl: e.currentTarget.value })}
                  />
                  <Checkbox
                    label={t("branding.hideSuffix")}
                    checked={b.hideLoginNameSuffix}
                    disabled={readOnly}
                    onChange={(e) => setB({ ...b, hideLoginNameSuffix: e.currentTarget.checked })}
                  />
                  <Checkbox
                    label={t("branding.noWatermark")}
                    checked={b.disableWatermark}
                    disabled={readOnly}
                    onChange={(e) => setB({ ...b, disableWatermark: e.currentTarget.checked })}
                  />
                  <ApiError error={set.error} />
                  {set.isSuccess && (
                    <Text role="status" fw={500}>
                      {t("branding.saved")}
                    </Text>
                  )}
                  {!readOnly && (
                    <Group>
                      <Button type="submit" loading={set.isPending}>
                        {t("action.save")}
                      </Button>
                    </Group>
                  )}
                </Stack>
              </Card>
            </Stack>
          </form>
          <Stack>
            <Group justify="space-between">
              <Title order={2} size="h4">
                {t("branding.preview")}
              </Title>
              {(b.themeMode === ThemeMode.AUTO || b.themeMode === ThemeMode.UNSPECIFIED) && (
                <SegmentedControl
                  size="xs"
                  value={scheme}
                  onChange={(v) => setScheme(v as Scheme)}
                  aria-label={t("branding.previewScheme")}
                  data={[
                    { value: "light", label: t("branding.light") },
                    { value: "dark", label: t("branding.dark") },
                  ]}
                />
              )}
            </Group>
            <Preview b={b} scheme={shown} />
            <Text size="sm" c="dimmed">
              {t("branding.previewHint")}
            </Text>
          </Stack>
        </SimpleGrid>
      )}
    </>
  );
}
