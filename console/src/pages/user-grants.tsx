// A user's authorizations (user grants): the projects and roles the user holds, one ListUserGrants page and one
// ListProjects call for the projects' names; roles changed in a dialog, a grant removed after confirmation, and a new
// grant of a project's roles (the project searched on the server).
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Group, MultiSelect, Stack, Text, Title } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type UserGrant, UserGrantState } from "../../../gen/svc/authorization/v2/authorization_pb";
import { AuthorizationService } from "../../../gen/svc/authorization/v2/authorization_service_pb";
import { TextQueryMethod } from "../../../gen/svc/object/v2/object_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";
import { FormDialog, RoleBadges } from "../fields";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { SearchSelect } from "../pickers";
import { useLink } from "../router";
import { DataTable, RowActions } from "../table";
import { ApiError, CardSection, ConfirmButton, EmptyState } from "../ui";

function useRoleOptions(projectId: string | null) {
  const roles = useQuery(ProjectService.method.listProjectRoles, { projectId: projectId ?? "", query: { limit: 200, asc: true } }, { enabled: !!projectId });
  return (roles.data?.result ?? []).map((r) => ({ value: r.roleKey, label: r.displayName ? `${r.displayName} (${r.roleKey})` : r.roleKey }));
}

function EditGrant({ grant, projectName }: { grant: UserGrant; projectName: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [open, setOpen] = useState(false);
  const [roles, setRoles] = useState<string[]>(grant.roleKeys);
  const update = useMutation(AuthorizationService.method.updateUserGrant, { onSuccess: () => client.invalidateQueries() });
  const options = useRoleOptions(open ? grant.projectId : null);
  return (
    <>
      <Button
        size="xs"
        variant="default"
        aria-label={t("ugrants.editOf", { project: projectName })}
        onClick={() => {
          setRoles(grant.roleKeys);
          update.reset();
          setOpen(true);
        }}
      >
        {t("members.editRoles")}
      </Button>
      <FormDialog
        opened={open}
        onClose={() => setOpen(false)}
        title={t("ugrants.editOf", { project: projectName })}
        onSubmit={() => {
          update.mutate({ grantId: grant.grantId, userId: grant.userId, roleKeys: roles }, { onSuccess: () => setOpen(false) });
        }}
        error={update.error}
        saving={update.isPending}
        disabled={roles.length === 0}
        withCancel
      >
        <MultiSelect label={t("orgs.roles")} data={options} value={roles} onChange={setRoles} required comboboxProps={{ withinPortal: false }} />
      </FormDialog>
    </>
  );
}

function ProjectPicker({ value, onChange }: { value: string | null; onChange(v: string | null): void }) {
  const { t } = useI18n();
  const [search, setSearch] = useState("");
  const [debounced] = useDebouncedValue(search.trim(), 250);
  const projects = useQuery(ProjectService.method.listProjects, {
    query: { limit: 20, asc: true },
    queries: debounced ? [{ query: { case: "nameQuery", value: { name: debounced, method: TextQueryMethod.CONTAINS_IGNORE_CASE } } }] : [],
  });
  return (
    <SearchSelect
      label={t("projects.project")}
      value={value}
      onChange={onChange}
      search={search}
      onSearch={setSearch}
      data={(projects.data?.result ?? []).map((p) => ({ value: p.id, label: p.name }))}
    />
  );
}

function AddGrant({ userId }: { userId: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [projectId, setProjectId] = useState<string | null>(null);
  const [roles, setRoles] = useState<string[]>([]);
  const add = useMutation(AuthorizationService.method.addUserGrant, { onSuccess: () => client.invalidateQueries() });
  const options = useRoleOptions(projectId);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        add.mutate({ userId, projectId: projectId ?? "", roleKeys: roles }, { onSuccess: () => setRoles([]) });
      }}
    >
      <Stack gap="sm">
        <Title order={3} size="h5">
          {t("ugrants.add")}
        </Title>
        <Group align="flex-end" wrap="wrap">
          <div style={{ flex: "1 1 200px" }}>
            <ProjectPicker
              value={projectId}
              onChange={(v) => {
                setProjectId(v);
                setRoles([]);
              }}
            />
          </div>
          <MultiSelect label={t("orgs.roles")} data={options} value={roles} onChange={setRoles} required style={{ flex: "1 1 220px" }} />
          <Button type="submit" loading={add.isPending} disabled={!projectId || roles.length === 0}>
            {t("grants.grant")}
          </Button>
        </Group>
        <ApiError error={add.error} />
      </Stack>
    </form>
  );
}

function ProjectLink({ id, name }: { id: string; name: string }) {
  const link = useLink(`/projects/${encodeURIComponent(id)}`);
  return (
    <Text component="a" size="sm" fw={500} c="blue.8" {...link}>
      {name}
    </Text>
  );
}

export function UserGrantsCard({ userId, readOnly }: { userId: string; readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const grants = useQuery(
    AuthorizationService.method.listUserGrants,
    { query: pageQuery(page), queries: [{ query: { case: "userIdFilter", value: { userId } } }] },
    { placeholderData: keepPreviousData },
  );
  const ids = [...new Set((grants.data?.result ?? []).map((g) => g.projectId))];
  const projects = useQuery(
    ProjectService.method.listProjects,
    { query: { limit: ids.length }, queries: [{ query: { case: "idsQuery", value: { ids } } }] },
    { enabled: ids.length > 0 },
  );
  const names = new Map((projects.data?.result ?? []).map((p) => [p.id, p.name]));
  const remove = useMutation(AuthorizationService.method.removeUserGrant, { onSuccess: () => client.invalidateQueries() });
  const nameOf = (g: { projectId: string }) => names.get(g.projectId) ?? g.projectId;
  return (
    <CardSection title={t("ugrants.title")}>
      <ApiError error={grants.error} />
      <DataTable
        testId="user-grants-table"
        minWidth={300}
        rows={grants.data?.result}
        rowKey={(g) => g.grantId}
        columns={[
          {
            header: t("projects.project"),
            cell: (g) => (
              <>
                <ProjectLink id={g.projectId} name={nameOf(g)} />
                {g.state === UserGrantState.INACTIVE && (
                  <Badge ml="xs" size="sm" color="gray.7" variant="filled">
                    {t("state.inactive")}
                  </Badge>
                )}
              </>
            ),
          },
          { header: t("orgs.roles"), cell: (g) => <RoleBadges roles={g.roleKeys} /> },
        ]}
        actions={
          readOnly
            ? undefined
            : (g) => (
                <RowActions gap="xs">
                  <EditGrant grant={g} projectName={nameOf(g)} />
                  <ConfirmButton
                    size="xs"
                    label={t("ugrants.remove")}
                    ariaLabel={t("ugrants.removeOf", { project: nameOf(g) })}
                    title={t("ugrants.removeTitle")}
                    body={t("ugrants.removeBody", { project: nameOf(g) })}
                    confirmLabel={t("ugrants.remove")}
                    onConfirm={() => remove.mutateAsync({ grantId: g.grantId, userId })}
                  />
                </RowActions>
              )
        }
        empty={<EmptyState title={t("ugrants.empty")} hint={t(readOnly ? "ugrants.emptyHintRead" : "ugrants.emptyHint")} />}
        paging={{ details: grants.data?.details, page, onPage: setPage }}
      />
      {!readOnly && <AddGrant userId={userId} />}
    </CardSection>
  );
}
