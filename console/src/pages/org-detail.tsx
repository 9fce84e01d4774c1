// One organization: its name (renamed in a dialog), state (deactivate/reactivate), deletion after typing the name,
// and tabs for the members and their roles with SCIM provisioning, metadata, and the organization's own settings.
// What is offered follows the caller's permissions in this organization (ListMyPermissions): renaming and state with
// org.write, deletion with org.delete, members and SCIM provisioning with org.member.write, settings with policy.write.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Button, Card, SimpleGrid, Stack, Tabs, Text, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Organization, OrganizationState } from "../../../gen/svc/org/v2/org_pb";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { type Access, useAccess } from "../access";
import { FormDialog } from "../fields";
import { useI18n } from "../i18n";
import { useRouter } from "../router";
import { ApiError, ConfirmButton, PageHeader } from "../ui";
import { OrgActions } from "./actions";
import { OrgIdps } from "./idps";
import { Members } from "./members";
import { MetadataCard } from "./metadata";
import { OrgSettings } from "./org-settings";
import { ScimCard } from "./scim";

const ORG_ROLES = ["ORG_OWNER", "ORG_USER_MANAGER", "ORG_PROJECT_PERMISSION_MANAGER", "ORG_AUDITOR", "ORG_TOKEN_EXCHANGER"];

