// One application of a project: its client id (and a new client secret, shown once, replacing the old one), its
// settings by kind (OIDC redirect URIs, grant types, authentication, token type, development mode; API
// authentication; SAML metadata, NameID, roles, lifetime, signing and encryption), deactivate, reactivate, delete
// after typing its name, and the configuration to paste into the application.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Alert, Badge, Button, Checkbox, Group, MultiSelect, NumberInput, Select, SimpleGrid, Stack, Switch, Text, Textarea, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import {
  AccessTokenType,
  ApiAuthMethodType,
  type ApiConfig,
  type Application,
  AppState,
  OidcAppType,
  OidcAuthMethodType,
  type OidcConfig,
  OidcGrantType,
  SamlAttributeProfile,
  type SamlConfig,
  SamlNameIdFormat,
} from "../../../gen/svc/app/v2/app_pb";
import { ApplicationService, type UpdateApplicationRequestSchema } from "../../../gen/svc/app/v2/app_service_pb";
import { useAccess } from "../access";
import { bind, EnumSelect, MetadataXmlInput, SaveRow } from "../fields";
import { type MessageKey, useI18n } from "../i18n";
import { useRouter } from "../router";
import { DataTable, idColumn } from "../table";
import { ApiError, ConfirmButton, PageHeader, SecretValue, ShownOnce, TitledCard, useDateFormat } from "../ui";
import { type Kind, needsDevMode, SECRET_PLACEHOLDER, samlMetadataUrl, snippets } from "./app-snippets";
import { toDate } from "./dates";
import { roleOptions, useRoles } from "./project-roles";
import { SnippetTabs } from "./snippet";

type UpdateConfig = MessageInitShape<typeof UpdateApplicationRequestSchema>["config"];

const lines = (s: string) =>
  s
    .split(/\s+/)
    .map((l) => l.trim())
    .filter(Boolean);

function kindOf(app: Application): Kind {
  if (app.config.case === "api") return "machine";
  if (app.config.case === "saml") return "saml";
  const type = app.config.value?.appType;
  return type === OidcAppType.USER_AGENT ? "spa" : type === OidcAppType.NATIVE ? "native" : "web";
}

/** Opaque bearer tokens or JWTs (unset reads as opaque). */
function TokenTypeSelect({ value, onChange }: { value: AccessTokenType; onChange(v: AccessTokenType): void }) {
  const { t } = useI18n();
  return (
    <EnumSelect
      label={t("apps.tokenType")}
      value={value === AccessTokenType.UNSPECIFIED ? AccessTokenType.BEARER : value}
      onChange={onChange}
      options={[
        [AccessTokenType.BEARER, "apps.tokenOpaque"],
        [AccessTokenType.JWT, "apps.tokenJwt"],
      ]}
    />
  );
}

function enumOptions(t: (k: MessageKey) => string, entries: [number, MessageKey][]) {
  return entries.map(([v, k]) => ({ value: String(v), label: t(k) }));
}

