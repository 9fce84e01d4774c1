// Actions: the instance's targets (endpoints svc calls, each with a signing key shown once at creation or rotation and
// a kind: call, webhook or async), executions (which targets a function calls, in order, and which targets an event
// condition sends its events to) and the deliveries of events from the outbox (filtered on the server, retryable).
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import {
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  Modal,
  MultiSelect,
  NumberInput,
  SegmentedControl,
  Select,
  Stack,
  Tabs,
  Text,
  TextInput,
  Title,
} from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { type Delivery, type EventCondition, type Execution, type Target, TargetKind } from "../../../gen/svc/action/v2/action_pb";
import { ActionService } from "../../../gen/svc/action/v2/action_service_pb";
import { useAccess } from "../access";
import { EnumSelect } from "../fields";
import { useI18n } from "../i18n";
import { pageQuery } from "../paging";
import { useRouter } from "../router";
import { DataTable, RowActions } from "../table";
import { ApiError, ConfirmButton, EmptyState, PageHeader, ShownOnce, useDateFormat } from "../ui";
import { toDate } from "./dates";

const seconds = (t: Target | undefined) => (t?.timeout ? Number(t.timeout.seconds) : 10);

const KINDS: [TargetKind, "actions.kind.call" | "actions.kind.webhook" | "actions.kind.async"][] = [
  [TargetKind.CALL, "actions.kind.call"],
  [TargetKind.WEBHOOK, "actions.kind.webhook"],
  [TargetKind.ASYNC, "actions.kind.async"],
];
const kindKey = (k: TargetKind) => KINDS.find(([v]) => v === k)?.[1] ?? "actions.kind.call";

function KeyOnce({ signingKey }: { signingKey: string }) {
  const { t } = useI18n();
  return <ShownOnce label={t("actions.signingKey")} value={signingKey} note={t("actions.keyOnce")} />;
}

