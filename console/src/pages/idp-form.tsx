// Creates or edits an external identity provider: a generic OpenID Connect provider (issuer, client, scopes, where
// the profile comes from, claim mapping) or a SAML 2.0 identity provider (its metadata, posted or fetched from a
// URL; binding, signed requests, NameID format, attribute mapping), with the options of what a sign-in may do to
// svc's users. svc's own redirect URI (OIDC) or SP metadata and ACS URL (SAML) are shown to register at the provider.
// The same pages serve an organization's own providers (/orgs/{id}/idps/...), written by who holds idp.write there.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, Checkbox, Group, SegmentedControl, Select, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import { AutoLinkingOption, type ClaimMapping, type IdentityProvider, SAMLBinding, SAMLNameIDFormat } from "../../../gen/svc/idp/v2/idp_pb";
import { IdentityProviderService } from "../../../gen/svc/idp/v2/idp_service_pb";
import { useAccess } from "../access";
import { MetadataXmlInput } from "../fields";
import { type MessageKey, useI18n } from "../i18n";
import { useRouter } from "../router";
import { ApiError, ConfirmButton, PageHeader, SecretValue, TitledCard } from "../ui";
import { issuerUrl } from "./app-snippets";
import { idpBase } from "./idp-paths";

interface Options {
  isLinkingAllowed: boolean;
  isCreationAllowed: boolean;
  isAutoCreation: boolean;
  isAutoUpdate: boolean;
  autoLinking: AutoLinkingOption;
}
type Mapping = Omit<ClaimMapping, "$typeName" | "$unknown">;
const MAPPING_KEYS: [keyof Mapping, MessageKey][] = [
  ["email", "idps.mapEmail"],
  ["emailVerified", "idps.mapEmailVerified"],
  ["givenName", "idps.mapGivenName"],
  ["familyName", "idps.mapFamilyName"],
  ["displayName", "idps.mapDisplayName"],
  ["preferredUsername", "idps.mapUsername"],
];
const EMPTY_MAPPING: Mapping = { email: "", emailVerified: "", givenName: "", familyName: "", displayName: "", preferredUsername: "" };

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <TitledCard title={title}>
      <Stack>{children}</Stack>
    </TitledCard>
  );
}

function OptionsFields({ o, set }: { o: Options; set(o: Options): void }) {
  const { t } = useI18n();
  const flag = (k: "isLinkingAllowed" | "isCreationAllowed" | "isAutoCreation" | "isAutoUpdate", label: MessageKey) => (
    <Checkbox label={t(label)} checked={o[k]} onChange={(e) => set({ ...o, [k]: e.currentTarget.checked })} />
  );
  return (
    <>
      {flag("isLinkingAllowed", "idps.linking")}
      {flag("isCreationAllowed", "idps.creation")}
      {flag("isAutoCreation", "idps.autoCreation")}
      {flag("isAutoUpdate", "idps.autoUpdate")}
      <Select
        label={t("idps.autoLinking")}
        value={String(o.autoLinking)}
        onChange={(v) => set({ ...o, autoLinking: Number(v) as AutoLinkingOption })}
        allowDeselect={false}
        data={[
          { value: String(AutoLinkingOption.UNSPECIFIED), label: t("idps.autoLinkingNone") },
          { value: String(AutoLinkingOption.USERNAME), label: t("idps.autoLinkingUsername") },
          { value: String(AutoLinkingOption.EMAIL), label: t("idps.autoLinkingEmail") },
        ]}
      />
    </>
  );
}

function MappingFields({ m, set, hint }: { m: Mapping; set(m: Mapping): void; hint: string }) {
  const { t } = useI18n();
  return (
    <>
      <Text size="sm" c="dimmed">
        {hint}
      </Text>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {MAPPING_KEYS.map(([k, label]) => (
          <TextInput key={k} label={t(label)} value={m[k]} onChange={(e) => set({ ...m, [k]: e.currentTarget.value })} />
        ))}
      </SimpleGrid>
    </>
  );
}

