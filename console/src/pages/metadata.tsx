// Key/value metadata of a user or an organization: the list (values shown as UTF-8 text), a value set (a new key or
// an existing one overwritten) and a key removed after confirmation.
import { Button, Card, Group, Stack, Table, Text, Textarea, TextInput, Title, VisuallyHidden } from "@mantine/core";
import { useState } from "react";
import { useI18n } from "../i18n";
import { ApiError, ConfirmButton, EmptyState } from "../ui";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export interface MetadataRow {
  key: string;
  value: Uint8Array;
}

export function MetadataCard(props: {
  entries: MetadataRow[] | undefined;
  error: unknown;
  canWrite: boolean;
  onSet(key: string, value: Uint8Array): Promise<unknown>;
  onRemove(key: string): Promise<unknown>;
}) {
  const { t } = useI18n();
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const { entries } = props;
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={2} size="h4">
          {t("meta.title")}
        </Title>
        <ApiError error={props.error} />
        {entries && entries.length === 0 && <EmptyState title={t("meta.empty")} hint={t(props.canWrite ? "meta.emptyHint" : "meta.emptyHintRead")} />}
        {entries && entries.length > 0 && (
          <Table.ScrollContainer minWidth={300}>
            <Table striped data-testid="metadata-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("meta.key")}</Table.Th>
                  <Table.Th>{t("meta.value")}</Table.Th>
                  {props.canWrite && (
                    <Table.Th>
                      <VisuallyHidden>{t("members.actions")}</VisuallyHidden>
                    </Table.Th>
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {entries.map((m) => (
                  <Table.Tr key={m.key}>
                    <Table.Td>
                      <Text ff="monospace" size="sm">
                        {m.key}
                      </Text>
                    </Table.Td>
                    <Table.Td style={{ wordBreak: "break-word" }}>{decoder.decode(m.value)}</Table.Td>
                    {props.canWrite && (
                      <Table.Td>
                        <Group justify="flex-end" wrap="nowrap" gap="xs">
                          <Button
                            size="xs"
                            variant="default"
                            aria-label={t("meta.editKey", { key: m.key })}
                            onClick={() => {
                              setKey(m.key);
                              setValue(decoder.decode(m.value));
                            }}
                          >
                            {t("meta.edit")}
                          </Button>
                          <ConfirmButton
                            size="xs"
                            label={t("action.delete")}
                            ariaLabel={t("meta.removeKey", { key: m.key })}
                            title={t("meta.removeTitle")}
                            body={t("meta.removeBody", { key: m.key })}
                            confirmLabel={t("action.delete")}
                            onConfirm={() => props.onRemove(m.key)}
                          />
                        </Group>
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        {props.canWrite && (
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              setBusy(true);
              setError(undefined);
              try {
                await props.onSet(key.trim(), encoder.encode(value));
                setKey("");
                setValue("");
              } catch (err) {
                setError(err);
              } finally {
                setBusy(false);
              }
            }}
          >
            <Group align="flex-end" wrap="wrap">
              <TextInput label={t("meta.key")} value={key} onChange={(e) => setKey(e.currentTarget.value)} required style={{ flex: "1 1 160px" }} />
              <Textarea
                label={t("meta.value")}
                value={value}
                onChange={(e) => setValue(e.currentTarget.value)}
                autosize
                minRows={1}
                maxRows={6}
                required
                style={{ flex: "2 1 220px" }}
              />
              <Button type="submit" loading={busy}>
                {t("meta.set")}
              </Button>
            </Group>
            <ApiError error={error} />
          </form>
        )}
      </Stack>
    </Card>
  );
}
