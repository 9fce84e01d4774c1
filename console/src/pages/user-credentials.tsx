// A user's credentials an administrator manages: a new password for a person (to be changed at the next sign-in,
// unless unticked), personal access tokens for a service account (each shown once, with a copy button).
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Alert, Button, Card, Checkbox, Group, PasswordInput, Stack, Table, Text, Title, VisuallyHidden } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { useI18n } from "../i18n";
import { ApiError, SecretValue, useDateFormat } from "../ui";
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
    </Card>
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
    <Card withBorder>
      <Stack gap="sm">
        <Title order={2} size="h4">
          {t("users.tokens")}
        </Title>
        <ApiError error={tokens.error ?? add.error ?? remove.error} />
        {tokens.data?.result.length === 0 && <Text c="dimmed">{t("users.noTokens")}</Text>}
        {tokens.data && tokens.data.result.length > 0 && (
          <Table data-testid="tokens-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("users.id")}</Table.Th>
                <Table.Th>{t("users.created")}</Table.Th>
                <Table.Th>
                  <VisuallyHidden>{t("action.delete")}</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {tokens.data.result.map((p) => (
                <Table.Tr key={p.id}>
                  <Table.Td>
                    <Text ff="monospace" size="sm">
                      {p.id}
                    </Text>
                  </Table.Td>
                  <Table.Td>{date(toDate(p.details?.creationDate))}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      variant="default"
                      color="red.9"
                      onClick={() => remove.mutate({ userId, tokenId: p.id })}
                      aria-label={t("users.revokeToken", { id: p.id })}
                    >
                      {t("users.revoke")}
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {add.data && (
          <>
            <SecretValue label={t("users.newToken")} value={add.data.token} />
            <Alert color="orange" title={t("apps.secretOnceTitle")}>
              {t("users.tokenOnce")}
            </Alert>
          </>
        )}
        <Group>
          <Button variant="default" loading={add.isPending} onClick={() => add.mutate({ userId })}>
            {t("users.addToken")}
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}
