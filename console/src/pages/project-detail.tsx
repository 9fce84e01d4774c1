// One project: its roles, its applications (the wizard adds them) and the users granted its roles.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Group, MultiSelect, Stack, Table, Tabs, Text, TextInput, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ApplicationService } from "../../../gen/svc/app/v2/app_service_pb";
import { AuthorizationService } from "../../../gen/svc/authorization/v2/authorization_service_pb";
import { ProjectService } from "../../../gen/svc/project/v2/project_service_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { useI18n } from "../i18n";
import { UserPicker } from "../pickers";
import { useLink } from "../router";
import { ApiError, EmptyState, PageHeader } from "../ui";

function Roles({ projectId }: { projectId: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const roles = useQuery(ProjectService.method.listProjectRoles, { projectId, query: { limit: 200, asc: true } });
  const add = useMutation(ProjectService.method.addProjectRole, { onSuccess: () => client.invalidateQueries() });
  const [key, setKey] = useState("");
  const [name, setName] = useState("");
  return (
    <Stack>
      <ApiError error={roles.error} />
      {roles.data?.result.length === 0 && <EmptyState title={t("projects.noRoles")} hint={t("projects.noRolesHint")} />}
      {roles.data && roles.data.result.length > 0 && (
        <Table striped data-testid="roles-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("projects.roleKey")}</Table.Th>
              <Table.Th>{t("projects.roleName")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {roles.data.result.map((r) => (
              <Table.Tr key={r.roleKey}>
                <Table.Td>
                  <Text ff="monospace">{r.roleKey}</Text>
                </Table.Td>
                <Table.Td>{r.displayName}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
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
      >
        <Group align="flex-end" wrap="wrap">
          <TextInput label={t("projects.roleKey")} value={key} onChange={(e) => setKey(e.currentTarget.value)} required style={{ flex: "1 1 180px" }} />
          <TextInput label={t("projects.roleName")} value={name} onChange={(e) => setName(e.currentTarget.value)} style={{ flex: "1 1 180px" }} />
          <Button type="submit" loading={add.isPending}>
            {t("projects.addRole")}
          </Button>
        </Group>
        <ApiError error={add.error} />
      </form>
    </Stack>
  );
}

function Apps({ projectId }: { projectId: string }) {
  const { t } = useI18n();
  const apps = useQuery(ApplicationService.method.listApplications, { projectId, query: { limit: 100 } });
  const wizard = useLink(`/projects/${encodeURIComponent(projectId)}/apps/new`);
  const newButton = (
    <Button component="a" {...wizard}>
      {t("apps.new")}
    </Button>
  );
  return (
    <Stack>
      <ApiError error={apps.error} />
      {apps.data?.result.length === 0 ? (
        <EmptyState title={t("apps.empty")} hint={t("apps.emptyHint")} action={newButton} />
      ) : (
        <>
          <Group justify="flex-end">{newButton}</Group>
          <Table.ScrollContainer minWidth={320}>
            <Table striped data-testid="apps-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("apps.name")}</Table.Th>
                  <Table.Th>{t("apps.kind")}</Table.Th>
                  <Table.Th>{t("apps.clientId")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {apps.data?.result.map((a) => (
                  <Table.Tr key={a.id}>
                    <Table.Td>{a.name}</Table.Td>
                    <Table.Td>{a.config.case?.toUpperCase()}</Table.Td>
                    <Table.Td>
                      <Text ff="monospace" size="sm">
                        {a.clientId}
                      </Text>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </>
      )}
    </Stack>
  );
}

function Grants({ projectId }: { projectId: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const grants = useQuery(AuthorizationService.method.listUserGrants, {
    query: { limit: 100 },
    queries: [{ query: { case: "projectIdFilter", value: { projectId } } }],
  });
  const roles = useQuery(ProjectService.method.listProjectRoles, { projectId, query: { limit: 200, asc: true } });
  const add = useMutation(AuthorizationService.method.addUserGrant, { onSuccess: () => client.invalidateQueries() });
  const [userId, setUserId] = useState<string | null>(null);
  const [keys, setKeys] = useState<string[]>([]);
  return (
    <Stack>
      <ApiError error={grants.error} />
      {grants.data?.result.length === 0 && <EmptyState title={t("grants.empty")} hint={t("grants.emptyHint")} />}
      {grants.data && grants.data.result.length > 0 && (
        <Table striped data-testid="grants-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("orgs.user")}</Table.Th>
              <Table.Th>{t("orgs.roles")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {grants.data.result.map((g) => (
              <Table.Tr key={g.grantId}>
                <Table.Td>
                  <GrantUser userId={g.userId} />
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    {g.roleKeys.map((r) => (
                      <Badge key={r} variant="outline" color="gray.8">
                        {r}
                      </Badge>
                    ))}
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          add.mutate({ projectId, userId: userId ?? "", roleKeys: keys }, { onSuccess: () => setKeys([]) });
        }}
      >
        <Title order={3} size="h5" mb="xs">
          {t("grants.add")}
        </Title>
        <Group align="flex-end" wrap="wrap">
          <div style={{ flex: "1 1 240px" }}>
            <UserPicker label={t("orgs.user")} value={userId} onChange={setUserId} />
          </div>
          <MultiSelect
            label={t("orgs.roles")}
            value={keys}
            onChange={setKeys}
            data={(roles.data?.result ?? []).map((r) => ({ value: r.roleKey, label: r.displayName || r.roleKey }))}
            style={{ flex: "1 1 240px" }}
          />
          <Button type="submit" loading={add.isPending} disabled={!userId || keys.length === 0}>
            {t("grants.grant")}
          </Button>
        </Group>
        <ApiError error={add.error} />
      </form>
    </Stack>
  );
}

function GrantUser({ userId }: { userId: string }) {
  const user = useQuery(UserService.method.getUserByID, { userId });
  return <>{user.data?.user?.preferredLoginName ?? userId}</>;
}

export default function ProjectDetail({ params }: { params: string[] }) {
  const projectId = params[0] as string;
  const { t } = useI18n();
  const project = useQuery(ProjectService.method.getProject, { projectId });
  return (
    <>
      <PageHeader title={project.data?.project?.name ?? t("projects.project")} back={{ to: "/projects", label: t("nav.projects") }} />
      <ApiError error={project.error} />
      {project.data && (
        <Tabs defaultValue="roles" keepMounted={false}>
          <Tabs.List mb="md">
            <Tabs.Tab value="roles">{t("projects.roles")}</Tabs.Tab>
            <Tabs.Tab value="apps">{t("projects.apps")}</Tabs.Tab>
            <Tabs.Tab value="grants">{t("projects.grants")}</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="roles">
            <Roles projectId={projectId} />
          </Tabs.Panel>
          <Tabs.Panel value="apps">
            <Apps projectId={projectId} />
          </Tabs.Panel>
          <Tabs.Panel value="grants">
            <Grants projectId={projectId} />
          </Tabs.Panel>
        </Tabs>
      )}
    </>
  );
}
