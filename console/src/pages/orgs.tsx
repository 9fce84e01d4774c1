// Organizations the user reads (the server decides), paged; instance administrators create new ones.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, TextInput } from "@mantine/core";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { OrganizationFieldName, OrganizationState } from "../../../gen/svc/org/v2/org_pb";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { type Access, useAccess } from "../access";
import { FormDialog } from "../fields";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { useRouter } from "../router";
import { DataTable, RowLink } from "../table";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";
import { toDate } from "./dates";

function NewOrg({ opened, onClose }: { opened: boolean; onClose(): void }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const create = useMutation(OrganizationService.method.createOrganization);
  const [name, setName] = useState("");
  return (
    <FormDialog
      opened={opened}
      onClose={onClose}
      title={t("orgs.new")}
      onSubmit={() => {
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
      error={create.error}
      saving={create.isPending}
      label={t("action.create")}
    >
      <TextInput label={t("orgs.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
    </FormDialog>
  );
}

export default function Orgs() {
  const { t } = useI18n();
  const date = useDateFormat();
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
      <DataTable
        testId="orgs-table"
        highlightOnHover
        headWhileLoading
        rows={list.data?.result}
        rowKey={(o) => o.id}
        columns={[
          { header: t("orgs.name"), cell: (o) => <RowLink to={`/orgs/${encodeURIComponent(o.id)}`}>{o.name}</RowLink> },
          { header: t("orgs.domain"), visibleFrom: "sm", cell: (o) => o.primaryDomain },
          {
            header: t("users.state"),
            cell: (o) => (
              <Badge variant="filled" autoContrast color={o.state === OrganizationState.ACTIVE ? "teal.9" : "gray.7"}>
                {t(o.state === OrganizationState.ACTIVE ? "state.active" : "state.inactive")}
              </Badge>
            ),
          },
          { header: t("users.created"), visibleFrom: "md", cell: (o) => date(toDate(o.details?.creationDate)) },
        ]}
        empty={<EmptyState title={t("orgs.empty")} hint={t("orgs.emptyHint")} action={newButton} />}
        paging={{ details: list.data?.details, page, onPage: setPage }}
      />
    </>
  );
}
