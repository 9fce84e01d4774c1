// The instance's administrators: who holds IAM_OWNER (everything), IAM_OWNER_VIEWER (reads everything) or
// IAM_LOGIN_CLIENT (a login UI's service account) or IAM_TOKEN_EXCHANGER (a machine user that exchanges users' tokens,
// RFC 8693). Instance members see the list; IAM_OWNER changes it.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { InstanceService } from "../../../gen/svc/instance/v2/instance_service_pb";
import { type Access, useAccess } from "../access";
import { useI18n } from "../i18n";
import { PageHeader } from "../ui";
import { Members } from "./members";

const INSTANCE_ROLES = ["IAM_OWNER", "IAM_OWNER_VIEWER", "IAM_LOGIN_CLIENT", "IAM_TOKEN_EXCHANGER"];

export default function Admins(_props: { params: string[] }) {
  const { t } = useI18n();
  const access = useAccess().data as Access | undefined;
  const client = useQueryClient();
  const members = useQuery(InstanceService.method.listInstanceMembers, { query: { limit: 200 } });
  const refresh = { onSuccess: () => client.invalidateQueries() };
  const add = useMutation(InstanceService.method.addInstanceMember, refresh);
  const update = useMutation(InstanceService.method.updateInstanceMember, refresh);
  const remove = useMutation(InstanceService.method.removeInstanceMember, refresh);
  return (
    <>
      <PageHeader title={t("admins.title")} />
      <Text c="dimmed" size="sm" mb="md" maw={720}>
        {t("admins.hint")}
      </Text>
      <Members
        members={members.data?.result}
        error={members.error}
        roles={INSTANCE_ROLES}
        canWrite={access?.instanceWrite ?? false}
        emptyTitle={t("admins.empty")}
        emptyHint={t("admins.emptyHint")}
        testId="admins-table"
        onAdd={(userId, roles) => add.mutateAsync({ userId, roles })}
        onUpdate={(userId, roles) => update.mutateAsync({ userId, roles })}
        onRemove={(userId) => remove.mutateAsync({ userId })}
      />
    </>
  );
}