const optionsOf = (idp?: IdentityProvider): Options => ({
  isLinkingAllowed: idp?.options?.isLinkingAllowed ?? true,
  isCreationAllowed: idp?.options?.isCreationAllowed ?? true,
  isAutoCreation: idp?.options?.isAutoCreation ?? false,
  isAutoUpdate: idp?.options?.isAutoUpdate ?? true,
  autoLinking: idp?.options?.autoLinking ?? AutoLinkingOption.UNSPECIFIED,
});

function mappingOf(m: ClaimMapping | undefined): Mapping {
  if (!m) return { ...EMPTY_MAPPING };
  const { $typeName: _t, $unknown: _u, ...rest } = m as ClaimMapping & { $unknown?: unknown };
  return rest;
}

/** Whether the user may change the providers of the instance, or of organization `orgId`. */
function useIdpWrite(orgId: string | undefined): boolean {
  const access = useAccess().data;
  return orgId ? (access?.can("idp.write", orgId) ?? false) : (access?.instanceWrite ?? false);
}

interface FormProps {
  idp?: IdentityProvider;
  /** The organization a new provider belongs to; none: the instance. */
  orgId?: string;
  onDone(id: string): void;
}

/**
 * What both kinds' forms are: the provider's own fields (`children`) beside what a sign-in may do and the mapping,
 * then save (or create). Submitting updates `idp`, or adds a provider with `body()`, then calls `onDone`.
 */
