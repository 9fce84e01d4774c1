// One organization: its domain, its members and their roles (ORG_OWNER manages them), and a member to add.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Card, Group, MultiSelect, SimpleGrid, Stack, Table, Text, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { useI18n } from "../i18n";
import { UserPicker } from "../pickers";
import { ApiError, EmptyState, PageHeader } from "../ui";
import { ScimCard } from "./scim";

const ORG_ROLES = ["ORG_OWNER", "ORG_USER_MANAGER", "ORG_PROJECT_PERMISSION_MANAGER", "ORG_AUDITOR"];

function AddMember({ orgId }: { orgId: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const add = useMutation(OrganizationService.method.addOrganizationMember, { onSuccess: () => client.invalidateQueries() });
  const [userId, setUserId] = useState<string | null>(null);
  const [roles, setRoles] = useState<string[]>([]);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        add.mutate({ organizationId: orgId, userId: userId ?? "", roles }, { onSuccess: () => setRoles([]) });
      }}
    >
      <Stack gap="sm">
        <Title order={2} size="h4">
          {t("orgs.addMember")}
        </Title>
        <Group align="flex-end" wrap="wrap">
          <div style={{ flex: "1 1 240px" }}>
            <UserPicker label={t("orgs.user")} value={userId} onChange={setUserId} />
          </div>
          <MultiSelect label={t("orgs.roles")} data={ORG_ROLES} value={roles} onChange={setRoles} style={{ flex: "1 1 240px" }} required />
          <Button type="submit" loading={add.isPending} disabled={!userId || roles.length === 0}>
            {t("orgs.add")}
          </Button>
        </Group>
        <ApiError error={add.error} />
      </Stack>
    </form>
  );
}

export default function OrgDetail({ params }: { params: string[] }) {
  const orgId = params[0] as string;
  const { t } = useI18n();
  const org = useQuery(OrganizationService.method.getOrganizationByID, { organizationId: orgId });
  const members = useQuery(OrganizationService.method.listOrganizationMembers, { organizationId: orgId, query: { limit: 100 } }, { retry: false });
  const o = org.data?.organization;
  return (
    <>
      <PageHeader title={o?.name ?? t("orgs.org")} back={{ to: "/orgs", label: t("nav.orgs") }} />
      <ApiError error={org.error} />
      {o && (
        <Stack>
          <Card withBorder>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <div>
                <Text size="xs" c="dimmed" fw={600} tt="uppercase">
                  {t("orgs.domain")}
                </Text>
                <Text>{o.primaryDomain}</Text>
              </div>
              <div>
                <Text size="xs" c="dimmed" fw={600} tt="uppercase">
                  {t("users.id")}
                </Text>
                <Text>{o.id}</Text>
              </div>
            </SimpleGrid>
          </Card>
          <Title order={2} size="h3">
            {t("orgs.members")}
          </Title>
          <ApiError error={members.error} />
          {members.data && members.data.result.length === 0 && <EmptyState title={t("orgs.noMembers")} hint={t("orgs.noMembersHint")} />}
          {members.data && members.data.result.length > 0 && (
            <Table.ScrollContainer minWidth={320}>
              <Table striped data-testid="members-table">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{t("orgs.user")}</Table.Th>
                    <Table.Th>{t("orgs.roles")}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {members.data.result.map((m) => (
                    <Table.Tr key={m.userId}>
                      <Table.Td>{m.preferredLoginName || m.displayName}</Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          {m.roles.map((r) => (
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
            </Table.ScrollContainer>
          )}
          {members.data && <AddMember orgId={orgId} />}
          <ScimCard orgId={orgId} />
        </Stack>
      )}
    </>
  );
}
