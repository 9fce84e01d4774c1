// A user's credentials an administrator manages: a new password for a person (to be changed at the next sign-in,
// unless unticked), a reset mail or an invitation; for a service account personal access tokens, key pairs (the JSON key file
// downloaded once) and a client secret, each shown once with a copy button.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Alert, Button, Card, Checkbox, Group, PasswordInput, Stack, Text, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { MachineUser } from "../../../gen/svc/user/v2/user_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { type MessageKey, useI18n } from "../i18n";
import { DataTable, idColumn } from "../table";
import { ApiError, CardSection, ConfirmButton, EmptyState, SecretValue, ShownOnce, useDateFormat } from "../ui";
import { toDate } from "./dates";

export function PasswordCard({ userId }: { userId: string }) {
  const { t } = useI18n();
  const set = useMutation(UserService.method.setPassword);
  const [password, setPassword] = useState("");
  const [changeRequired, setChangeRequired] = useState(true);
  return (
    <Card withBorder>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          set.mutate({ userId, newPassword: { password, changeRequired } }, { onSuccess: () => setPassword("") });
        }}
      >
        <Stack gap="sm">
          <Title order={2} size="h4">
            {t("users.setPassword")}
          </Title>
          <PasswordInput label={t("users.newPassword")} value={password} onChange={(e) => setPassword(e.currentTarget.value)} required />
          <Checkbox label={t("users.changeRequired")} checked={changeRequired} onChange={(e) => setChangeRequired(e.currentTarget.checked)} />
          <ApiError error={set.error} />
          {set.isSuccess && (
            <Alert color="teal" title={t("users.passwordSet")}>
              {t("users.passwordSetHint")}
            </Alert>
          )}
          <Group>
            <Button type="submit" loading={set.isPending}>
              {t("users.setPassword")}
            </Button>
          </Group>
        </Stack>
      </form>
      <PasswordReset userId={userId} />
      <Invitation userId={userId} />
    </Card>
  );
}

/** A reset code by mail (the hosted login's reset page), or returned here for a user without a working address. */
function PasswordReset({ userId }: { userId: string }) {
  const reset = useMutation(UserService.method.passwordReset);
  return (
    <CodeDelivery
      texts={{ title: "reset.title", hint: "reset.hint", send: "reset.send", returnCode: "reset.returnCode", sent: "reset.sent", code: "reset.code" }}
      pending={reset.isPending}
      error={reset.error}
      sent={reset.isSuccess && !reset.data.verificationCode}
      code={reset.data?.verificationCode}
      onSend={() => reset.mutate({ userId, medium: { case: "sendLink", value: {} } })}
      onReturn={() => reset.mutate({ userId, medium: { case: "returnCode", value: {} } })}
    />
  );
}

/** An invitation for a user who cannot sign in yet: a link to choose the first password, by mail or returned here. */
function Invitation({ userId }: { userId: string }) {
  const invite = useMutation(UserService.method.createInviteCode);
  return (
    <CodeDelivery
      texts={{ title: "invite.title", hint: "invite.hint", send: "invite.send", returnCode: "invite.returnCode", sent: "invite.sent", code: "invite.code" }}
      pending={invite.isPending}
      error={invite.error}
      sent={invite.isSuccess && !invite.data.inviteCode}
      code={invite.data?.inviteCode}
      onSend={() => invite.mutate({ userId, verification: { case: "sendCode", value: {} } })}
      onReturn={() => invite.mutate({ userId, verification: { case: "returnCode", value: {} } })}
    />
  );
}

/** A code sent to the user's e-mail, or shown here once: a password reset's or an invitation's. */
function CodeDelivery(props: {
  texts: Record<"title" | "hint" | "send" | "returnCode" | "sent" | "code", MessageKey>;
  pending: boolean;
  error: unknown;
  sent: boolean;
  code: string | undefined;
  onSend(): void;
  onReturn(): void;
}) {
  const { t } = useI18n();
  return (
    <Stack gap="sm" mt="lg">
      <Title order={3} size="h5">
        {t(props.texts.title)}
      </Title>
      <Text size="sm" c="dimmed">
        {t(props.texts.hint)}
      </Text>
      <Group>
        <Button variant="default" loading={props.pending} onClick={props.onSend}>
          {t(props.texts.send)}
        </Button>
        <Button variant="default" loading={props.pending} onClick={props.onReturn}>
          {t(props.texts.returnCode)}
        </Button>
      </Group>
      <ApiError error={props.error} />
      {props.sent && (
        <Text size="sm" role="status">
          {t(props.texts.sent)}
        </Text>
      )}
      {props.code && <SecretValue label={t(props.texts.code)} value={props.code} />}
    </Stack>
  );
}

