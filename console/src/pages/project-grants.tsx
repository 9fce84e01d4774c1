// A project granted to other organizations: each receives a subset of the project's roles, which its own
// administrators then grant to their users. Grant, change the roles, deactivate, reactivate, remove.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, Group, Modal, MultiSelect, Stack, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Project, type ProjectGrant, ProjectState } from "../../../gen/svc/project/v2/project_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";
import { ActiveToggle, InactiveBadge, InlineForm, RoleBadges } from "../fields";
import { useI18n } from "../i18n";
import { DataTable, RowActions } from "../table";
import { ApiError, ConfirmButton, EmptyState } from "../ui";
import { OrgSelect } from "./org-select";
import { roleOptions, useRoles } from "./project-roles";

function GrantRoles({ grant, onClose }: { grant: ProjectGrant; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const roles = useRoles(grant.projectId);
  const update = useMutation(ProjectService.method.updateProjectGrant, { onSuccess: () => client.invalidateQueries() });
  const [keys, setKeys] = useState(grant.roleKeys);
  return (
    <Modal
      opened
      onClose={onClose}
      title={t("projectGrants.editFor", { name: grant.grantedOrganizationName })}
      closeButtonProps={{ "aria-label": t("action.close") }}
    >
      <Stack>
        <MultiSelect label={t("orgs.roles")} value={keys} onChange={setKeys} data={roleOptions(roles.data?.result)} data-autofocus />
        <Text size="sm" c="dimmed">
          {t("projectGrants.narrowHint")}
        </Text>
        <ApiError error={update.error} />
        <Group justify="flex-end">
          <Button
            loading={update.isPending}
            onClick={() =>
              update.mutate({ projectId: grant.projectId, grantedOrganizationId: grant.grantedOrganizationId, roleKeys: keys }, { onSuccess: onClose })
            }
          >
            {t("action.save")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

const nameOf = (g: ProjectGrant) => g.grantedOrganizationName || g.grantedOrganizationId;

export function ProjectGrants({ project, readOnly }: { project: Project; readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const projectId = project.id;
  const grants = useQuery(ProjectService.method.listProjectGrants, {
    query: { limit: 100, asc: true },
    queries: [{ query: { case: "projectIdQuery", value: { projectId } } }],
  });
  const roles = useRoles(projectId);
  const invalidate = { onSuccess: () => client.invalidateQueries() };
  const create = useMutation(ProjectService.method.createProjectGrant, invalidate);
  const deactivate = useMutation(ProjectService.method.deactivateProjectGrant, invalidate);
  const reactivate = useMutation(ProjectService.method.reactivateProjectGrant, invalidate);
  const remove = useMutation(ProjectService.method.deleteProjectGrant, invalidate);
  const [editing, setEditing] = useState<ProjectGrant>();
  const [orgId, setOrgId] = useState<string | null>(null);
  const [keys, setKeys] = useState<string[]>([]);
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("projectGrants.hint")}
      </Text>
      <ApiError error={grants.error ?? deactivate.error ?? reactivate.error} />
      {editing && <GrantRoles grant={editing} onClose={() => setEditing(undefined)} />}
      <DataTable
        testId="project-grants-table"
        rows={grants.data?.result}
        rowKey={(g) => g.id}
        columns={[
          {
            header: t("projectGrants.org"),
            cell: (g) => (
              <>
                {nameOf(g)}
                <InactiveBadge inactive={g.state === ProjectState.INACTIVE} />
              </>
            ),
          },
          { header: t("orgs.roles"), cell: (g) => <RoleBadges roles={g.roleKeys} /> },
        ]}
        actions={(g) => {
          const name = nameOf(g);
          const inactive = g.state === ProjectState.INACTIVE;
          const which = { projectId, grantedOrganizationId: g.grantedOrganizationId };
          return (
            !readOnly && (
              <RowActions>
                <Button size="xs" variant="default" onClick={() => setEditing(g)} aria-label={t("projectGrants.editFor", { name })}>
                  {t("action.edit")}
                </Button>
                <ActiveToggle inactive={inactive} name={name} onToggle={() => (inactive ? reactivate : deactivate).mutate(which)} />
                <ConfirmButton
                  size="xs"
                  label={t("action.remove")}
                  ariaLabel={t("projectGrants.removeFor", { name })}
                  title={t("projectGrants.removeFor", { name })}
                  body={t("projectGrants.removeBody")}
                  confirmLabel={t("action.remove")}
                  onConfirm={() => remove.mutateAsync(which)}
                />
              </RowActions>
            )
          );
        }}
        empty={<EmptyState title={t("projectGrants.empty")} hint={t("projectGrants.emptyHint")} />}
      />
      {!readOnly && (
        <InlineForm
          onSubmit={() => {
            create.mutate({ projectId, grantedOrganizationId: orgId ?? "", roleKeys: keys }, { onSuccess: () => setKeys([]) });
          }}
          error={create.error}
          title={t("projectGrants.add")}
        >
          <div style={{ flex: "1 1 240px" }}>
            <OrgSelect label={t("projectGrants.org")} value={orgId} onChange={setOrgId} clearable />
          </div>
          <MultiSelect label={t("orgs.roles")} value={keys} onChange={setKeys} data={roleOptions(roles.data?.result)} style={{ flex: "1 1 240px" }} />
          <Button type="submit" loading={create.isPending} disabled={!orgId || keys.length === 0}>
            {t("projectGrants.grant")}
          </Button>
        </InlineForm>
      )}
    </Stack>
  );
}
