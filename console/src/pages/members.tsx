// Members with roles (an organization's, or the instance's administrators): the list, a member's roles changed in a
// dialog, a member removed after confirmation, and a member added. The caller passes the calls; who may make them is
// the API's decision (`canWrite` only hides what it would refuse).
import { Button, Group, MultiSelect, Stack, Text, Title } from "@mantine/core";
import { useState } from "react";
import { FormDialog, RoleBadges } from "../fields";
import { useI18n } from "../i18n";
import { UserPicker } from "../pickers";
import { DataTable, RowActions } from "../table";
import { ApiError, ConfirmButton, EmptyState } from "../ui";

export interface MemberRow {
  userId: string;
  roles: string[];
  preferredLoginName: string;
  displayName: string;
}

const nameOf = (m: MemberRow) => m.preferredLoginName || m.displayName;

function EditRoles({ member, roles, onSave }: { member: MemberRow; roles: string[]; onSave(userId: string, roles: string[]): Promise<unknown> }) {
  const { t } = useI18n();
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState<string[]>(member.roles);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const name = nameOf(member);
  return (
    <>
      <Button
        size="xs"
        variant="default"
        onClick={() => {
          setValue(member.roles);
          setError(undefined);
          setOpen(true);
        }}
        aria-label={t("members.editRolesOf", { name })}
      >
        {t("members.editRoles")}
      </Button>
      <FormDialog
        opened={open}
        onClose={() => setOpen(false)}
        title={t("members.editRolesOf", { name })}
        onSubmit={async () => {
          setBusy(true);
          try {
            await onSave(member.userId, value);
            setOpen(false);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
        error={error}
        saving={busy}
        disabled={value.length === 0}
        withCancel
      >
        <MultiSelect label={t("orgs.roles")} data={roles} value={value} onChange={setValue} required comboboxProps={{ withinPortal: false }} />
      </FormDialog>
    </>
  );
}

function AddMember({ roles, onAdd, orgId }: { roles: string[]; onAdd(userId: string, roles: string[]): Promise<unknown>; orgId?: string }) {
  const { t } = useI18n();
  const [userId, setUserId] = useState<string | null>(null);
  const [value, setValue] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          await onAdd(userId ?? "", value);
          setValue([]);
          setUserId(null);
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <Stack gap="sm">
        <Title order={3} size="h4">
          {t("orgs.addMember")}
        </Title>
        <Group align="flex-end" wrap="wrap">
          <div style={{ flex: "1 1 240px" }}>
            <UserPicker label={t("orgs.user")} value={userId} onChange={setUserId} orgId={orgId} />
          </div>
          <MultiSelect label={t("orgs.roles")} data={roles} value={value} onChange={setValue} style={{ flex: "1 1 240px" }} required />
          <Button type="submit" loading={busy} disabled={!userId || value.length === 0}>
            {t("orgs.add")}
          </Button>
        </Group>
        <ApiError error={error} />
      </Stack>
    </form>
  );
}

export function Members(props: {
  members: MemberRow[] | undefined;
  error: unknown;
  roles: string[];
  canWrite: boolean;
  emptyTitle: string;
  emptyHint: string;
  testId: string;
  onAdd(userId: string, roles: string[]): Promise<unknown>;
  onUpdate(userId: string, roles: string[]): Promise<unknown>;
  onRemove(userId: string): Promise<unknown>;
}) {
  const { t } = useI18n();
  const { members } = props;
  return (
    <Stack>
      <ApiError error={props.error} />
      <DataTable
        testId={props.testId}
        rows={members}
        rowKey={(m) => m.userId}
        columns={[
          { header: t("orgs.user"), cell: (m) => <Text size="sm">{nameOf(m)}</Text> },
          { header: t("orgs.roles"), cell: (m) => <RoleBadges roles={m.roles} /> },
        ]}
        actions={
          props.canWrite
            ? (m) => (
                <RowActions gap="xs">
                  <EditRoles member={m} roles={props.roles} onSave={props.onUpdate} />
                  <ConfirmButton
                    size="xs"
                    label={t("members.remove")}
                    ariaLabel={t("members.removeOf", { name: nameOf(m) })}
                    title={t("members.removeTitle")}
                    body={t("members.removeBody", { name: nameOf(m) })}
                    confirmLabel={t("members.remove")}
                    onConfirm={() => props.onRemove(m.userId)}
                  />
                </RowActions>
              )
            : undefined
        }
        empty={<EmptyState title={props.emptyTitle} hint={props.emptyHint} />}
      />
      {props.canWrite && members && <AddMember roles={props.roles} onAdd={props.onAdd} />}
    </Stack>
  );
}