function OidcForm({ config, onSave }: { config: OidcConfig; onSave(c: UpdateConfig): void }) {
  const { t } = useI18n();
  const [c, setC] = useState(config);
  const field = bind(c, setC);
  const [redirects, setRedirects] = useState(config.redirectUris.join("\n"));
  const [logouts, setLogouts] = useState(config.postLogoutRedirectUris.join("\n"));
  const uris = [...lines(redirects), ...lines(logouts)];
  const devNeeded = needsDevMode(c.appType === OidcAppType.NATIVE, uris);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSave({ case: "oidc", value: { ...c, redirectUris: lines(redirects), postLogoutRedirectUris: lines(logouts) } });
      }}
    >
      <Stack>
        <Textarea
          label={t("apps.redirectUris")}
          description={t("apps.onePerLine")}
          value={redirects}
          onChange={(e) => setRedirects(e.currentTarget.value)}
          autosize
          minRows={2}
        />
        <Textarea
          label={t("apps.logoutUris")}
          description={t("apps.onePerLine")}
          value={logouts}
          onChange={(e) => setLogouts(e.currentTarget.value)}
          autosize
          minRows={1}
        />
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <EnumSelect
            label={t("apps.appType")}
            {...field.value("appType")}
            options={[
              [OidcAppType.WEB, "apps.web"],
              [OidcAppType.USER_AGENT, "apps.spa"],
              [OidcAppType.NATIVE, "apps.native"],
            ]}
          />
          <EnumSelect
            label={t("apps.authMethod")}
            {...field.value("authMethodType")}
            options={[
              [OidcAuthMethodType.BASIC, "apps.authBasic"],
              [OidcAuthMethodType.POST, "apps.authPost"],
              [OidcAuthMethodType.NONE, "apps.authNone"],
              [OidcAuthMethodType.PRIVATE_KEY_JWT, "apps.authPrivateKeyJwt"],
            ]}
          />
          <TokenTypeSelect {...field.value("accessTokenType")} />
          <MultiSelect
            label={t("apps.grantTypes")}
            value={c.grantTypes.map(String)}
            onChange={(v) => setC({ ...c, grantTypes: v.map((x) => Number(x) as OidcGrantType) })}
            data={enumOptions(t, [
              [OidcGrantType.AUTHORIZATION_CODE, "apps.grantCode"],
              [OidcGrantType.REFRESH_TOKEN, "apps.grantRefresh"],
              [OidcGrantType.DEVICE_CODE, "apps.grantDevice"],
            ])}
          />
        </SimpleGrid>
        <Checkbox label={t("apps.idTokenRoles")} {...field.checked("idTokenRoleAssertion")} />
        <Checkbox label={t("apps.idTokenUserinfo")} {...field.checked("idTokenUserinfoAssertion")} />
        <Switch label={t("apps.devMode")} description={t("apps.devModeNote")} {...field.checked("devMode")} />
        {devNeeded && !c.devMode && (
          <Alert color="yellow" title={t("apps.devModeTitle")}>
            {t("apps.devModeNeeded")}
          </Alert>
        )}
        <TextInput label={t("apps.loginBaseUrl")} description={t("apps.loginBaseUrlHint")} {...field.text("loginBaseUrl")} />
        <Select
          label={t("apps.idTokenAlg")}
          data={["RS256", "ES256", "EdDSA"]}
          allowDeselect={false}
          value={c.idTokenSignedResponseAlg || "RS256"}
          onChange={(v) => setC({ ...c, idTokenSignedResponseAlg: v ?? "RS256" })}
        />
        <Checkbox label={t("apps.requirePar")} {...field.checked("requirePushedAuthorizationRequests")} />
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <LogoutUri
            label={t("apps.backchannelLogout")}
            hint={t("apps.backchannelLogoutHint")}
            uri={c.backchannelLogoutUri}
            sid={c.backchannelLogoutSessionRequired}
            onChange={(uri, sid) => setC({ ...c, backchannelLogoutUri: uri, backchannelLogoutSessionRequired: sid })}
          />
          <LogoutUri
            label={t("apps.frontchannelLogout")}
            hint={t("apps.frontchannelLogoutHint")}
            uri={c.frontchannelLogoutUri}
            sid={c.frontchannelLogoutSessionRequired}
            onChange={(uri, sid) => setC({ ...c, frontchannelLogoutUri: uri, frontchannelLogoutSessionRequired: sid })}
          />
        </SimpleGrid>
        <SaveRow />
      </Stack>
    </form>
  );
}

/** A logout URI of OpenID Connect Back- or Front-Channel Logout, and whether it wants the session id (sid). */
function LogoutUri(props: { label: string; hint: string; uri: string; sid: boolean; onChange(uri: string, sid: boolean): void }) {
  const { t } = useI18n();
  return (
    <Stack gap={4}>
      <TextInput
        label={props.label}
        description={props.hint}
        placeholder="https://app.example.com/logout"
        value={props.uri}
        onChange={(e) => props.onChange(e.currentTarget.value, props.sid)}
      />
      <Checkbox
        label={t("apps.logoutSid")}
        aria-label={`${props.label}: ${t("apps.logoutSid")}`}
        checked={props.sid}
        disabled={!props.uri}
        onChange={(e) => props.onChange(props.uri, e.currentTarget.checked)}
      />
    </Stack>
  );
}

