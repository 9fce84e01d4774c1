// Projects the user reads (owned by their organizations or granted to them), paged; new projects in an organization.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, TextInput } from "@mantine/core";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ProjectFieldName } from "../../../gen/svc/project/v2/project_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";
import { useAccess } from "../access";
import { FormDialog } from "../fields";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { useRouter } from "../router";
import { DataTable, RowLink } from "../table";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";
import { toDate } from "./dates";
import { OrgSelect } from "./org-select";

function NewProject({ opened, onClose }: { opened: boolean; onClose(): void }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const create = useMutation(ProjectService.method.createProject);
  const [name, setName] = useState("");
  const [orgId, setOrgId] = useState<string | null>(null);
  return (
    <FormDialog
      opened={opened}
      onClose={onClose}
      title={t("projects.new")}
      onSubmit={() => {
        create.mutate(
          { organizationId: orgId ?? "", name },
          {
            onSuccess: async (r) => {
              await client.invalidateQueries();
              onClose();
              navigate(`/projects/${encodeURIComponent(r.projectId)}`);
            },
          },
        );
      }}
      error={create.error}
      saving={create.isPending}
      label={t("action.create")}
    >
      <OrgSelect label={t("users.org")} value={orgId} onChange={setOrgId} permission="project.write" />
      <TextInput label={t("projects.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
    </FormDialog>
  );
}

export default function Projects() {
  const { t } = useI18n();
  const date = useDateFormat();
  const [page, setPage] = useState(1);
  const [creating, setCreating] = useState(false);
  const list = useQuery(
    ProjectService.method.listProjects,
    { query: pageQuery(page), sortingColumn: ProjectFieldName.NAME },
    { placeholderData: keepPreviousData },
  );
  const canCreate = useAccess().data?.can("project.write") ?? false;
  const newButton = canCreate ? <Button onClick={() => setCreating(true)}>{t("projects.new")}</Button> : undefined;
  return (
    <>
      <PageHeader title={t("projects.title")} actions={newButton} />
      <NewProject opened={creating} onClose={() => setCreating(false)} />
      <ApiError error={list.error} />
      <DataTable
        testId="projects-table"
        highlightOnHover
        headWhileLoading
        rows={list.data?.result}
        rowKey={(p) => p.id}
        columns={[
          { header: t("projects.name"), cell: (p) => <RowLink to={`/projects/${encodeURIComponent(p.id)}`}>{p.name}</RowLink> },
          { header: t("users.created"), visibleFrom: "sm", cell: (p) => date(toDate(p.details?.creationDate)) },
        ]}
        empty={<EmptyState title={t("projects.empty")} hint={t("projects.emptyHint")} action={newButton} />}
        paging={{ details: list.data?.details, page, onPage: setPage }}
      />
    </>
  );
}
