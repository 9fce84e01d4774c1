// One project: its settings (edit, deactivate, reactivate, delete after typing its name), its roles (add, rename,
// remove), its applications (the wizard adds them), the organizations it is granted to (a subset of its roles each)
// and the users granted its roles.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Group, Modal, MultiSelect, Stack, Switch, Tabs, Text, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApplicationService } from "../../../gen/svc/app/v2/app_service_pb";
import { UserGrantState } from "../../../gen/svc/authorization/v2/authorization_pb";
import { AuthorizationService } from "../../../gen/svc/authorization/v2/authorization_service_pb";
import { type Project, type ProjectRole, ProjectState } from "../../../gen/svc/project/v2/project_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { useAccess } from "../access";
import { ActiveToggle, FormDialog, InactiveBadge, InlineForm, RoleBadges } from "../fields";
import { useI18n } from "../i18n";
import { UserPicker } from "../pickers";
import { useLink, useRouter } from "../router";
import { DataTable, RowActions, RowLink } from "../table";
import { ApiError, ConfirmButton, EmptyState, PageHeader } from "../ui";
import { ProjectGrants } from "./project-grants";
import { roleOptions, useRoles } from "./project-roles";

function RoleEdit({ role, onClose }: { role: ProjectRole; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const update = useMutation(ProjectService.method.updateProjectRole, { onSuccess: () => client.invalidateQueries() });
  const [name, setName] = useState(role.displayName);
  const [group, setGroup] = useState(role.group);
  return (
    <FormDialog
      opened
      onClose={onClose}
      title={t("projects.editRole", { key: role.roleKey })}
      labelClose
      onSubmit={() => {
        update.mutate({ projectId: role.projectId, roleKey: role.roleKey, displayName: name, group }, { onSuccess: onClose });
      }}
      error={update.error}
      saving={update.isPending}
    >
      <TextInput label={t("projects.roleName")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
      <TextInput label={t("projects.roleGroup")} value={group} onChange={(e) => setGroup(e.currentTarget.value)} />
    </FormDialog>
  );
}

function Roles({ projectId, readOnly }: { projectId: string; readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const roles = useRoles(projectId);
  const add = useMutation(ProjectService.method.addProjectRole, { onSuccess: () => client.invalidateQueries() });
  const remove = useMutation(ProjectService.method.removeProjectRole, { onSuccess: () => client.invalidateQueries() });
  const [editing, setEditing] = useState<ProjectRole>();
  const [key, setKey] = useState("");
  const [name, setName] = useState("");
  return (
    <Stack>
      <ApiError error={roles.error} />
      {editing && <RoleEdit role={editing} onClose={() => setEditing(undefined)} />}
      <DataTable
        testId="roles-table"
        rows={roles.data?.result}
        rowKey={(r) => r.roleKey}
        columns={[
          { header: t("projects.roleKey"), cell: (r) => <Text ff="monospace">{r.roleKey}</Text> },
          { header: t("projects.roleName"), cell: (r) => r.displayName },
          { header: t("projects.roleGroup"), visibleFrom: "sm", cell: (r) => r.group },
        ]}
        actions={(r) =>
          !readOnly && (
            <RowActions>
              <Button size="xs" variant="default" onClick={() => setEditing(r)} aria-label={t("projects.editRole", { key: r.roleKey })}>
                {t("action.edit")}
              </Button>
              <ConfirmButton
                size="xs"
                label={t("action.delete")}
                ariaLabel={t("projects.removeRole", { key: r.roleKey })}
                title={t("projects.removeRole", { key: r.roleKey })}
                body={t("projects.removeRoleBody")}
                confirmLabel={t("action.delete")}
                onConfirm={() => remove.mutateAsync({ projectId, roleKey: r.roleKey })}
              />
            </RowActions>
          )
        }
        empty={<EmptyState title={t("projects.noRoles")} hint={t("projects.noRolesHint")} />}
      />
      {!readOnly && (
        <InlineForm
          onSubmit={() => {
            add.mutate(
              { projectId, roleKey: key, displayName: name || key },
              {
                onSuccess: () => {
                  setKey("");
                  setName("");
                },
              },
            );
          }}
          error={add.error}
        >
          <TextInput label={t("projects.roleKey")} value={key} onChange={(e) => setKey(e.currentTarget.value)} required style={{ flex: "1 1 180px" }} />
          <TextInput label={t("projects.roleName")} value={name} onChange={(e) => setName(e.currentTarget.value)} style={{ flex: "1 1 180px" }} />
          <Button type="submit" loading={add.isPending}>
            {t("projects.addRole")}
          </Button>
        </InlineForm>
      )}
    </Stack>
  );
}

function Apps({ projectId, canCreate }: { projectId: string; canCreate: boolean }) {
  const { t } = useI18n();
  const apps = useQuery(ApplicationService.method.listApplications, { projectId, query: { limit: 100 } });
  const wizard = useLink(`/projects/${encodeURIComponent(projectId)}/apps/new`);
  const newButton = canCreate && (
    <Button component="a" {...wizard}>
      {t("apps.new")}
    </Button>
  );
  return (
    <Stack>
      <ApiError error={apps.error} />
      {apps.data?.result.length !== 0 && <Group justify="flex-end">{newButton}</Group>}
      <DataTable
        testId="apps-table"
        headWhileLoading
        rows={apps.data?.result}
        rowKey={(a) => a.id}
        columns={[
          {
            header: t("apps.name"),
            cell: (a) => <RowLink to={`/projects/${encodeURIComponent(projectId)}/apps/${encodeURIComponent(a.id)}`}>{a.name}</RowLink>,
          },
          { header: t("apps.kind"), cell: (a) => a.config.case?.toUpperCase() },
          {
            header: t("apps.clientId"),
            visibleFrom: "sm",
            cell: (a) => (
              <Text ff="monospace" size="sm">
                {a.clientId}
              </Text>
            ),
          },
        ]}
        empty={<EmptyState title={t("apps.empty")} hint={t("apps.emptyHint")} action={newButton} />}
      />
    </Stack>
  );
}

function GrantEdit({ grantId, current, roles, onClose }: { grantId: string; current: string[]; roles: ProjectRole[] | undefined; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const update = useMutation(AuthorizationService.method.updateUserGrant, { onSuccess: () => client.invalidateQueries() });
  const [keys, setKeys] = useState(current);
  return (
    <Modal opened onClose={onClose} title={t("grants.edit")} closeButtonProps={{ "aria-label": t("action.close") }}>
      <Stack>
        <MultiSelect label={t("orgs.roles")} value={keys} onChange={setKeys} data={roleOptions(roles)} data-autofocus />
        <ApiError error={update.error} />
        <Group justify="flex-end">
          <Button loading={update.isPending} disabled={keys.length === 0} onClick={() => update.mutate({ grantId, roleKeys: keys }, { onSuccess: onClose })}>
            {t("action.save")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function Grants({ projectId, readOnly }: { projectId: string; readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const grants = useQuery(AuthorizationService.method.listUserGrants, {
    query: { limit: 100 },
    queries: [{ query: { case: "projectIdFilter", value: { projectId } } }],
  });
  const userIds = [...new Set(grants.data?.result.map((g) => g.userId) ?? [])];
  // The grants' users in one call (not one per row).
  const users = useQuery(
    UserService.method.listUsers,
    { query: { limit: 100 }, queries: [{ query: { case: "inUserIdsQuery", value: { userIds } } }] },
    { enabled: userIds.length > 0 },
  );
  const names = new Map(users.data?.result.map((u) => [u.userId, u.preferredLoginName || u.username]));
  const who = (g: { userId: string }) => names.get(g.userId) ?? g.userId;
  const roles = useRoles(projectId);
  const invalidate = { onSuccess: () => client.invalidateQueries() };
  const add = useMutation(AuthorizationService.method.addUserGrant, invalidate);
  const remove = useMutation(AuthorizationService.method.removeUserGrant, invalidate);
  const deactivate = useMutation(AuthorizationService.method.deactivateUserGrant, invalidate);
  const reactivate = useMutation(AuthorizationService.method.reactivateUserGrant, invalidate);
  const [editing, setEditing] = useState<{ grantId: string; roleKeys: string[] }>();
  const [userId, setUserId] = useState<string | null>(null);
  const [keys, setKeys] = useState<string[]>([]);
  return (
    <Stack>
      <ApiError error={grants.error ?? deactivate.error ?? reactivate.error} />
      {editing && <GrantEdit grantId={editing.grantId} current={editing.roleKeys} roles={roles.data?.result} onClose={() => setEditing(undefined)} />}
      <DataTable
        testId="grants-table"
        rows={grants.data?.result}
        rowKey={(g) => g.grantId}
        columns={[
          {
            header: t("orgs.user"),
            cell: (g) => (
              <>
                {who(g)}
                <InactiveBadge inactive={g.state === UserGrantState.INACTIVE} />
              </>
            ),
          },
          { header: t("orgs.roles"), cell: (g) => <RoleBadges roles={g.roleKeys} /> },
        ]}
        actions={(g) => {
          const inactive = g.state === UserGrantState.INACTIVE;
          return (
            !readOnly && (
              <RowActions>
                {!g.projectGrantId && (
                  <Button
                    size="xs"
                    variant="default"
                    onClick={() => setEditing({ grantId: g.grantId, roleKeys: g.roleKeys })}
                    aria-label={t("grants.editFor", { name: who(g) })}
                  >
                    {t("action.edit")}
                  </Button>
                )}
                <ActiveToggle inactive={inactive} name={who(g)} onToggle={() => (inactive ? reactivate : deactivate).mutate({ grantId: g.grantId })} />
                <ConfirmButton
                  size="xs"
                  label={t("action.remove")}
                  ariaLabel={t("grants.removeFor", { name: who(g) })}
                  title={t("grants.removeFor", { name: who(g) })}
                  body={t("grants.removeBody")}
                  confirmLabel={t("action.remove")}
                  onConfirm={() => remove.mutateAsync({ grantId: g.grantId })}
                />
              </RowActions>
            )
          );
        }}
        empty={<EmptyState title={t("grants.empty")} hint={t("grants.emptyHint")} />}
      />
      {!readOnly && (
        <InlineForm
          onSubmit={() => {
            add.mutate({ projectId, userId: userId ?? "", roleKeys: keys }, { onSuccess: () => setKeys([]) });
          }}
          error={add.error}
          title={t("grants.add")}
        >
          <div style={{ flex: "1 1 240px" }}>
            <UserPicker label={t("orgs.user")} value={userId} onChange={setUserId} />
          </div>
          <MultiSelect label={t("orgs.roles")} value={keys} onChange={setKeys} data={roleOptions(roles.data?.result)} style={{ flex: "1 1 240px" }} />
          <Button type="submit" loading={add.isPending} disabled={!userId || keys.length === 0}>
            {t("grants.grant")}
          </Button>
        </InlineForm>
      )}
    </Stack>
  );
}

function ProjectEdit({ project, onClose }: { project: Project; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const update = useMutation(ProjectService.method.updateProject, { onSuccess: () => client.invalidateQueries() });
  const [s, setS] = useState({
    name: project.name,
    projectRoleAssertion: project.projectRoleAssertion,
    authorizationRequired: project.authorizationRequired,
    projectAccessRequired: project.projectAccessRequired,
  });
  const flag = (k: "projectRoleAssertion" | "authorizationRequired" | "projectAccessRequired", label: string, hint: string) => (
    <Switch label={label} description={hint} checked={s[k]} onChange={(e) => setS({ ...s, [k]: e.currentTarget.checked })} />
  );
  return (
    <FormDialog
      opened
      onClose={onClose}
      title={t("projects.edit")}
      labelClose
      onSubmit={() => {
        update.mutate({ projectId: project.id, ...s }, { onSuccess: onClose });
      }}
      error={update.error}
      saving={update.isPending}
    >
      <TextInput label={t("projects.name")} value={s.name} onChange={(e) => setS({ ...s, name: e.currentTarget.value })} required data-autofocus />
      {flag("projectRoleAssertion", t("projects.roleAssertion"), t("projects.roleAssertionHint"))}
      {flag("authorizationRequired", t("projects.authorizationRequired"), t("projects.authorizationRequiredHint"))}
      {flag("projectAccessRequired", t("projects.accessRequired"), t("projects.accessRequiredHint"))}
    </FormDialog>
  );
}

function ProjectActions({ project, canWrite, canDelete }: { project: Project; canWrite: boolean; canDelete: boolean }) {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const [editing, setEditing] = useState(false);
  const invalidate = { onSuccess: () => client.invalidateQueries() };
  const deactivate = useMutation(ProjectService.method.deactivateProject, invalidate);
  const reactivate = useMutation(ProjectService.method.reactivateProject, invalidate);
  const remove = useMutation(ProjectService.method.deleteProject);
  const inactive = project.state === ProjectState.INACTIVE;
  return (
    <>
      {editing && <ProjectEdit project={project} onClose={() => setEditing(false)} />}
      {canWrite && (
        <>
          <Button variant="default" onClick={() => setEditing(true)}>
            {t("action.edit")}
          </Button>
          <Button
            variant="default"
            loading={deactivate.isPending || reactivate.isPending}
            onClick={() => (inactive ? reactivate : deactivate).mutate({ projectId: project.id })}
          >
            {t(inactive ? "action.reactivate" : "action.deactivate")}
          </Button>
        </>
      )}
      {canDelete && (
        <ConfirmButton
          label={t("action.delete")}
          title={t("projects.deleteTitle")}
          body={t("projects.deleteBody")}
          confirmLabel={t("action.delete")}
          typeToConfirm={project.name}
          onConfirm={async () => {
            await remove.mutateAsync({ projectId: project.id });
            // Away first: refetching the deleted project's queries (NotFound, retried) would hold the dialog open.
            navigate("/projects");
            void client.invalidateQueries();
          }}
        />
      )}
    </>
  );
}

export default function ProjectDetail({ params }: { params: string[] }) {
  const projectId = params[0] as string;
  const { t } = useI18n();
  const { search, navigate } = useRouter();
  const project = useQuery(ProjectService.method.getProject, { projectId });
  const p = project.data?.project;
  const tab = search.get("tab") ?? "roles";
  // What the roles allow in the owning organization (ListMyPermissions). A project granted to the user's
  // organization (no project.read where it is owned) is authorized there, by that organization's user.grant.write.
  const access = useAccess().data;
  const may = (permission: string) => access?.can(permission, p?.organizationId) ?? false;
  const canGrant = may("user.grant.write") || (!may("project.read") && (access?.can("user.grant.write") ?? false));
  return (
    <>
      <PageHeader
        title={p?.name ?? t("projects.project")}
        back={{ to: "/projects", label: t("nav.projects") }}
        actions={p && <ProjectActions project={p} canWrite={may("project.write")} canDelete={may("project.delete")} />}
      />
      <ApiError error={project.error} />
      {p?.state === ProjectState.INACTIVE && (
        <Badge variant="default" mb="md">
          {t("state.inactive")}
        </Badge>
      )}
      {p && (
        <Tabs
          value={tab}
          onChange={(v) => navigate(`/projects/${encodeURIComponent(projectId)}${v && v !== "roles" ? `?tab=${v}` : ""}`, { replace: true })}
          keepMounted={false}
        >
          <Tabs.List mb="md">
            <Tabs.Tab value="roles">{t("projects.roles")}</Tabs.Tab>
            <Tabs.Tab value="apps">{t("projects.apps")}</Tabs.Tab>
            <Tabs.Tab value="grants">{t("projects.grants")}</Tabs.Tab>
            <Tabs.Tab value="orgs">{t("projectGrants.tab")}</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="roles">
            <Roles projectId={projectId} readOnly={!may("project.role.write")} />
          </Tabs.Panel>
          <Tabs.Panel value="apps">
            <Apps projectId={projectId} canCreate={may("project.app.write")} />
          </Tabs.Panel>
          <Tabs.Panel value="grants">
            <Grants projectId={projectId} readOnly={!canGrant} />
          </Tabs.Panel>
          <Tabs.Panel value="orgs">
            <ProjectGrants project={p} readOnly={!may("project.grant.write")} />
          </Tabs.Panel>
        </Tabs>
      )}
    </>
  );
}