function TargetForm({ target, orgId, onClose }: { target?: Target; orgId?: string; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const create = useMutation(ActionService.method.createTarget, { onSuccess: () => client.invalidateQueries() });
  const update = useMutation(ActionService.method.updateTarget, { onSuccess: () => client.invalidateQueries() });
  const [name, setName] = useState(target?.name ?? "");
  const [endpoint, setEndpoint] = useState(target?.endpoint ?? "");
  const [timeout, setTimeout_] = useState(seconds(target));
  const [interrupt, setInterrupt] = useState(target?.interruptOnError ?? false);
  // An organization's targets get its events only: a webhook unless said otherwise.
  const [kind, setKind] = useState<TargetKind>(target?.kind || (orgId ? TargetKind.WEBHOOK : TargetKind.CALL));
  const [rotate, setRotate] = useState(false);
  const key = create.data?.signingKey || update.data?.signingKey;
  return (
    <Modal
      opened
      onClose={onClose}
      title={target ? t("actions.editTarget", { name: target.name }) : t("actions.newTarget")}
      size="lg"
      closeButtonProps={{ "aria-label": t("action.close") }}
    >
      {key ? (
        <Stack>
          <KeyOnce signingKey={key} />
          <Group justify="flex-end">
            <Button onClick={onClose}>{t("actions.done")}</Button>
          </Group>
        </Stack>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const body = { name, endpoint: endpoint.trim(), timeout: durationFromMs(timeout * 1000), interruptOnError: interrupt, kind };
            if (target) update.mutate({ id: target.id, ...body, rotateSigningKey: rotate }, { onSuccess: (r) => !r.signingKey && onClose() });
            else create.mutate({ ...body, organizationId: orgId ?? "" });
          }}
        >
          <Stack>
            <TextInput label={t("actions.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required data-autofocus />
            <TextInput
              label={t("actions.endpoint")}
              description={t("actions.endpointHint")}
              placeholder="https://hooks.example.com/svc"
              value={endpoint}
              onChange={(e) => setEndpoint(e.currentTarget.value)}
              required
            />
            <EnumSelect label={t("actions.kind")} value={kind} onChange={setKind} options={KINDS} />
            <Text size="xs" c="dimmed" mt={-8}>
              {t(`${kindKey(kind)}Hint` as "actions.kind.callHint")}
            </Text>
            <NumberInput label={t("actions.timeout")} min={1} max={30} value={timeout} onChange={(v) => setTimeout_(Number(v) || 10)} />
            {!orgId && (
              <Checkbox
                label={t("actions.interrupt")}
                description={t("actions.interruptHint")}
                checked={interrupt}
                onChange={(e) => setInterrupt(e.currentTarget.checked)}
              />
            )}
            {target && <Checkbox label={t("actions.rotate")} checked={rotate} onChange={(e) => setRotate(e.currentTarget.checked)} />}
            <ApiError error={create.error ?? update.error} />
            <Group justify="flex-end">
              <Button type="submit" loading={create.isPending || update.isPending}>
                {target ? t("action.save") : t("action.create")}
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Modal>
  );
}

function Targets({ readOnly, orgId }: { readOnly: boolean; orgId?: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<Target | "new">();
  const list = useQuery(ActionService.method.listTargets, { query: pageQuery(page), organizationId: orgId ?? "" });
  const remove = useMutation(ActionService.method.deleteTarget, { onSuccess: () => client.invalidateQueries() });
  const newButton = !readOnly && <Button onClick={() => setEditing("new")}>{t("actions.newTarget")}</Button>;
  return (
    <Stack>
      {editing && <TargetForm target={editing === "new" ? undefined : editing} orgId={orgId} onClose={() => setEditing(undefined)} />}
      <ApiError error={list.error} />
      {list.data?.result.length !== 0 && <Group justify="flex-end">{newButton}</Group>}
      <DataTable
        testId="targets-table"
        headWhileLoading
        rows={list.data?.result}
        rowKey={(x) => x.id}
        columns={[
          { header: t("actions.name"), td: { fw: 500 }, cell: (x) => x.name },
          {
            header: t("actions.endpoint"),
            visibleFrom: "sm",
            cell: (x) => (
              <Text size="sm" ff="monospace" style={{ wordBreak: "break-all" }}>
                {x.endpoint}
              </Text>
            ),
          },
          { header: t("actions.kind"), cell: (x) => <Badge variant="default">{t(kindKey(x.kind))}</Badge> },
          { header: t("actions.timeout"), visibleFrom: "md", cell: (x) => `${seconds(x)} s` },
        ]}
        actions={(x) =>
          !readOnly && (
            <RowActions>
              <Button size="xs" variant="default" onClick={() => setEditing(x)} aria-label={t("actions.editTarget", { name: x.name })}>
                {t("action.edit")}
              </Button>
              <ConfirmButton
                size="xs"
                label={t("action.delete")}
                ariaLabel={t("actions.deleteTarget", { name: x.name })}
                title={t("actions.deleteTarget", { name: x.name })}
                body={t("actions.deleteTargetBody")}
                confirmLabel={t("action.delete")}
                onConfirm={() => remove.mutateAsync({ id: x.id })}
              />
            </RowActions>
          )
        }
        empty={<EmptyState title={t("actions.noTargets")} hint={t(orgId ? "actions.org.noTargetsHint" : "actions.noTargetsHint")} action={newButton} />}
        paging={{ details: list.data?.details, page, onPage: setPage }}
      />
    </Stack>
  );
}

function ExecutionCard({ fn, targetIds, targets, readOnly }: { fn: string; targetIds: string[]; targets: Target[]; readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const set = useMutation(ActionService.method.setExecution, { onSuccess: () => client.invalidateQueries() });
  const [ids, setIds] = useState(targetIds);
  const changed = ids.join() !== targetIds.join();
  return (
    <Card withBorder data-testid={`execution-${fn}`}>
      <Stack gap="xs">
        <Title order={3} size="h5" ff="monospace">
          {fn}
        </Title>
        <Text size="sm" c="dimmed">
          {t(`actions.fn.${fn}` as "actions.fn.preuserinfo")}
        </Text>
        <MultiSelect
          label={t("actions.targetsOf", { fn })}
          placeholder={ids.length === 0 ? t("actions.noExecution") : undefined}
          value={ids}
          onChange={setIds}
          disabled={readOnly}
          data={targets.map((x) => ({ value: x.id, label: x.name }))}
        />
        <ApiError error={set.error} />
        {!readOnly && (
          <Group>
            <Button size="xs" disabled={!changed} loading={set.isPending} onClick={() => set.mutate({ function: fn, targetIds: ids })}>
              {t("action.save")}
            </Button>
            {targetIds.length > 0 && (
              <Button size="xs" variant="default" onClick={() => set.mutate({ function: fn, targetIds: [] }, { onSuccess: () => setIds([]) })}>
                {t("actions.removeExecution")}
              </Button>
            )}
          </Group>
        )}
      </Stack>
    </Card>
  );
}

type ConditionCase = "event" | "group" | "all";

/** An event condition as the API names it: the type, the group as `prefix.*`, or every event. */
function conditionText(c: EventCondition | undefined, all: string): string {
  switch (c?.condition.case) {
    case "event":
      return c.condition.value;
    case "group":
      return c.condition.value.endsWith("*") ? c.condition.value : `${c.condition.value}.*`;
    default:
      return all;
  }
}

function conditionOf(kind: ConditionCase, value: string): EventCondition["condition"] {
  if (kind === "all") return { case: "all", value: true };
  return { case: kind, value: value.trim() };
}

/** The event executions: which targets each event condition's events are delivered to, from the outbox. */
function EventExecutions({ executions, targets, readOnly, orgId }: { executions: Execution[]; targets: Target[]; readOnly: boolean; orgId?: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const set = useMutation(ActionService.method.setExecution, { onSuccess: () => client.invalidateQueries() });
  const [kind, setKind] = useState<ConditionCase>("event");
  const [value, setValue] = useState("");
  const [ids, setIds] = useState<string[]>([]);
  const names = new Map(targets.map((x) => [x.id, x.name]));
  const all = t("actions.event.all");
  return (
    <Card withBorder data-testid="event-executions">
      <Stack gap="xs">
        <Title order={3} size="h5">
          {t("actions.eventExecutions")}
        </Title>
        <Text size="sm" c="dimmed">
          {t(orgId ? "actions.org.eventExecutionsHint" : "actions.eventExecutionsHint")}
        </Text>
        <DataTable
          testId="event-executions-table"
          striped={false}
          rows={executions}
          rowKey={(e) => `${e.organizationId}/${conditionText(e.event, all)}`}
          columns={[
            {
              header: t("actions.event.condition"),
              cell: (e) => (
                <Text size="sm" ff="monospace">
                  {conditionText(e.event, all)}
                </Text>
              ),
            },
            { header: t("actions.targets"), cell: (e) => <Text size="sm">{e.targetIds.map((id) => names.get(id) ?? id).join(" → ")}</Text> },
          ]}
          actions={(e) =>
            !readOnly && (
              <RowActions>
                <ConfirmButton
                  size="xs"
                  label={t("actions.event.stop")}
                  ariaLabel={t("actions.event.remove", { condition: conditionText(e.event, all) })}
                  title={t("actions.event.remove", { condition: conditionText(e.event, all) })}
                  body={t("actions.event.removeBody")}
                  confirmLabel={t("actions.event.stop")}
                  onConfirm={() => set.mutateAsync({ event: e.event, organizationId: e.organizationId, targetIds: [] })}
                />
              </RowActions>
            )
          }
          empty={<Text size="sm">{t("actions.noEventExecutions")}</Text>}
        />
        {!readOnly && (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              set.mutate(
                { event: { condition: conditionOf(kind, value) }, organizationId: orgId ?? "", targetIds: ids },
                {
                  onSuccess: () => {
                    setValue("");
                    setIds([]);
                  },
                },
              );
            }}
          >
            <Stack gap="xs">
              <SegmentedControl
                aria-label={t("actions.event.condition")}
                value={kind}
                onChange={(v) => setKind(v as ConditionCase)}
                data={[
                  { value: "event", label: t("actions.event.one") },
                  { value: "group", label: t("actions.event.group") },
                  { value: "all", label: all },
                ]}
              />
              {kind !== "all" && (
                <TextInput
                  label={kind === "event" ? t("actions.event.type") : t("actions.event.prefix")}
                  placeholder={kind === "event" ? "user.human.added" : "user"}
                  value={value}
                  onChange={(e) => setValue(e.currentTarget.value)}
                  required
                />
              )}
              <MultiSelect
                label={t("actions.event.targets")}
                value={ids}
                onChange={setIds}
                data={targets.map((x) => ({ value: x.id, label: x.name }))}
                required
              />
              <ApiError error={set.error} />
              <Group>
                <Button size="xs" type="submit" disabled={ids.length === 0} loading={set.isPending}>
                  {t("actions.event.save")}
                </Button>
              </Group>
            </Stack>
          </form>
        )}
      </Stack>
    </Card>
  );
}

const STATES = ["pending", "failed", "delivered", "dead"] as const;
// Dark shades under white text: legible (WCAG AA contrast) in light and dark mode.
const stateColor: Record<string, string> = { pending: "gray.7", failed: "orange.9", delivered: "teal.9", dead: "red.9" };

/** The outbox's deliveries, newest first, filtered on the server; a failed or dead one can be tried again at once. */
function Deliveries({ readOnly, orgId }: { readOnly: boolean; orgId?: string }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const [targetId, setTargetId] = useState<string | null>(null);
  const [state, setState] = useState<string | null>(null);
  const [type, setType] = useState("");
  const [eventType] = useDebouncedValue(type.trim(), 300);
  const targets = useQuery(ActionService.method.listTargets, { query: { limit: 100, asc: true }, organizationId: orgId ?? "" });
  const list = useQuery(
    ActionService.method.listDeliveries,
    { query: pageQuery(page, false), targetId: targetId ?? "", state: state ?? "", eventType, organizationId: orgId ?? "" },
    {
      placeholderData: keepPreviousData,
      // While a delivery shown is still on its way, the page follows it.
      refetchInterval: (q) => (q.state.data?.result.some((d) => d.state === "pending" || d.state === "failed") ? 2_000 : false),
    },
  );
  const retry = useMutation(ActionService.method.retryDelivery, { onSuccess: () => client.invalidateQueries() });
  const names = new Map((targets.data?.result ?? []).map((x) => [x.id, x.name]));
  const filtered = (f: () => void) => {
    f();
    setPage(1);
  };
  const canRetry = (d: Delivery) => !readOnly && (d.state === "failed" || d.state === "dead");
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("actions.deliveriesHint")}
      </Text>
      <Group gap="sm" align="flex-end" wrap="wrap">
        <Select
          label={t("actions.delivery.target")}
          value={targetId}
          onChange={(v) => filtered(() => setTargetId(v))}
          data={(targets.data?.result ?? []).map((x) => ({ value: x.id, label: x.name }))}
          clearable
          style={{ flex: "1 1 180px" }}
        />
        <Select
          label={t("actions.delivery.state")}
          value={state}
          onChange={(v) => filtered(() => setState(v))}
          data={STATES.map((s) => ({ value: s, label: t(`actions.delivery.${s}`) }))}
          clearable
          style={{ flex: "1 1 140px" }}
        />
        <TextInput
          label={t("actions.event.type")}
          placeholder="user.human.added"
          value={type}
          onChange={(e) => {
            const v = e.currentTarget.value;
            filtered(() => setType(v));
          }}
          style={{ flex: "1 1 180px" }}
        />
      </Group>
      <ApiError error={list.error ?? retry.error} />
      <DataTable
        testId="deliveries-table"
        headWhileLoading
        rows={list.data?.result}
        rowKey={(d) => d.id}
        rowTestId={(d) => `delivery-${d.id}`}
        columns={[
          { header: t("events.time"), cell: (d) => <Text size="sm">{date(toDate(d.creationDate))}</Text> },
          {
            header: t("actions.event.type"),
            cell: (d) => (
              <Text size="sm" ff="monospace">
                {d.eventType}
              </Text>
            ),
          },
          { header: t("actions.delivery.target"), visibleFrom: "sm", cell: (d) => <Text size="sm">{names.get(d.targetId) ?? d.targetId}</Text> },
          {
            header: t("actions.delivery.state"),
            cell: (d) => (
              <>
                <Badge color={stateColor[d.state] ?? "gray.7"} variant="filled" autoContrast>
                  {STATES.includes(d.state as (typeof STATES)[number]) ? t(`actions.delivery.${d.state as (typeof STATES)[number]}`) : d.state}
                </Badge>
                {d.state === "failed" && d.nextAttemptDate && (
                  <Text size="xs" c="dimmed">
                    {t("actions.delivery.next", { time: date(toDate(d.nextAttemptDate)) })}
                  </Text>
                )}
              </>
            ),
          },
          {
            header: t("actions.delivery.attempts"),
            visibleFrom: "md",
            cell: (d) => (
              <>
                {d.attempts} / {d.maxAttempts}
              </>
            ),
          },
          {
            header: t("actions.delivery.lastError"),
            visibleFrom: "md",
            cell: (d) => (
              <Text size="xs" style={{ wordBreak: "break-word" }}>
                {d.lastError}
              </Text>
            ),
          },
        ]}
        actions={(d) =>
          canRetry(d) && (
            <Button
              size="xs"
              variant="default"
              loading={retry.isPending && retry.variables?.id === d.id}
              onClick={() => retry.mutate({ id: d.id })}
              aria-label={t("actions.delivery.retryOf", { type: d.eventType })}
            >
              {t("actions.delivery.retry")}
            </Button>
          )
        }
        empty={<EmptyState title={t("actions.noDeliveries")} hint={t("actions.noDeliveriesHint")} />}
        paging={{ details: list.data?.details, page, onPage: setPage, testId: "deliveries-total" }}
      />
    </Stack>
  );
}

function Executions({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const functions = useQuery(ActionService.method.listExecutionFunctions, {});
  const executions = useQuery(ActionService.method.listExecutions, {});
  // The executions name at most 10 targets each; the pickers offer the first 100 targets by name.
  const targets = useQuery(ActionService.method.listTargets, { query: { limit: 100, asc: true } });
  const error = functions.error ?? executions.error ?? targets.error;
  if (!functions.data || !executions.data || !targets.data) return <ApiError error={error} />;
  const byFn = new Map(executions.data.result.filter((e) => e.function).map((e) => [e.function, e.targetIds]));
  // The instance's own event executions; an organization's are on its page.
  const events = executions.data.result.filter((e) => e.event && !e.organizationId);
  const instanceTargets = targets.data.result.filter((x) => !x.organizationId);
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("actions.executionsHint")}
      </Text>
      {targets.data.result.length === 0 && <EmptyState title={t("actions.noTargets")} hint={t("actions.executionsNeedTargets")} />}
      {functions.data.functions.map((fn) => (
        <ExecutionCard key={`${fn}-${executions.dataUpdatedAt}`} fn={fn} targetIds={byFn.get(fn) ?? []} targets={instanceTargets} readOnly={readOnly} />
      ))}
      {instanceTargets.length > 0 && <EventExecutions executions={events} targets={instanceTargets} readOnly={readOnly} />}
    </Stack>
  );
}

export default function Actions() {
  const { t } = useI18n();
  const { search, navigate } = useRouter();
  const readOnly = !useAccess().data?.instanceWrite;
  const tab = search.get("tab") ?? "targets";
  return (
    <>
      <PageHeader title={t("actions.title")} />
      <Text c="dimmed" size="sm" mb="md">
        {t("actions.hint")}
      </Text>
      <Tabs value={tab} onChange={(v) => navigate(`/actions${v && v !== "targets" ? `?tab=${v}` : ""}`, { replace: true })} keepMounted={false}>
        <Tabs.List mb="md">
          <Tabs.Tab value="targets">{t("actions.targets")}</Tabs.Tab>
          <Tabs.Tab value="executions">{t("actions.executions")}</Tabs.Tab>
          <Tabs.Tab value="deliveries">{t("actions.deliveries")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="targets">
          <Targets readOnly={readOnly} />
        </Tabs.Panel>
        <Tabs.Panel value="executions">
          <Executions readOnly={readOnly} />
        </Tabs.Panel>
        <Tabs.Panel value="deliveries">
          <Deliveries readOnly={readOnly} />
        </Tabs.Panel>
      </Tabs>
    </>
  );
}

/** An organization's page: its own targets, the event executions of its events and their deliveries (its owners'). */
export function OrgActions({ orgId, readOnly }: { orgId: string; readOnly: boolean }) {
  const { t } = useI18n();
  const executions = useQuery(ActionService.method.listExecutions, { organizationId: orgId });
  const targets = useQuery(ActionService.method.listTargets, { query: { limit: 100, asc: true }, organizationId: orgId });
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("actions.org.hint")}
      </Text>
      <Title order={2} size="h4">
        {t("actions.targets")}
      </Title>
      <Targets readOnly={readOnly} orgId={orgId} />
      <ApiError error={executions.error ?? targets.error} />
      {executions.data && targets.data && targets.data.result.length > 0 && (
        <EventExecutions
          key={executions.dataUpdatedAt}
          executions={executions.data.result.filter((e) => e.event)}
          targets={targets.data.result}
          readOnly={readOnly}
          orgId={orgId}
        />
      )}
      <Title order={2} size="h4">
        {t("actions.deliveries")}
      </Title>
      <Deliveries readOnly={readOnly} orgId={orgId} />
    </Stack>
  );
}