export function TokensCard({ userId }: { userId: string }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const tokens = useQuery(UserService.method.listPersonalAccessTokens, { userId, query: { limit: 100 } });
  const add = useMutation(UserService.method.addPersonalAccessToken, { onSuccess: () => client.invalidateQueries() });
  const remove = useMutation(UserService.method.removePersonalAccessToken, { onSuccess: () => client.invalidateQueries() });
  return (
    <CardSection title={t("users.tokens")}>
      <ApiError error={tokens.error ?? add.error ?? remove.error} />
      <DataTable
        testId="tokens-table"
        scroll={false}
        striped={false}
        rows={tokens.data?.result}
        rowKey={(x) => x.id}
        columns={[idColumn(t("users.id")), { header: t("users.created"), cell: (x) => date(toDate(x.details?.creationDate)) }]}
        actionsHeader={t("action.delete")}
        actions={(x) => (
          <Button
            size="xs"
            variant="default"
            color="red.9"
            onClick={() => remove.mutate({ userId, tokenId: x.id })}
            aria-label={t("users.revokeToken", { id: x.id })}
          >
            {t("users.revoke")}
          </Button>
        )}
        empty={<Text c="dimmed">{t("users.noTokens")}</Text>}
      />
      {add.data && <ShownOnce label={t("users.newToken")} value={add.data.token} note={t("users.tokenOnce")} />}
      <Group>
        <Button variant="default" loading={add.isPending} onClick={() => add.mutate({ userId })}>
          {t("users.addToken")}
        </Button>
      </Group>
    </CardSection>
  );
}

/** Saves the key file as the browser's download (nothing leaves the page). */
function download(name: string, content: Uint8Array) {
  const url = URL.createObjectURL(new Blob([content as BlobPart], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function KeysCard({ userId }: { userId: string }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const keys = useQuery(UserService.method.listKeys, { userId, query: { limit: 100 } });
  const add = useMutation(UserService.method.addKey, { onSuccess: () => client.invalidateQueries() });
  const remove = useMutation(UserService.method.removeKey, { onSuccess: () => client.invalidateQueries() });
  const keyFile = add.data && add.data.keyContent.length > 0 ? new TextDecoder().decode(add.data.keyContent) : undefined;
  return (
    <CardSection title={t("keys.title")}>
      <Text size="sm" c="dimmed">
        {t("keys.hint")}
      </Text>
      <ApiError error={keys.error ?? remove.error} />
      <DataTable
        testId="keys-table"
        minWidth={300}
        striped={false}
        rows={keys.data?.result}
        rowKey={(x) => x.id}
        columns={[
          idColumn(t("users.id")),
          { header: t("users.created"), cell: (x) => date(toDate(x.details?.creationDate)) },
          { header: t("keys.expires"), cell: (x) => date(toDate(x.expirationDate)) || t("keys.never") },
        ]}
        actionsHeader={t("action.delete")}
        actions={(x) => (
          <ConfirmButton
            size="xs"
            label={t("users.revoke")}
            ariaLabel={t("keys.removeKey", { id: x.id })}
            title={t("keys.removeTitle")}
            body={t("keys.removeBody", { id: x.id })}
            confirmLabel={t("users.revoke")}
            onConfirm={() => remove.mutateAsync({ userId, keyId: x.id })}
          />
        )}
        empty={<EmptyState title={t("keys.empty")} hint={t("keys.emptyHint")} />}
      />
      {add.data && keyFile && (
        <>
          <Alert color="orange" title={t("keys.onceTitle")}>
            {t("keys.once")}
          </Alert>
          <SecretValue label={t("keys.file")} value={keyFile} />
          <Group>
            <Button onClick={() => download(`${add.data.keyId}.json`, add.data.keyContent)}>{t("keys.download")}</Button>
          </Group>
        </>
      )}
      <ApiError error={add.error} />
      <Group>
        <Button variant="default" loading={add.isPending} onClick={() => add.mutate({ userId })}>
          {t("keys.add")}
        </Button>
      </Group>
    </CardSection>
  );
}

export function SecretCard({ userId, machine }: { userId: string; machine: MachineUser }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const add = useMutation(UserService.method.addSecret, { onSuccess: () => client.invalidateQueries() });
  const remove = useMutation(UserService.method.removeSecret, {
    onSuccess: () => {
      add.reset();
      return client.invalidateQueries();
    },
  });
  return (
    <CardSection title={t("secret.title")}>
      <Text size="sm" c="dimmed">
        {t(machine.hasSecret ? "secret.has" : "secret.none")}
      </Text>
      {add.data && <ShownOnce label={t("apps.clientSecret")} value={add.data.clientSecret} note={t("apps.secretOnce")} />}
      <ApiError error={add.error ?? remove.error} />
      <Group>
        <Button variant="default" loading={add.isPending} onClick={() => add.mutate({ userId })}>
          {t(machine.hasSecret ? "secret.regenerate" : "secret.generate")}
        </Button>
        {machine.hasSecret && (
          <ConfirmButton
            label={t("secret.remove")}
            title={t("secret.removeTitle")}
            body={t("secret.removeBody")}
            confirmLabel={t("secret.remove")}
            onConfirm={() => remove.mutateAsync({ userId })}
          />
        )}
      </Group>
    </CardSection>
  );
}
