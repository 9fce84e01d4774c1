// Actions: the instance's targets (endpoints svc calls, each with a signing key shown once at creation or rotation)
// and executions (which targets a function calls, in order).
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { useMutation, useQuery } from "@connectrpc/connect-query";
import {
  Alert,
  Button,
  Card,
  Checkbox,
  Group,
  Modal,
  MultiSelect,
  NumberInput,
  Stack,
  Table,
  Tabs,
  Text,
  TextInput,
  Title,
  VisuallyHidden,
} from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Target } from "../../../gen/svc/action/v2/action_pb";
import { ActionService } from "../../../gen/svc/action/v2/action_service_pb";
import { useAccess } from "../access";
import { useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { useRouter } from "../router";
import { ApiError, ConfirmButton, EmptyState, PageHeader, SecretValue } from "../ui";

const seconds = (t: Target | undefined) => (t?.timeout ? Number(t.timeout.seconds) : 10);

function KeyOnce({ signingKey }: { signingKey: string }) {
  const { t } = useI18n();
  return (
    <>
      <SecretValue label={t("actions.signingKey")} value={signingKey} />
      <Alert color="orange" title={t("apps.secretOnceTitle")}>
        {t("actions.keyOnce")}
      </Alert>
    </>
  );
}

function TargetForm({ target, onClose }: { target?: Target; onClose(): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const create = useMutation(ActionService.method.createTarget, { onSuccess: () => client.invalidateQueries() });
  const update = useMutation(ActionService.method.updateTarget, { onSuccess: () => client.invalidateQueries() });
  const [name, setName] = useState(target?.name ?? "");
  const [endpoint, setEndpoint] = useState(target?.endpoint ?? "");
  const [timeout, setTimeout_] = useState(seconds(target));
  const [interrupt, setInterrupt] = useState(target?.interruptOnError ?? false);
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
            const body = { name, endpoint: endpoint.trim(), timeout: durationFromMs(timeout * 1000), interruptOnError: interrupt };
            if (target) update.mutate({ id: target.id, ...body, rotateSigningKey: rotate }, { onSuccess: (r) => !r.signingKey && onClose() });
            else create.mutate(body);
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
            <NumberInput label={t("actions.timeout")} min={1} max={30} value={timeout} onChange={(v) => setTimeout_(Number(v) || 10)} />
            <Checkbox
              label={t("actions.interrupt")}
              description={t("actions.interruptHint")}
              checked={interrupt}
              onChange={(e) => setInterrupt(e.currentTarget.checked)}
            />
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

function Targets({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState<Target | "new">();
  const list = useQuery(ActionService.method.listTargets, { query: pageQuery(page) });
  const remove = useMutation(ActionService.method.deleteTarget, { onSuccess: () => client.invalidateQueries() });
  const newButton = !readOnly && <Button onClick={() => setEditing("new")}>{t("actions.newTarget")}</Button>;
  return (
    <Stack>
      {editing && <TargetForm target={editing === "new" ? undefined : editing} onClose={() => setEditing(undefined)} />}
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        <EmptyState title={t("actions.noTargets")} hint={t("actions.noTargetsHint")} action={newButton} />
      ) : (
        <>
          <Group justify="flex-end">{newButton}</Group>
          <Table.ScrollContainer minWidth={320}>
            <Table striped data-testid="targets-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("actions.name")}</Table.Th>
                  <Table.Th visibleFrom="sm">{t("actions.endpoint")}</Table.Th>
                  <Table.Th visibleFrom="md">{t("actions.timeout")}</Table.Th>
                  <Table.Th>
                    <VisuallyHidden>{t("list.actions")}</VisuallyHidden>
                  </Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.data?.result.map((x) => (
                  <Table.Tr key={x.id}>
                    <Table.Td fw={500}>{x.name}</Table.Td>
                    <Table.Td visibleFrom="sm">
                      <Text size="sm" ff="monospace" style={{ wordBreak: "break-all" }}>
                        {x.endpoint}
                      </Text>
                    </Table.Td>
                    <Table.Td visibleFrom="md">{seconds(x)} s</Table.Td>
                    <Table.Td>
                      {!readOnly && (
                        <Group gap={4} wrap="nowrap" justify="flex-end">
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
                        </Group>
                      )}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} />
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

function Executions({ readOnly }: { readOnly: boolean }) {
  const { t } = useI18n();
  const functions = useQuery(ActionService.method.listExecutionFunctions, {});
  const executions = useQuery(ActionService.method.listExecutions, {});
  // The executions name at most 10 targets each; the pickers offer the first 100 targets by name.
  const targets = useQuery(ActionService.method.listTargets, { query: { limit: 100, asc: true } });
  const error = functions.error ?? executions.error ?? targets.error;
  if (!functions.data || !executions.data || !targets.data) return <ApiError error={error} />;
  const byFn = new Map(executions.data.result.map((e) => [e.function, e.targetIds]));
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("actions.executionsHint")}
      </Text>
      {targets.data.result.length === 0 && <EmptyState title={t("actions.noTargets")} hint={t("actions.executionsNeedTargets")} />}
      {functions.data.functions.map((fn) => (
        <ExecutionCard key={`${fn}-${executions.dataUpdatedAt}`} fn={fn} targetIds={byFn.get(fn) ?? []} targets={targets.data.result} readOnly={readOnly} />
      ))}
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
        </Tabs.List>
        <Tabs.Panel value="targets">
          <Targets readOnly={readOnly} />
        </Tabs.Panel>
        <Tabs.Panel value="executions">
          <Executions readOnly={readOnly} />
        </Tabs.Panel>
      </Tabs>
    </>
  );
}