function ApiForm({ config, onSave }: { config: ApiConfig; onSave(c: UpdateConfig): void }) {
  const { t } = useI18n();
  const [c, setC] = useState(config);
  const field = bind(c, setC);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSave({ case: "api", value: c });
      }}
    >
      <Stack>
        <EnumSelect
          label={t("apps.authMethod")}
          value={c.authMethodType === ApiAuthMethodType.UNSPECIFIED ? ApiAuthMethodType.BASIC : c.authMethodType}
          onChange={field.value("authMethodType").onChange}
          options={[
            [ApiAuthMethodType.BASIC, "apps.authBasic"],
            [ApiAuthMethodType.PRIVATE_KEY_JWT, "apps.authPrivateKeyJwt"],
          ]}
        />
        <TokenTypeSelect {...field.value("accessTokenType")} />
        <SaveRow />
      </Stack>
    </form>
  );
}

function SamlForm({ projectId, config, onSave }: { projectId: string; config: SamlConfig; onSave(c: UpdateConfig): void }) {
  const { t } = useI18n();
  const roles = useRoles(projectId);
  const [c, setC] = useState(config);
  const field = bind(c, setC);
  const [xml, setXml] = useState(() => new TextDecoder().decode(config.metadataXml));
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSave({
          case: "saml",
          value: {
            metadataXml: new TextEncoder().encode(xml),
            nameIdFormat: c.nameIdFormat,
            roleKeys: c.roleKeys,
            assertionLifetimeSeconds: c.assertionLifetimeSeconds,
            signResponse: c.signResponse,
            encryptAssertions: c.encryptAssertions,
            attributeProfile: c.attributeProfile,
          },
        });
      }}
    >
      <Stack>
        <TextInput label={t("apps.entityId")} value={c.entityId} readOnly />
        <Stack gap={2}>
          <Text size="sm" fw={500}>
            {t("apps.acsUrls")}
          </Text>
          {c.assertionConsumerServices.map((a) => (
            <Text key={`${a.index}-${a.url}`} size="sm" ff="monospace" style={{ wordBreak: "break-all" }}>
              {a.url}
            </Text>
          ))}
        </Stack>
        <MetadataXmlInput value={xml} onChange={setXml} />
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <EnumSelect
            label={t("apps.nameIdFormat")}
            value={c.nameIdFormat === SamlNameIdFormat.UNSPECIFIED ? SamlNameIdFormat.EMAIL_ADDRESS : c.nameIdFormat}
            onChange={field.value("nameIdFormat").onChange}
            options={[
              [SamlNameIdFormat.EMAIL_ADDRESS, "apps.nameIdEmail"],
              [SamlNameIdFormat.PERSISTENT, "apps.nameIdPersistent"],
              [SamlNameIdFormat.SAML_UNSPECIFIED, "apps.nameIdUsername"],
              [SamlNameIdFormat.PERSISTENT_PAIRWISE, "apps.nameIdPairwise"],
              [SamlNameIdFormat.TRANSIENT, "apps.nameIdTransient"],
            ]}
          />
          <EnumSelect
            label={t("apps.attributeProfile")}
            value={c.attributeProfile === SamlAttributeProfile.UNSPECIFIED ? SamlAttributeProfile.BASIC : c.attributeProfile}
            onChange={field.value("attributeProfile").onChange}
            options={[
              [SamlAttributeProfile.BASIC, "apps.attributeProfileBasic"],
              [SamlAttributeProfile.URN_OID, "apps.attributeProfileUrnOid"],
            ]}
          />
          <NumberInput
            label={t("apps.assertionLifetime")}
            min={0}
            max={86400}
            value={c.assertionLifetimeSeconds || 300}
            onChange={(v) => setC({ ...c, assertionLifetimeSeconds: Number(v) || 0 })}
          />
        </SimpleGrid>
        <MultiSelect label={t("apps.samlRoles")} value={c.roleKeys} onChange={(v) => setC({ ...c, roleKeys: v })} data={roleOptions(roles.data?.result)} />
        <Checkbox label={t("apps.signResponse")} {...field.checked("signResponse")} />
        <Checkbox
          label={t("apps.encryptAssertions")}
          description={c.hasEncryptionCertificate ? undefined : t("apps.encryptNeedsCert")}
          {...field.checked("encryptAssertions")}
        />
        <SaveRow />
      </Stack>
    </form>
  );
}

