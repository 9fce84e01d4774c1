// Organizations the user reads (the server decides), paged; instance administrators create new ones.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Anchor, Badge, Button, Group, Modal, Stack, Table, TextInput } from "@mantine/core";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Organization, OrganizationFieldName, OrganizationState } from "../../../gen/svc/org/v2/org_pb";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { type Access, useAccess } from "../access";
import { useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { useLink, useRouter } from "../router";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";
import { toDate } from "./dates";

function OrgRow({ org }: { org: Organization }) {
  const { t } = useI18n();
  const link = useLink(`/orgs/${encodeURIComponent(org.id)}`);
  const date = useDateFormat();
  return (
    <Table.Tr>
      <Table.Td>
        <Anchor {...link} fw={500}>
          {org.name}
        </Anchor>
      </Table.Td>
      <Table.Td visibleFrom="sm">{org.primaryDomain}</Table.Td>
      <Table.Td>
        <Badge variant="filled" autoContrast color={org.state === OrganizationState.ACTIVE ? "teal.9" : "gray.7"}>
          {t(org.state === OrganizationState.ACTIVE ? "state.active" : "state.inactive")}
        </Badge>
      </Table.Td>
      <Table.Td visibleFrom="md">{date(toDate(org.details?.creationDate))}</Table.Td>
    </Table.Tr>
  );
}

function NewOrg({ opened, onClose }: { opened: boolean; onClose(): void }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const create = useMutation(OrganizationService.method.createOrganization);
  const [name, setName] = useState("");
  return (
    <Modal opened={opened} onClose={onClose} title={t("orgs.new")}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate(
            { name },
            {
              onSuccess: async (r) => {
                await client.invalidateQueries();
                onClose();
                navigate(`/orgs/${encodeURIComponent(r.organizationId)}`);
              },
            },
          );
        }}
      >
        <Stack>
          <TextInput label={t("orgs.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
          <ApiError error={create.error} />
          <Group justify="flex-end">
            <Button type="submit" loading={create.isPending}>
              {t("action.create")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

export default function Orgs() {
  const { t } = useI18n();
  const access = useAccess().data as Access | undefined;
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const list = useQuery(
    OrganizationService.method.listOrganizations,
    { query: pageQuery(page), sortingColumn: OrganizationFieldName.NAME },
    { placeholderData: keepPreviousData },
  );
  const canCreate = access?.can("org.create") ?? false;
  const newButton = canCreate && <Button onClick={() => setCreating(true)}>{t("orgs.new")}</Button>;
  return (
    <>
      <PageHeader title={t("orgs.title")} actions={newButton} />
      <NewOrg opened={creating} onClose={() => setCreating(false)} />
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        <EmptyState title={t("orgs.empty")} hint={t("orgs.emptyHint")} action={newButton} />
      ) : (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover data-testid="orgs-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("orgs.name")}</Table.Th>
                <Table.Th visibleFrom="sm">{t("orgs.domain")}</Table.Th>
                <Table.Th>{t("users.state")}</Table.Th>
                <Table.Th visibleFrom="md">{t("users.created")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.result.map((o) => (
                <OrgRow key={o.id} org={o} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} />
    </>
  );
}
