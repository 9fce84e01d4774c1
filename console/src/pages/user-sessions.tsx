// A user's live sessions (instance administrators see everyone's; others only their own, so the user page offers
// this tab to them for themselves only): when each began, from where, which factors it checked; ending one ends the
// tokens issued from it.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Card, Group, Stack, Table, Text, Title, VisuallyHidden } from "@mantine/core";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Session, SessionFieldName } from "../../../gen/svc/session/v2/session_pb";
import { SessionService } from "../../../gen/svc/session/v2/session_service_pb";
import { useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { ApiError, ConfirmButton, EmptyState, useDateFormat } from "../ui";
import { toDate } from "./dates";

function factors(s: Session): string[] {
  const f = s.factors;
  return [
    f?.password?.verifiedAt && "password",
    f?.webAuthN?.verifiedAt && "passkey",
    f?.totp?.verifiedAt && "TOTP",
    f?.otpEmail?.verifiedAt && "e-mail code",
    f?.intent?.verifiedAt && "IdP",
  ].filter((x): x is string => !!x);
}

export function SessionsCard({ userId }: { userId: string }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const sessions = useQuery(
    SessionService.method.listSessions,
    { query: pageQuery(page, false), sortingColumn: SessionFieldName.CREATION_DATE, queries: [{ query: { case: "userIdQuery", value: { id: userId } } }] },
    { placeholderData: keepPreviousData },
  );
  const end = useMutation(SessionService.method.deleteSession, { onSuccess: () => client.invalidateQueries() });
  const list = sessions.data?.sessions;
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={2} size="h4">
          {t("sessions.title")}
        </Title>
        <ApiError error={sessions.error} />
        {list && list.length === 0 && <EmptyState title={t("sessions.empty")} hint={t("sessions.emptyHint")} />}
        {list && list.length > 0 && (
          <Table.ScrollContainer minWidth={300}>
            <Table striped data-testid="sessions-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("sessions.started")}</Table.Th>
                  <Table.Th visibleFrom="sm">{t("sessions.client")}</Table.Th>
                  <Table.Th>{t("sessions.factors")}</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>{t("members.actions")}</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.map((s) => {
                  const started = date(toDate(s.creationDate));
                  return (
                    <Table.Tr key={s.id}>
                      <Table.Td>
                        <Text size="sm">{started}</Text>
                        {s.expirationDate && (
                          <Text size="xs" c="dimmed">
                            {t("sessions.until", { date: date(toDate(s.expirationDate)) })}
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td visibleFrom="sm">
                        <Text size="sm">{s.userAgent?.description || "—"}</Text>
                        {s.userAgent?.ip && (
                          <Text size="xs" c="dimmed">
                            {s.userAgent.ip}
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td>{factors(s).join(", ") || "—"}</Table.Td>
                      <Table.Td>
                        <Group justify="flex-end">
                          <ConfirmButton
                            size="xs"
                            label={t("sessions.end")}
                            ariaLabel={t("sessions.endOf", { date: started })}
                            title={t("sessions.endTitle")}
                            body={t("sessions.endBody")}
                            confirmLabel={t("sessions.end")}
                            onConfirm={() => end.mutateAsync({ sessionId: s.id })}
                          />
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        <Paging details={sessions.data?.details} page={page} onPage={setPage} />
      </Stack>
    </Card>
  );
}