function Secret({ app }: { app: Application }) {
  const { t } = useI18n();
  const regenerate = useMutation(ApplicationService.method.regenerateClientSecret);
  return (
    <Stack gap="sm">
      {regenerate.data ? (
        <ShownOnce label={t("apps.clientSecret")} value={regenerate.data.clientSecret} note={t("apps.secretOnce")} />
      ) : (
        <Text size="sm" c="dimmed">
          {t("apps.secretHidden")}
        </Text>
      )}
      <Group>
        <ConfirmButton
          label={t("apps.regenerate")}
          title={t("apps.regenerateTitle")}
          body={t("apps.regenerateBody")}
          confirmLabel={t("apps.regenerate")}
          onConfirm={() => regenerate.mutateAsync({ projectId: app.projectId, appId: app.id })}
        />
      </Group>
    </Stack>
  );
}

/** Keys for private_key_jwt: a generated key's file is offered once (copy or download); the list shows their ids. */
function Keys({ app }: { app: Application }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const which = { projectId: app.projectId, appId: app.id };
  const keys = useQuery(ApplicationService.method.listApplicationKeys, { ...which, query: { limit: 100 } });
  const add = useMutation(ApplicationService.method.addApplicationKey, { onSuccess: () => client.invalidateQueries() });
  const remove = useMutation(ApplicationService.method.removeApplicationKey, { onSuccess: () => client.invalidateQueries() });
  const file = add.data?.keyDetails.length ? new TextDecoder().decode(add.data.keyDetails) : undefined;
  const href = useMemo(() => (file ? URL.createObjectURL(new Blob([file], { type: "application/json" })) : undefined), [file]);
  return (
    <Stack gap="sm">
      <Text size="sm" c="dimmed">
        {t("apps.keysHint")}
      </Text>
      <ApiError error={keys.error ?? add.error} />
      <DataTable
        testId="app-keys-table"
        scroll={false}
        striped={false}
        rows={keys.data?.result}
        rowKey={(k) => k.id}
        columns={[idColumn(t("apps.keyId"), true), { header: t("users.created"), visibleFrom: "sm", cell: (k) => date(toDate(k.creationDate)) }]}
        actions={(k) => (
          <ConfirmButton
            size="xs"
            label={t("action.delete")}
            ariaLabel={t("apps.deleteKey", { id: k.id })}
            title={t("apps.deleteKey", { id: k.id })}
            body={t("apps.deleteKeyBody")}
            confirmLabel={t("action.delete")}
            onConfirm={() => remove.mutateAsync({ ...which, keyId: k.id })}
          />
        )}
        empty={<Text c="dimmed">{t("apps.noKeys")}</Text>}
      />
      {file && add.data && (
        <>
          <SecretValue label={t("apps.keyFile")} value={file} />
          <Group>
            <Button component="a" variant="default" href={href} download={`${add.data.keyId}.json`}>
              {t("apps.downloadKey")}
            </Button>
          </Group>
          <Alert color="orange" title={t("apps.secretOnceTitle")}>
            {t("apps.keyOnce")}
          </Alert>
        </>
      )}
      <Group>
        <Button variant="default" loading={add.isPending} onClick={() => add.mutate(which)}>
          {t("apps.newKey")}
        </Button>
      </Group>
    </Stack>
  );
}

function AppActions({ app }: { app: Application }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const invalidate = { onSuccess: () => client.invalidateQueries() };
  const deactivate = useMutation(ApplicationService.method.deactivateApplication, invalidate);
  const reactivate = useMutation(ApplicationService.method.reactivateApplication, invalidate);
  const remove = useMutation(ApplicationService.method.deleteApplication);
  const inactive = app.state === AppState.INACTIVE;
  const which = { projectId: app.projectId, appId: app.id };
  return (
    <>
      <Button variant="default" loading={deactivate.isPending || reactivate.isPending} onClick={() => (inactive ? reactivate : deactivate).mutate(which)}>
        {t(inactive ? "action.reactivate" : "action.deactivate")}
      </Button>
      <ConfirmButton
        label={t("action.delete")}
        title={t("apps.deleteTitle")}
        body={t("apps.deleteBody")}
        confirmLabel={t("action.delete")}
        typeToConfirm={app.name}
        onConfirm={async () => {
          await remove.mutateAsync(which);
          navigate(`/projects/${encodeURIComponent(app.projectId)}?tab=apps`);
          void client.invalidateQueries();
        }}
      />
    </>
  );
}

