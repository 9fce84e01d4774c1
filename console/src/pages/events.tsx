// The audit log: every change with its editor and time, newest first, filtered on the server by organization,
// resource, event type, editor and time, one ListEvents call per page.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useQuery } from "@connectrpc/connect-query";
import { Code, Group, Table, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData } from "@tanstack/react-query";
import { useState } from "react";
import { EventService } from "../../../gen/svc/event/v2/event_service_pb";
import { useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";
import { toDate } from "./dates";
import { OrgSelect } from "./org-select";

export default function Events() {
  const { t } = useI18n();
  const date = useDateFormat();
  const [page, setPage] = useState(1);
  const [orgId, setOrgId] = useState<string | null>(null);
  const [f, setF] = useState({ type: "", aggregateType: "", aggregateId: "", editor: "", from: "", to: "" });
  const [filters] = useDebouncedValue(f, 300);
  const set = (k: keyof typeof f) => (e: React.ChangeEvent<HTMLInputElement>) => {
    setF({ ...f, [k]: e.currentTarget.value });
    setPage(1);
  };
  const time = (v: string) => (v && !Number.isNaN(Date.parse(v)) ? timestampFromDate(new Date(v)) : undefined);
  const from = time(filters.from);
  const to = time(filters.to);
  const list = useQuery(
    EventService.method.listEvents,
    {
      query: pageQuery(page, false),
      organizationId: orgId ?? "",
      aggregateType: filters.aggregateType.trim(),
      aggregateId: filters.aggregateId.trim(),
      eventTypes: filters.type.trim() ? [filters.type.trim()] : [],
      editorUserId: filters.editor.trim(),
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
    },
    { placeholderData: keepPreviousData },
  );
  return (
    <>
      <PageHeader title={t("events.title")} />
      <Group mb="md" gap="sm" align="flex-end" wrap="wrap">
        <div style={{ flex: "1 1 180px" }}>
          <OrgSelect
            label={t("users.org")}
            value={orgId}
            onChange={(v) => {
              setOrgId(v);
              setPage(1);
            }}
            clearable
          />
        </div>
        <TextInput label={t("events.type")} placeholder="user.human.added" value={f.type} onChange={set("type")} style={{ flex: "1 1 180px" }} />
        <TextInput
          label={t("events.resource")}
          placeholder="user, project…"
          value={f.aggregateType}
          onChange={set("aggregateType")}
          style={{ flex: "1 1 140px" }}
        />
        <TextInput label={t("events.resourceId")} value={f.aggregateId} onChange={set("aggregateId")} style={{ flex: "1 1 140px" }} />
        <TextInput label={t("events.editor")} value={f.editor} onChange={set("editor")} style={{ flex: "1 1 140px" }} />
        <TextInput label={t("events.from")} type="datetime-local" value={f.from} onChange={set("from")} style={{ flex: "1 1 180px" }} />
        <TextInput label={t("events.to")} type="datetime-local" value={f.to} onChange={set("to")} style={{ flex: "1 1 180px" }} />
      </Group>
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        <EmptyState title={t("events.empty")} hint={t("events.emptyHint")} />
      ) : (
        <Table.ScrollContainer minWidth={320}>
          <Table striped data-testid="events-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("events.time")}</Table.Th>
                <Table.Th>{t("events.type")}</Table.Th>
                <Table.Th visibleFrom="sm">{t("events.resource")}</Table.Th>
                <Table.Th visibleFrom="md">{t("events.editor")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.result.map((e) => (
                <Table.Tr key={e.id}>
                  <Table.Td>
                    <Text size="sm">{date(toDate(e.creationDate))}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Code>{e.type}</Code>
                  </Table.Td>
                  <Table.Td visibleFrom="sm">
                    <Text size="sm">
                      {e.aggregateType} {e.aggregateId}
                    </Text>
                  </Table.Td>
                  <Table.Td visibleFrom="md">
                    <Text size="sm">{e.editorUserId || t("events.system")}</Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} testId="events-total" />
    </>
  );
}
