// External identity providers of the instance (generic OpenID Connect and SAML 2.0): a paged list, newest first,
// and buttons for a new provider of each kind. The form (idp-form.tsx) creates and edits one. An organization's page
// lists its own providers beside the instance's with the same table (OrgIdps).
import { useQuery } from "@connectrpc/connect-query";
import { Anchor, Badge, Button, Group, Stack, Table, Text } from "@mantine/core";
import { keepPreviousData } from "@tanstack/react-query";
import { useState } from "react";
import { type IdentityProvider, IdentityProviderType } from "../../../gen/svc/idp/v2/idp_pb";
import { IdentityProviderService } from "../../../gen/svc/idp/v2/idp_service_pb";
import { useAccess } from "../access";
import { useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { useLink } from "../router";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";
import { toDate } from "./dates";
import { idpBase } from "./idp-paths";

function Row({ idp, orgId }: { idp: IdentityProvider; orgId?: string }) {
  const { t } = useI18n();
  const own = Boolean(orgId && idp.organizationId === orgId);
  const link = useLink(`${idpBase(own ? orgId : undefined).base}/${encodeURIComponent(idp.id)}`);
  const instanceLink = useAccess().data?.instance ?? false;
  const date = useDateFormat();
  return (
    <Table.Tr>
      <Table.Td>
        {own || !orgId || instanceLink ? (
          <Anchor {...link} fw={500}>
            {idp.name}
          </Anchor>
        ) : (
          <Text fw={500}>{idp.name}</Text>
        )}
      </Table.Td>
      {orgId && <Table.Td>{t(own ? "orgIdps.own" : "orgIdps.instance")}</Table.Td>}
      <Table.Td>
        <Badge variant="default">{idp.type === IdentityProviderType.SAML ? "SAML" : "OIDC"}</Badge>
      </Table.Td>
      <Table.Td visibleFrom="sm">
        <Text size="sm" style={{ wordBreak: "break-all" }}>
          {idp.oidc?.issuer ?? idp.saml?.entityId}
        </Text>
      </Table.Td>
      <Table.Td visibleFrom="md">{date(toDate(idp.details?.creationDate))}</Table.Td>
    </Table.Tr>
  );
}

export function NewIdpButtons({ readOnly, orgId }: { readOnly?: boolean; orgId?: string }) {
  const { t } = useI18n();
  const { base } = idpBase(orgId);
  const oidc = useLink(`${base}/new/oidc`);
  const saml = useLink(`${base}/new/saml`);
  if (readOnly) return null;
  return (
    <>
      <Button component="a" {...oidc}>
        {t("idps.newOidc")}
      </Button>
      <Button component="a" variant="default" {...saml}>
        {t("idps.newSaml")}
      </Button>
    </>
  );
}

/** The instance's providers, or (with `orgId`) the organization's own beside the instance's, paged. */
export function IdpList({ orgId, readOnly }: { orgId?: string; readOnly: boolean }) {
  const { t } = useI18n();
  const [page, setPage] = useState(1);
  const list = useQuery(
    IdentityProviderService.method.listIdentityProviders,
    { query: pageQuery(page, false), organizationId: orgId ?? "" },
    { placeholderData: keepPreviousData },
  );
  return (
    <>
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        <EmptyState
          title={t("idps.empty")}
          hint={t(orgId ? "orgIdps.emptyHint" : "idps.emptyHint")}
          action={<NewIdpButtons readOnly={readOnly} orgId={orgId} />}
        />
      ) : (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover data-testid="idps-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("idps.name")}</Table.Th>
                {orgId && <Table.Th>{t("orgIdps.scope")}</Table.Th>}
                <Table.Th>{t("idps.type")}</Table.Th>
                <Table.Th visibleFrom="sm">{t("idps.issuer")}</Table.Th>
                <Table.Th visibleFrom="md">{t("users.created")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.result.map((i) => (
                <Row key={i.id} idp={i} orgId={orgId} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} />
    </>
  );
}

export default function Idps() {
  const { t } = useI18n();
  const readOnly = !useAccess().data?.instanceWrite;
  return (
    <>
      <PageHeader title={t("idps.title")} actions={<NewIdpButtons readOnly={readOnly} />} />
      <Text c="dimmed" size="sm" mb="md">
        {t("idps.hint")}
      </Text>
      <IdpList readOnly={readOnly} />
    </>
  );
}

/** An organization's tab: its own providers (changed with idp.write there) beside the instance's (read only here). */
export function OrgIdps({ orgId, readOnly }: { orgId: string; readOnly: boolean }) {
  const { t } = useI18n();
  return (
    <Stack>
      <Group justify="space-between" align="flex-start">
        <Text c="dimmed" size="sm" maw={640}>
          {t("orgIdps.hint")}
        </Text>
        <Group gap="xs">
          <NewIdpButtons readOnly={readOnly} orgId={orgId} />
        </Group>
      </Group>
      <IdpList orgId={orgId} readOnly={readOnly} />
    </Stack>
  );
}