export default function AppDetail({ params }: { params: string[] }) {
  const [projectId, appId] = params as [string, string];
  const { t } = useI18n();
  const client = useQueryClient();
  const got = useQuery(ApplicationService.method.getApplication, { projectId, appId });
  const update = useMutation(ApplicationService.method.updateApplication, { onSuccess: () => client.invalidateQueries() });
  const app = got.data?.app;
  const [name, setName] = useState<string>();
  const save = (config?: UpdateConfig) => update.mutate({ projectId, appId, name: name ?? app?.name, ...(config ? { config } : {}) });
  const kind = app ? kindOf(app) : undefined;
  const redirect = app?.config.case === "oidc" ? (app.config.value.redirectUris[0] ?? "") : "";
  const secret = app?.hasClientSecret ? SECRET_PLACEHOLDER : "";
  // project.app.write in the project's organization (ListMyPermissions): others read the settings, disabled.
  const canWrite = useAccess().data?.can("project.app.write", app?.details?.resourceOwner) ?? false;
  return (
    <>
      <PageHeader
        title={app?.name ?? t("apps.app")}
        back={{ to: `/projects/${encodeURIComponent(projectId)}?tab=apps`, label: t("projects.project") }}
        actions={app && canWrite && <AppActions app={app} />}
      />
      <ApiError error={got.error} />
      {app && kind && (
        <Stack>
          <Group gap="xs">
            <Badge variant="default">{t(`apps.${kind}` as MessageKey)}</Badge>
            <Badge variant="default">{t(app.state === AppState.INACTIVE ? "state.inactive" : "state.active")}</Badge>
          </Group>
          <ApiError error={update.error} />
          {update.isSuccess && (
            <Text role="status" fw={500}>
              {t("apps.saved")}
            </Text>
          )}
          <fieldset disabled={!canWrite} style={{ border: 0, padding: 0, margin: 0, minWidth: 0 }}>
            <Stack>
              <SimpleGrid cols={{ base: 1, md: 2 }}>
                <TitledCard title={t("apps.general")}>
                  <Stack>
                    <form
                      onSubmit={(e) => {
                        e.preventDefault();
                        save();
                      }}
                    >
                      <Group align="flex-end" wrap="nowrap">
                        <TextInput
                          label={t("apps.name")}
                          value={name ?? app.name}
                          onChange={(e) => setName(e.currentTarget.value)}
                          required
                          style={{ flex: 1 }}
                        />
                        <Button type="submit" variant="default">
                          {t("apps.rename")}
                        </Button>
                      </Group>
                    </form>
                    {kind === "saml" ? (
                      <SecretValue label={t("apps.samlMetadataUrl")} value={samlMetadataUrl()} />
                    ) : (
                      <SecretValue label={t("apps.clientId")} value={app.clientId} />
                    )}
                    {app.hasClientSecret && <Secret app={app} />}
                  </Stack>
                </TitledCard>
                <TitledCard title={t("apps.settings")}>
                  {app.config.case === "oidc" && <OidcForm key={String(got.dataUpdatedAt)} config={app.config.value} onSave={save} />}
                  {app.config.case === "api" && <ApiForm key={String(got.dataUpdatedAt)} config={app.config.value} onSave={save} />}
                  {app.config.case === "saml" && <SamlForm key={String(got.dataUpdatedAt)} projectId={projectId} config={app.config.value} onSave={save} />}
                </TitledCard>
              </SimpleGrid>
              {(app.config.case === "oidc"
                ? app.config.value.authMethodType === OidcAuthMethodType.PRIVATE_KEY_JWT
                : app.config.case === "api" && app.config.value.authMethodType === ApiAuthMethodType.PRIVATE_KEY_JWT) && (
                <TitledCard title={t("apps.keys")}>
                  <Keys app={app} />
                </TitledCard>
              )}
            </Stack>
          </fieldset>
          {kind !== "saml" && (
            <TitledCard title={t("apps.configuration")}>
              <SnippetTabs code={snippets(kind, projectId, app.clientId, secret, redirect)} />
            </TitledCard>
          )}
        </Stack>
      )}
    </>
  );
}
