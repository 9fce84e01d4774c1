// The audit log: every change with its editor and time, newest first, filtered on the server by organization,
// resource, event type, editor and time, one ListEvents call per page.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useQuery } from "@connectrpc/connect-query";
import { Code, Group, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData } from "@tanstack/react-query";
import { useState } from "react";
import { EventService } from "../../../gen/svc/event/v2/event_service_pb";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { DataTable } from "../table";
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
      <DataTable
        testId="events-table"
        headWhileLoading
        rows={list.data?.result}
        rowKey={(e) => e.id}
        columns={[
          { header: t("events.time"), cell: (e) => <Text size="sm">{date(toDate(e.creationDate))}</Text> },
          { header: t("events.type"), cell: (e) => <Code>{e.type}</Code> },
          {
            header: t("events.resource"),
            visibleFrom: "sm",
            cell: (e) => (
              <Text size="sm">
                {e.aggregateType} {e.aggregateId}
              </Text>
            ),
          },
          { header: t("events.editor"), visibleFrom: "md", cell: (e) => <Text size="sm">{e.editorUserId || t("events.system")}</Text> },
        ]}
        empty={<EmptyState title={t("events.empty")} hint={t("events.emptyHint")} />}
        paging={{ details: list.data?.details, page, onPage: setPage, testId: "events-total" }}
      />
    </>
  );
}
