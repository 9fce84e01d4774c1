// A user's live sessions (instance administrators see everyone's; others only their own, so the user page offers
// this tab to them for themselves only): when each began, from where, which factors it checked; ending one ends the
// tokens issued from it.
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Text } from "@mantine/core";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Session, SessionFieldName } from "../../../gen/svc/session/v2/session_pb";
import { SessionService } from "../../../gen/svc/session/v2/session_service_pb";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { DataTable, RowActions } from "../table";
import { ApiError, CardSection, ConfirmButton, EmptyState, useDateFormat } from "../ui";
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
  return (
    <CardSection title={t("sessions.title")}>
      <ApiError error={sessions.error} />
      <DataTable
        testId="sessions-table"
        minWidth={300}
        rows={sessions.data?.sessions}
        rowKey={(s) => s.id}
        columns={[
          {
            header: t("sessions.started"),
            cell: (s) => (
              <>
                <Text size="sm">{date(toDate(s.creationDate))}</Text>
                {s.expirationDate && (
                  <Text size="xs" c="dimmed">
                    {t("sessions.until", { date: date(toDate(s.expirationDate)) })}
                  </Text>
                )}
              </>
            ),
          },
          {
            header: t("sessions.client"),
            visibleFrom: "sm",
            cell: (s) => (
              <>
                <Text size="sm">{s.userAgent?.description || "—"}</Text>
                {s.userAgent?.ip && (
                  <Text size="xs" c="dimmed">
                    {s.userAgent.ip}
                  </Text>
                )}
              </>
            ),
          },
          { header: t("sessions.factors"), cell: (s) => factors(s).join(", ") || "—" },
        ]}
        actions={(s) => (
          <RowActions>
            <ConfirmButton
              size="xs"
              label={t("sessions.end")}
              ariaLabel={t("sessions.endOf", { date: date(toDate(s.creationDate)) })}
              title={t("sessions.endTitle")}
              body={t("sessions.endBody")}
              confirmLabel={t("sessions.end")}
              onConfirm={() => end.mutateAsync({ sessionId: s.id })}
            />
          </RowActions>
        )}
        empty={<EmptyState title={t("sessions.empty")} hint={t("sessions.emptyHint")} />}
        paging={{ details: sessions.data?.details, page, onPage: setPage }}
      />
    </CardSection>
  );
}
