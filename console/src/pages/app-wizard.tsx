// "What are you building?": the kind of application picks the grant types and the client authentication (a SPA or
// a native app is a public client with PKCE, a server-side web app has a secret, a machine uses client
// credentials, a SAML service provider is registered by its metadata); http://localhost redirect URIs are accepted
// in development mode, with a note; the secret is shown once; the last step is configuration to paste into
// openid-client, Auth.js or Spring Security, or svc's SAML metadata URL.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { useMutation } from "@connectrpc/connect-query";
import { Alert, Button, Group, Radio, SegmentedControl, SimpleGrid, Stack, Stepper, Text, Textarea, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { AccessTokenType, ApiAuthMethodType, OidcAppType, OidcAuthMethodType, OidcGrantType, OidcResponseType } from "../../../gen/svc/app/v2/app_pb";
import { ApplicationService, type CreateApplicationRequestSchema } from "../../../gen/svc/app/v2/app_service_pb";
import { SaveRow } from "../fields";
import { type MessageKey, useI18n } from "../i18n";
import { useLink } from "../router";
import { PageHeader, SecretValue, ShownOnce } from "../ui";
import { type Kind, needsDevMode, samlMetadataUrl, snippets, spMetadata } from "./app-snippets";
import { SnippetTabs } from "./snippet";

const KINDS: { kind: Kind; title: MessageKey; hint: MessageKey; redirect: string; logout: string }[] = [
  { kind: "spa", title: "apps.spa", hint: "apps.spaHint", redirect: "http://localhost:5173/callback", logout: "http://localhost:5173/" },
  { kind: "web", title: "apps.web", hint: "apps.webHint", redirect: "http://localhost:3000/api/auth/callback/svc", logout: "http://localhost:3000/" },
  { kind: "native", title: "apps.native", hint: "apps.nativeHint", redirect: "http://127.0.0.1/callback", logout: "" },
  { kind: "machine", title: "apps.machine", hint: "apps.machineHint", redirect: "", logout: "" },
  { kind: "saml", title: "apps.saml", hint: "apps.samlHint", redirect: "", logout: "" },
];

type SamlSource = "acs" | "xml" | "url";

interface Created {
  appId: string;
  clientId: string;
  clientSecret: string;
}

function SamlFields(p: {
  source: SamlSource;
  setSource(s: SamlSource): void;
  entityId: string;
  setEntityId(v: string): void;
  acs: string;
  setAcs(v: string): void;
  xml: string;
  setXml(v: string): void;
  url: string;
  setUrl(v: string): void;
}) {
  const { t } = useI18n();
  return (
    <>
      <SegmentedControl
        value={p.source}
        onChange={(v) => p.setSource(v as SamlSource)}
        aria-label={t("apps.samlSource")}
        data={[
          { value: "acs", label: t("apps.samlByAcs") },
          { value: "xml", label: t("apps.samlByXml") },
          { value: "url", label: t("apps.samlByUrl") },
        ]}
      />
      {p.source === "acs" && (
        <>
          <TextInput
            label={t("apps.entityId")}
            value={p.entityId}
            onChange={(e) => p.setEntityId(e.currentTarget.value)}
            placeholder="https://sp.example.com/saml"
            required
          />
          <TextInput
            label={t("apps.acsUrl")}
            value={p.acs}
            onChange={(e) => p.setAcs(e.currentTarget.value)}
            placeholder="https://sp.example.com/saml/acs"
            required
          />
        </>
      )}
      {p.source === "xml" && (
        <Textarea
          label={t("apps.metadataXml")}
          value={p.xml}
          onChange={(e) => p.setXml(e.currentTarget.value)}
          autosize
          minRows={5}
          maxRows={14}
          required
          styles={{ input: { fontFamily: "monospace" } }}
        />
      )}
      {p.source === "url" && (
        <TextInput
          label={t("apps.metadataUrl")}
          description={t("apps.metadataUrlHint")}
          value={p.url}
          onChange={(e) => p.setUrl(e.currentTarget.value)}
          placeholder="https://sp.example.com/saml/metadata"
          required
        />
      )}
    </>
  );
}

export default function AppWizard({ params }: { params: string[] }) {
  const projectId = params[0] as string;
  const { t } = useI18n();
  const client = useQueryClient();
  const create = useMutation(ApplicationService.method.createApplication);
  const [step, setStep] = useState(0);
  const [kind, setKind] = useState<Kind>("spa");
  const spec = KINDS.find((k) => k.kind === kind) ?? (KINDS[0] as (typeof KINDS)[number]);
  const [name, setName] = useState("");
  const [redirect, setRedirect] = useState(spec.redirect);
  const [logout, setLogout] = useState(spec.logout);
  const [source, setSource] = useState<SamlSource>("acs");
  const [entityId, setEntityId] = useState("");
  const [acs, setAcs] = useState("");
  const [xml, setXml] = useState("");
  const [url, setUrl] = useState("");
  const [created, setCreated] = useState<Created>();
  const oidc = kind !== "machine" && kind !== "saml";
  const devMode = oidc && needsDevMode(kind === "native", [redirect, logout].filter(Boolean));
  const appLink = useLink(`/projects/${encodeURIComponent(projectId)}/apps/${encodeURIComponent(created?.appId ?? "")}`);

  const choose = (k: Kind) => {
    const s = KINDS.find((x) => x.kind === k);
    setKind(k);
    setRedirect(s?.redirect ?? "");
    setLogout(s?.logout ?? "");
  };

  const submit = async () => {
    type Config = MessageInitShape<typeof CreateApplicationRequestSchema>["config"];
    let config: Config;
    if (kind === "machine") {
      config = { case: "api", value: { authMethodType: ApiAuthMethodType.BASIC, accessTokenType: AccessTokenType.BEARER } };
    } else if (kind === "saml") {
      config = {
        case: "saml",
        value:
          source === "url"
            ? { metadataUrl: url.trim() }
            : { metadataXml: new TextEncoder().encode(source === "xml" ? xml : spMetadata(entityId.trim(), acs.trim())) },
      };
    } else {
      config = {
        case: "oidc",
        value: {
          appType: kind === "spa" ? OidcAppType.USER_AGENT : kind === "native" ? OidcAppType.NATIVE : OidcAppType.WEB,
          authMethodType: kind === "web" ? OidcAuthMethodType.BASIC : OidcAuthMethodType.NONE,
          grantTypes: [OidcGrantType.AUTHORIZATION_CODE, OidcGrantType.REFRESH_TOKEN],
          responseTypes: [OidcResponseType.CODE],
          redirectUris: [redirect],
          postLogoutRedirectUris: logout ? [logout] : [],
          accessTokenType: AccessTokenType.BEARER,
          idTokenUserinfoAssertion: true,
          devMode,
        },
      };
    }
    const res = await create.mutateAsync({ projectId, name, config });
    await client.invalidateQueries();
    setCreated({ appId: res.appId, clientId: res.clientId, clientSecret: res.clientSecret });
    setStep(2);
  };

  const code = created && kind !== "saml" ? snippets(kind, projectId, created.clientId, created.clientSecret, redirect) : undefined;
  return (
    <>
      <PageHeader title={t("apps.new")} back={{ to: `/projects/${encodeURIComponent(projectId)}?tab=apps`, label: t("projects.project") }} />
      <Stepper active={step} onStepClick={(s) => !created && s < step && setStep(s)} allowNextStepsSelect={false} size="sm">
        <Stepper.Step label={t("apps.stepKind")}>
          <Radio.Group value={kind} onChange={(v) => choose(v as Kind)} label={t("apps.question")} mt="md">
            <SimpleGrid cols={{ base: 1, sm: 2 }} mt="sm">
              {KINDS.map((k) => (
                <Radio.Card key={k.kind} value={k.kind} p="md" radius="md" aria-label={t(k.title)}>
                  <Group wrap="nowrap" align="flex-start">
                    <Radio.Indicator />
                    <div>
                      <Text fw={600}>{t(k.title)}</Text>
                      <Text size="sm" c="dimmed">
                        {t(k.hint)}
                      </Text>
                    </div>
                  </Group>
                </Radio.Card>
              ))}
            </SimpleGrid>
          </Radio.Group>
          <Group mt="lg">
            <Button onClick={() => setStep(1)}>{t("apps.next")}</Button>
          </Group>
        </Stepper.Step>
        <Stepper.Step label={t("apps.stepSettings")}>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void submit().catch(() => undefined);
            }}
          >
            <Stack maw={560} mt="md">
              <TextInput label={t("apps.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required />
              {oidc && (
                <>
                  <TextInput label={t("apps.redirectUri")} value={redirect} onChange={(e) => setRedirect(e.currentTarget.value)} required />
                  <TextInput label={t("apps.logoutUri")} value={logout} onChange={(e) => setLogout(e.currentTarget.value)} />
                  {devMode && (
                    <Alert color="yellow" title={t("apps.devModeTitle")}>
                      {t("apps.devModeNote")}
                    </Alert>
                  )}
                </>
              )}
              {kind === "saml" && (
                <SamlFields
                  source={source}
                  setSource={setSource}
                  entityId={entityId}
                  setEntityId={setEntityId}
                  acs={acs}
                  setAcs={setAcs}
                  xml={xml}
                  setXml={setXml}
                  url={url}
                  setUrl={setUrl}
                />
              )}
              <Text size="sm" c="dimmed">
                {t(
                  kind === "machine" ? "apps.summaryMachine" : kind === "web" ? "apps.summaryWeb" : kind === "saml" ? "apps.summarySaml" : "apps.summaryPublic",
                )}
              </Text>
              <SaveRow error={create.error} saving={create.isPending} label={t("action.create")} onCancel={() => setStep(0)} cancelLabel={t("apps.back")} />
            </Stack>
          </form>
        </Stepper.Step>
        <Stepper.Step label={t("apps.stepDone")}>
          {created && (
            <Stack mt="md">
              {kind === "saml" ? (
                <>
                  <Text>{t("apps.samlDone")}</Text>
                  <SecretValue label={t("apps.samlMetadataUrl")} value={samlMetadataUrl()} />
                </>
              ) : (
                <SecretValue label={t("apps.clientId")} value={created.clientId} />
              )}
              {created.clientSecret && <ShownOnce label={t("apps.clientSecret")} value={created.clientSecret} note={t("apps.secretOnce")} />}
              {code && <SnippetTabs code={code} />}
              <Group>
                <Button component="a" variant="default" {...appLink}>
                  {t("apps.openApp")}
                </Button>
              </Group>
            </Stack>
          )}
        </Stepper.Step>
      </Stepper>
    </>
  );
}
