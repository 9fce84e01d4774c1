// External identity providers of the instance (generic OpenID Connect and SAML 2.0): a paged list, newest first,
// and buttons for a new provider of each kind. The form (idp-form.tsx) creates and edits one.
import { useQuery } from "@connectrpc/connect-query";
import { Anchor, Badge, Button, Table, Text } from "@mantine/core";
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

function Row({ idp }: { idp: IdentityProvider }) {
  const link = useLink(`/idps/${encodeURIComponent(idp.id)}`);
  const date = useDateFormat();
  return (
    <Table.Tr>
      <Table.Td>
        <Anchor {...link} fw={500}>
          {idp.name}
        </Anchor>
      </Table.Td>
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

export function NewIdpButtons({ readOnly }: { readOnly?: boolean }) {
  const { t } = useI18n();
  const oidc = useLink("/idps/new/oidc");
  const saml = useLink("/idps/new/saml");
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

export default function Idps() {
  const { t } = useI18n();
  const readOnly = !useAccess().data?.instanceWrite;
  const [page, setPage] = useState(1);
  const list = useQuery(IdentityProviderService.method.listIdentityProviders, { query: pageQuery(page, false) }, { placeholderData: keepPreviousData });
  return (
    <>
      <PageHeader title={t("idps.title")} actions={<NewIdpButtons readOnly={readOnly} />} />
      <Text c="dimmed" size="sm" mb="md">
        {t("idps.hint")}
      </Text>
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        <EmptyState title={t("idps.empty")} hint={t("idps.emptyHint")} action={<NewIdpButtons readOnly={readOnly} />} />
      ) : (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover data-testid="idps-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("idps.name")}</Table.Th>
                <Table.Th>{t("idps.type")}</Table.Th>
                <Table.Th visibleFrom="sm">{t("idps.issuer")}</Table.Th>
                <Table.Th visibleFrom="md">{t("users.created")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.result.map((i) => (
                <Row key={i.id} idp={i} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} />
    </>
  );
}