function IdpFormFrame<B>(
  props: FormProps & {
    add: { isPending: boolean; error: unknown; mutateAsync(r: B & { organizationId: string }): Promise<{ id: string }> };
    update: { isPending: boolean; error: unknown; mutateAsync(r: B & { idpId: string }): Promise<unknown> };
    body(): B;
    options: Options;
    setOptions(o: Options): void;
    mapping: Mapping;
    setMapping(m: Mapping): void;
    mappingHint: string;
    children: ReactNode;
  },
) {
  const { t } = useI18n();
  const { idp, add, update } = props;
  const canWrite = useIdpWrite(props.orgId ?? idp?.organizationId);
  const client = useQueryClient();
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        const body = props.body();
        try {
          let id = idp?.id;
          if (id) await update.mutateAsync({ idpId: id, ...body });
          else id = (await add.mutateAsync({ organizationId: props.orgId ?? "", ...body })).id;
          await client.invalidateQueries();
          props.onDone(id);
        } catch {
          // Shown below.
        }
      }}
    >
      <Stack>
        <SimpleGrid cols={{ base: 1, md: 2 }}>
          <Section title={t("idps.provider")}>{props.children}</Section>
          <Stack>
            <Section title={t("idps.options")}>
              <OptionsFields o={props.options} set={props.setOptions} />
            </Section>
            <Section title={t("idps.mapping")}>
              <MappingFields m={props.mapping} set={props.setMapping} hint={props.mappingHint} />
            </Section>
          </Stack>
        </SimpleGrid>
        <ApiError error={add.error ?? update.error} />
        <Group display={canWrite ? undefined : "none"}>
          <Button type="submit" loading={add.isPending || update.isPending}>
            {idp ? t("action.save") : t("action.create")}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function OidcForm({ idp, orgId, onDone }: FormProps) {
  const { t } = useI18n();
  const add = useMutation(IdentityProviderService.method.addGenericOIDCProvider);
  const update = useMutation(IdentityProviderService.method.updateGenericOIDCProvider);
  const [name, setName] = useState(idp?.name ?? "");
  const [issuer, setIssuer] = useState(idp?.oidc?.issuer ?? "");
  const [clientId, setClientId] = useState(idp?.oidc?.clientId ?? "");
  const [secret, setSecret] = useState("");
  const [scopes, setScopes] = useState((idp?.oidc?.scopes ?? []).join(" "));
  const [idTokenMapping, setIdTokenMapping] = useState(idp?.oidc?.isIdTokenMapping ?? false);
  const [options, setOptions] = useState(optionsOf(idp));
  const [mapping, setMapping] = useState(mappingOf(idp?.oidc?.claimMapping));
  const body = () => ({
    name,
    issuer: issuer.trim(),
    clientId: clientId.trim(),
    clientSecret: secret,
    scopes: scopes.split(/[\s,]+/).filter(Boolean),
    isIdTokenMapping: idTokenMapping,
    options,
    claimMapping: mapping,
  });
  return (
    <IdpFormFrame {...{ idp, orgId, onDone, add, update, body, options, setOptions, mapping, setMapping }} mappingHint={t("idps.mappingHintOidc")}>
      <TextInput label={t("idps.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required />
      <TextInput
        label={t("idps.issuer")}
        placeholder="https://accounts.example.com"
        value={issuer}
        onChange={(e) => setIssuer(e.currentTarget.value)}
        required
      />
      <TextInput label={t("idps.clientId")} value={clientId} onChange={(e) => setClientId(e.currentTarget.value)} required />
      <TextInput
        label={t("idps.clientSecret")}
        type="password"
        description={idp ? t("idps.secretKept") : undefined}
        value={secret}
        onChange={(e) => setSecret(e.currentTarget.value)}
        autoComplete="new-password"
      />
      <TextInput label={t("idps.scopes")} placeholder="openid profile email" value={scopes} onChange={(e) => setScopes(e.currentTarget.value)} />
      <Checkbox label={t("idps.idTokenMapping")} checked={idTokenMapping} onChange={(e) => setIdTokenMapping(e.currentTarget.checked)} />
      <SecretValue label={t("idps.redirectUri")} value={`${issuerUrl()}/idps/callback`} />
    </IdpFormFrame>
  );
}

function SamlForm({ idp, orgId, onDone }: FormProps) {
  const { t } = useI18n();
  const add = useMutation(IdentityProviderService.method.addSAMLProvider);
  const update = useMutation(IdentityProviderService.method.updateSAMLProvider);
  const [name, setName] = useState(idp?.name ?? "");
  const [source, setSource] = useState<"xml" | "url">("xml");
  const [xml, setXml] = useState(idp?.saml ? new TextDecoder().decode(idp.saml.metadataXml) : "");
  const [url, setUrl] = useState("");
  const [binding, setBinding] = useState(idp?.saml?.binding ?? SAMLBinding.SAML_BINDING_UNSPECIFIED);
  const [signed, setSigned] = useState(idp?.saml?.withSignedRequest ?? false);
  const [nameId, setNameId] = useState(idp?.saml?.nameIdFormat ?? SAMLNameIDFormat.SAML_NAME_ID_FORMAT_UNSPECIFIED);
  const [transient, setTransient] = useState(idp?.saml?.transientMappingAttributeName ?? "");
  const [options, setOptions] = useState(optionsOf(idp));
  const [mapping, setMapping] = useState(mappingOf(idp?.saml?.attributeMapping));
  const body = () => {
    const metadata =
      source === "url"
        ? { case: "metadataUrl" as const, value: url.trim() }
        : idp && xml === new TextDecoder().decode(idp.saml?.metadataXml)
          ? undefined
          : { case: "metadataXml" as const, value: new TextEncoder().encode(xml) };
    return {
      name,
      ...(metadata ? { metadata } : {}),
      binding,
      withSignedRequest: signed,
      nameIdFormat: nameId,
      transientMappingAttributeName: transient,
      options,
      attributeMapping: mapping,
    };
  };
  return (
    <IdpFormFrame {...{ idp, orgId, onDone, add, update, body, options, setOptions, mapping, setMapping }} mappingHint={t("idps.mappingHintSaml")}>
      <TextInput label={t("idps.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required />
      {idp?.saml && <TextInput label={t("apps.entityId")} value={idp.saml.entityId} readOnly />}
      <SegmentedControl
        value={source}
        onChange={(v) => setSource(v as "xml" | "url")}
        aria-label={t("apps.samlSource")}
        data={[
          { value: "xml", label: t("apps.samlByXml") },
          { value: "url", label: t("apps.samlByUrl") },
        ]}
      />
      {source === "xml" ? (
        <MetadataXmlInput value={xml} onChange={setXml} required={!idp} />
      ) : (
        <TextInput
          label={t("apps.metadataUrl")}
          value={url}
          onChange={(e) => setUrl(e.currentTarget.value)}
          required
          placeholder="https://idp.example.com/metadata"
        />
      )}
      <Select
        label={t("idps.binding")}
        value={String(binding)}
        onChange={(v) => setBinding(Number(v) as SAMLBinding)}
        allowDeselect={false}
        data={[
          { value: String(SAMLBinding.SAML_BINDING_UNSPECIFIED), label: t("idps.bindingAuto") },
          { value: String(SAMLBinding.SAML_BINDING_POST), label: "HTTP-POST" },
          { value: String(SAMLBinding.SAML_BINDING_REDIRECT), label: "HTTP-Redirect" },
        ]}
      />
      <Select
        label={t("apps.nameIdFormat")}
        value={String(nameId)}
        onChange={(v) => setNameId(Number(v) as SAMLNameIDFormat)}
        allowDeselect={false}
        data={[
          { value: String(SAMLNameIDFormat.SAML_NAME_ID_FORMAT_UNSPECIFIED), label: t("idps.nameIdAny") },
          { value: String(SAMLNameIDFormat.SAML_NAME_ID_FORMAT_EMAIL_ADDRESS), label: t("apps.nameIdEmail") },
          { value: String(SAMLNameIDFormat.SAML_NAME_ID_FORMAT_PERSISTENT), label: t("apps.nameIdPersistent") },
          { value: String(SAMLNameIDFormat.SAML_NAME_ID_FORMAT_TRANSIENT), label: t("idps.nameIdTransient") },
        ]}
      />
      <TextInput label={t("idps.transientAttribute")} value={transient} onChange={(e) => setTransient(e.currentTarget.value)} />
      <Checkbox label={t("idps.signedRequest")} checked={signed} onChange={(e) => setSigned(e.currentTarget.checked)} />
      {idp?.saml && (
        <>
          <SecretValue label={t("idps.spMetadataUrl")} value={idp.saml.spMetadataUrl} />
          <SecretValue label={t("idps.acsUrl")} value={idp.saml.acsUrl} />
        </>
      )}
    </IdpFormFrame>
  );
}

/** /idps/new/{oidc,saml} and /orgs/{orgId}/idps/new/{oidc,saml} */
export function IdpNew({ params }: { params: string[] }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const [orgId, kind] = params.length === 2 ? params : [undefined, params[0]];
  const saml = kind === "saml";
  const { list, base } = idpBase(orgId);
  const done = (id: string) => navigate(`${base}/${encodeURIComponent(id)}`);
  return (
    <>
      <PageHeader title={t(saml ? "idps.newSaml" : "idps.newOidc")} back={{ to: list, label: t("idps.title") }} />
      {saml ? <SamlForm orgId={orgId} onDone={done} /> : <OidcForm orgId={orgId} onDone={done} />}
    </>
  );
}

/** /idps/{id} and /orgs/{orgId}/idps/{id} */
export default function IdpDetail({ params }: { params: string[] }) {
  const [orgId, idpId] = (params.length === 2 ? params : [undefined, params[0]]) as [string | undefined, string];
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const got = useQuery(IdentityProviderService.method.getIdentityProvider, { idpId });
  const remove = useMutation(IdentityProviderService.method.deleteIdentityProvider);
  const idp = got.data?.idp;
  const canWrite = useIdpWrite(idp?.organizationId || undefined);
  const { list } = idpBase(orgId);
  const [saved, setSaved] = useState(false);
  const actions = idp && canWrite && (
    <ConfirmButton
      label={t("action.delete")}
      title={t("idps.deleteTitle")}
      body={t("idps.deleteBody")}
      confirmLabel={t("action.delete")}
      typeToConfirm={idp.name}
      onConfirm={async () => {
        await remove.mutateAsync({ idpId });
        navigate(list);
        void client.invalidateQueries();
      }}
    />
  );
  return (
    <>
      <PageHeader title={idp?.name ?? t("idps.title")} back={{ to: list, label: t("idps.title") }} actions={actions} />
      <ApiError error={got.error} />
      {saved && (
        <Text role="status" fw={500} mb="md">
          {t("apps.saved")}
        </Text>
      )}
      {idp &&
        (idp.saml ? (
          <SamlForm key={got.dataUpdatedAt} idp={idp} onDone={() => setSaved(true)} />
        ) : (
          <OidcForm key={got.dataUpdatedAt} idp={idp} onDone={() => setSaved(true)} />
        ))}
    </>
  );
}
