// One user: the summary and state changes (lock/unlock, deactivate/reactivate, deletion with confirmation) above
// tabs for the profile and contact data, the sign-in methods or a service account's credentials, metadata, the
// user's authorizations and sessions. A tab's calls are made when it is opened; what the roles cannot change is
// shown read-only (the caller's permissions in the user's organization, from ListMyPermissions), and sessions only to
// those who may end them.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Button, Card, Group, SimpleGrid, Stack, Tabs, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { UserState } from "../../../gen/svc/user/v2/user_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { type Access, useAccess } from "../access";
import { useI18n } from "../i18n";
import { useRouter } from "../router";
import { ApiError, ConfirmButton, PageHeader, useDateFormat } from "../ui";
import { MetadataCard } from "./metadata";
import { KeysCard, PasswordCard, SecretCard, TokensCard } from "./user-credentials";
import { UserGrantsCard } from "./user-grants";
import { MfaCard } from "./user-mfa";
import { ContactCard, ProfileCard } from "./user-profile";
import { SessionsCard } from "./user-sessions";
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

/** Another user's page starts afresh (its own tab, forms and dialogs). */
export default function UserDetail({ params }: { params: string[] }) {
  return <UserPage key={params[0]} userId={params[0] as string} />;
}

function UserPage({ userId }: { userId: string }) {
  const { t } = useI18n();
  const { navigate, search } = useRouter();
  const date = useDateFormat();
  const access = useAccess().data as Access | undefined;
  const [tab, setTab] = useState<string | null>(search.get("tab") ?? "profile");
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
  // What the roles allow in the user's organization (ListMyPermissions); the API still decides, and its message
  // shows where it refuses anyway (an account with more roles than the caller may grant).
  const orgId = user?.details?.resourceOwner;
  const may = (permission: string) => access?.can(permission, orgId) ?? false;
  const readOnly = !may("user.write");
  const self = access?.userId === userId;
  return (
    <>
      <PageHeader
        title={user ? (human?.profile?.displayName ?? machine?.name ?? user.username) : t("users.user")}
        back={{ to: "/users", label: t("nav.users") }}
        actions={
          user &&
          !readOnly && (
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
              {may("user.delete") && (
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
              )}
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
          <Tabs value={tab} onChange={setTab} keepMounted={false}>
            <Tabs.List>
              <Tabs.Tab value="profile">{t("userTabs.profile")}</Tabs.Tab>
              <Tabs.Tab value="security">{t(human ? "userTabs.security" : "userTabs.credentials")}</Tabs.Tab>
              <Tabs.Tab value="metadata">{t("meta.title")}</Tabs.Tab>
              <Tabs.Tab value="grants">{t("ugrants.title")}</Tabs.Tab>
              {(access?.instanceWrite || access?.userId === userId) && <Tabs.Tab value="sessions">{t("sessions.title")}</Tabs.Tab>}
            </Tabs.List>
            <Tabs.Panel value="profile" pt="md">
              <Stack>
                <ProfileCard user={user} readOnly={readOnly && !self} />
                {human && (
                  <ContactCard
                    key={`${human.email?.email}|${human.email?.isVerified}|${human.phone?.phone}`}
                    userId={userId}
                    human={human}
                    readOnly={readOnly && !self}
                    canCode={may("user.authn.write") && !self}
                  />
                )}
              </Stack>
            </Tabs.Panel>
            <Tabs.Panel value="security" pt="md">
              <Stack>
                {human && !readOnly && <PasswordCard userId={userId} />}
                {human && <MfaCard userId={userId} readOnly={!may("user.authn.write")} />}
                {machine && may("user.credential.write") && <TokensCard userId={userId} />}
                {machine && may("user.credential.write") && <KeysCard userId={userId} />}
                {machine && may("user.credential.write") && <SecretCard userId={userId} machine={machine} />}
              </Stack>
            </Tabs.Panel>
            <Tabs.Panel value="metadata" pt="md">
              <UserMetadata userId={userId} readOnly={readOnly} />
            </Tabs.Panel>
            <Tabs.Panel value="grants" pt="md">
              {/* Granting needs the projects' roles: without project access the API would refuse it. */}
              <UserGrantsCard userId={userId} readOnly={!may("user.grant.write") || !access?.projects} />
            </Tabs.Panel>
            <Tabs.Panel value="sessions" pt="md">
              <SessionsCard userId={userId} />
            </Tabs.Panel>
          </Tabs>
        </Stack>
      )}
    </>
  );
}

function UserMetadata({ userId, readOnly }: { userId: string; readOnly: boolean }) {
  const client = useQueryClient();
  const refresh = { onSuccess: () => client.invalidateQueries() };
  const list = useQuery(UserService.method.listUserMetadata, { userId, query: { limit: 200, asc: true } });
  const set = useMutation(UserService.method.setUserMetadata, refresh);
  const remove = useMutation(UserService.method.deleteUserMetadata, refresh);
  return (
    <MetadataCard
      entries={list.data?.result}
      error={list.error}
      canWrite={!readOnly}
      onSet={(key, value) => set.mutateAsync({ userId, metadata: [{ key, value }] })}
      onRemove={(key) => remove.mutateAsync({ userId, keys: [key] })}
    />
  );
}