function Rename({ org }: { org: Organization }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(org.name);
  const update = useMutation(OrganizationService.method.updateOrganization, { onSuccess: () => client.invalidateQueries() });
  return (
    <>
      <Button
        variant="default"
        onClick={() => {
          setName(org.name);
          update.reset();
          setOpen(true);
        }}
      >
        {t("orgEdit.rename")}
      </Button>
      <FormDialog
        opened={open}
        onClose={() => setOpen(false)}
        title={t("orgEdit.renameTitle")}
        onSubmit={() => {
          update.mutate({ organizationId: org.id, name: name.trim() }, { onSuccess: () => setOpen(false) });
        }}
        error={update.error}
        saving={update.isPending}
        withCancel
      >
        <TextInput label={t("orgs.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
      </FormDialog>
    </>
  );
}

function OrgMetadata({ orgId, canWrite }: { orgId: string; canWrite: boolean }) {
  const client = useQueryClient();
  const refresh = { onSuccess: () => client.invalidateQueries() };
  const list = useQuery(OrganizationService.method.listOrganizationMetadata, { organizationId: orgId, query: { limit: 200, asc: true } });
  const set = useMutation(OrganizationService.method.setOrganizationMetadata, refresh);
  const remove = useMutation(OrganizationService.method.deleteOrganizationMetadata, refresh);
  return (
    <MetadataCard
      entries={list.data?.result}
      error={list.error}
      canWrite={canWrite}
      onSet={(key, value) => set.mutateAsync({ organizationId: orgId, metadata: [{ key, value }] })}
      onRemove={(key) => remove.mutateAsync({ organizationId: orgId, keys: [key] })}
    />
  );
}

/** Another organization's page starts afresh (its own tab, forms and dialogs). */
export default function OrgDetail({ params }: { params: string[] }) {
  return <OrgPage key={params[0]} orgId={params[0] as string} />;
}

function OrgPage({ orgId }: { orgId: string }) {
  const { t } = useI18n();
  const { navigate, search } = useRouter();
  const client = useQueryClient();
  const access = useAccess().data as Access | undefined;
  const [tab, setTab] = useState<string | null>(search.get("tab") ?? "members");
  const org = useQuery(OrganizationService.method.getOrganizationByID, { organizationId: orgId });
  const members = useQuery(OrganizationService.method.listOrganizationMembers, { organizationId: orgId, query: { limit: 100 } }, { retry: false });
  const refresh = { onSuccess: () => client.invalidateQueries() };
  const deactivate = useMutation(OrganizationService.method.deactivateOrganization, refresh);
  const reactivate = useMutation(OrganizationService.method.reactivateOrganization, refresh);
  const remove = useMutation(OrganizationService.method.deleteOrganization);
  const addMember = useMutation(OrganizationService.method.addOrganizationMember, refresh);
  const updateMember = useMutation(OrganizationService.method.updateOrganizationMember, refresh);
  const removeMember = useMutation(OrganizationService.method.removeOrganizationMember, refresh);
  const o = org.data?.organization;
  // What the roles allow in this organization (ListMyPermissions); the API still decides each call.
  const may = (permission: string) => access?.can(permission, orgId) ?? false;
  const canWrite = may("org.write");
  const canMembers = may("org.member.write");
  const active = o?.state !== OrganizationState.INACTIVE;
  return (
    <>
      <PageHeader
        title={o?.name ?? t("orgs.org")}
        back={{ to: "/orgs", label: t("nav.orgs") }}
        actions={
          o &&
          canWrite && (
            <>
              <Rename org={o} />
              {active ? (
                <Button variant="default" loading={deactivate.isPending} onClick={() => deactivate.mutate({ organizationId: orgId })}>
                  {t("users.deactivate")}
                </Button>
              ) : (
                <Button variant="default" loading={reactivate.isPending} onClick={() => reactivate.mutate({ organizationId: orgId })}>
                  {t("users.reactivate")}
                </Button>
              )}
              {may("org.delete") && (
                <ConfirmButton
                  label={t("action.delete")}
                  title={t("orgEdit.deleteTitle")}
                  body={t("orgEdit.deleteBody", { name: o.name })}
                  confirmLabel={t("action.delete")}
                  typeToConfirm={o.name}
                  onConfirm={async () => {
                    await remove.mutateAsync({ organizationId: orgId });
                    await client.invalidateQueries();
                    navigate("/orgs");
                  }}
                />
              )}
            </>
          )
        }
      />
      <ApiError error={org.error ?? deactivate.error ?? reactivate.error} />
      {o && (
        <Stack>
          <Card withBorder>
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <div>
                <Text size="xs" c="dimmed" fw={600} tt="uppercase">
                  {t("orgs.domain")}
                </Text>
                <Text>{o.primaryDomain}</Text>
              </div>
              <div>
                <Text size="xs" c="dimmed" fw={600} tt="uppercase">
                  {t("users.state")}
                </Text>
                <Badge variant="filled" autoContrast color={active ? "teal.9" : "gray.7"} data-testid="org-state">
                  {t(active ? "state.active" : "state.inactive")}
                </Badge>
              </div>
              <div>
                <Text size="xs" c="dimmed" fw={600} tt="uppercase">
                  {t("users.id")}
                </Text>
                <Text>{o.id}</Text>
              </div>
            </SimpleGrid>
          </Card>
          <Tabs value={tab} onChange={setTab} keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="members">{t("orgs.members")}</Tabs.Tab>
              <Tabs.Tab value="metadata">{t("meta.title")}</Tabs.Tab>
              <Tabs.Tab value="settings">{t("orgSettings.title")}</Tabs.Tab>
              {may("idp.read") && <Tabs.Tab value="idps">{t("idps.title")}</Tabs.Tab>}
              {may("action.read") && <Tabs.Tab value="actions">{t("actions.org.tab")}</Tabs.Tab>}
            </Tabs.List>
            <Tabs.Panel value="members" pt="md">
              <Stack>
                {members.data && (
                  <Members
                    members={members.data.result}
                    error={undefined}
                    roles={ORG_ROLES}
                    canWrite={canMembers}
                    emptyTitle={t("orgs.noMembers")}
                    emptyHint={t(canMembers ? "orgs.noMembersHint" : "orgEdit.noMembersHintRead")}
                    testId="members-table"
                    onAdd={(userId, roles) => addMember.mutateAsync({ organizationId: orgId, userId, roles })}
                    onUpdate={(userId, roles) => updateMember.mutateAsync({ organizationId: orgId, userId, roles })}
                    onRemove={(userId) => removeMember.mutateAsync({ organizationId: orgId, userId })}
                  />
                )}
                {members.isError && <Text c="dimmed">{t("orgEdit.membersHidden")}</Text>}
                {/* A provisioning account is a member: who cannot add members cannot create one. */}
                {canMembers && <ScimCard orgId={orgId} />}
              </Stack>
            </Tabs.Panel>
            <Tabs.Panel value="metadata" pt="md">
              <OrgMetadata orgId={orgId} canWrite={canWrite} />
            </Tabs.Panel>
            <Tabs.Panel value="settings" pt="md">
              <OrgSettings orgId={orgId} canWrite={may("policy.write")} />
            </Tabs.Panel>
            <Tabs.Panel value="idps" pt="md">
              <OrgIdps orgId={orgId} readOnly={!may("idp.write")} />
            </Tabs.Panel>
            <Tabs.Panel value="actions" pt="md">
              <OrgActions orgId={orgId} readOnly={!may("action.write")} />
            </Tabs.Panel>
          </Tabs>
        </Stack>
      )}
    </>
  );
}
