// One user: profile, login names, state changes (lock/unlock, deactivate/reactivate) and deletion with confirmation.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, Card, Group, SimpleGrid, Stack, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { UserState } from "../../../gen/svc/user/v2/user_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { useI18n } from "../i18n";
import { useRouter } from "../router";
import { ApiError, ConfirmButton, PageHeader, useDateFormat } from "../ui";
import { PasswordCard, TokensCard } from "./user-credentials";
import { StateBadge } from "./users";

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" fw={600} tt="uppercase">
        {label}
      </Text>
      <Text>{children || "—"}</Text>
    </div>
  );
}

export default function UserDetail({ params }: { params: string[] }) {
  const userId = params[0] as string;
  const { t } = useI18n();
  const { navigate } = useRouter();
  const date = useDateFormat();
  const client = useQueryClient();
  const got = useQuery(UserService.method.getUserByID, { userId });
  const refresh = () => client.invalidateQueries();
  const lock = useMutation(UserService.method.lockUser, { onSuccess: refresh });
  const unlock = useMutation(UserService.method.unlockUser, { onSuccess: refresh });
  const deactivate = useMutation(UserService.method.deactivateUser, { onSuccess: refresh });
  const reactivate = useMutation(UserService.method.reactivateUser, { onSuccess: refresh });
  const remove = useMutation(UserService.method.deleteUser);
  const user = got.data?.user;
  const human = user?.type.case === "human" ? user.type.value : undefined;
  const machine = user?.type.case === "machine" ? user.type.value : undefined;
  const created = user?.details?.creationDate ? new Date(Number(user.details.creationDate.seconds) * 1000) : undefined;
  const failed = lock.error ?? unlock.error ?? deactivate.error ?? reactivate.error;
  return (
    <>
      <PageHeader
        title={user ? (human?.profile?.displayName ?? machine?.name ?? user.username) : t("users.user")}
        back={{ to: "/users", label: t("nav.users") }}
        actions={
          user && (
            <>
              {user.state === UserState.LOCKED ? (
                <Button variant="default" loading={unlock.isPending} onClick={() => unlock.mutate({ userId })}>
                  {t("users.unlock")}
                </Button>
              ) : (
                <Button variant="default" loading={lock.isPending} onClick={() => lock.mutate({ userId })}>
                  {t("users.lock")}
                </Button>
              )}
              {user.state === UserState.INACTIVE ? (
                <Button variant="default" loading={reactivate.isPending} onClick={() => reactivate.mutate({ userId })}>
                  {t("users.reactivate")}
                </Button>
              ) : (
                <Button variant="default" loading={deactivate.isPending} onClick={() => deactivate.mutate({ userId })}>
                  {t("users.deactivate")}
                </Button>
              )}
              <ConfirmButton
                label={t("action.delete")}
                title={t("users.deleteTitle")}
                body={t("users.deleteBody", { name: user.username })}
                confirmLabel={t("action.delete")}
                typeToConfirm={user.username}
                onConfirm={async () => {
                  await remove.mutateAsync({ userId });
                  await client.invalidateQueries();
                  navigate("/users");
                }}
              />
            </>
          )
        }
      />
      <ApiError error={got.error ?? failed} />
      {user && (
        <Stack>
          <Group>
            <StateBadge state={user.state} />
          </Group>
          <Card withBorder>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Field label={t("users.username")}>{user.username}</Field>
              <Field label={t("users.loginName")}>{user.preferredLoginName}</Field>
              {human && (
                <>
                  <Field label={t("users.givenName")}>{human.profile?.givenName}</Field>
                  <Field label={t("users.familyName")}>{human.profile?.familyName}</Field>
                  <Field label={t("users.email")}>
                    {human.email?.email} {human.email?.isVerified ? `(${t("users.verified")})` : ""}
                  </Field>
                  <Field label={t("users.phone")}>{human.phone?.phone}</Field>
                </>
              )}
              {machine && <Field label={t("users.description")}>{machine.description}</Field>}
              <Field label={t("users.created")}>{date(created)}</Field>
              <Field label={t("users.id")}>{user.userId}</Field>
            </SimpleGrid>
          </Card>
          {human && <PasswordCard userId={userId} />}
          {machine && <TokensCard userId={userId} />}
        </Stack>
      )}
    </>
  );
}
