// Key/value metadata of a user or an organization: the list (values shown as UTF-8 text), a value set (a new key or
// an existing one overwritten) and a key removed after confirmation.
import { Button, Text, Textarea, TextInput } from "@mantine/core";
import { useState } from "react";
import { InlineForm } from "../fields";
import { useI18n } from "../i18n";
import { DataTable, RowActions } from "../table";
import { ApiError, CardSection, ConfirmButton, EmptyState } from "../ui";

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
    <CardSection title={t("meta.title")}>
      <ApiError error={props.error} />
      <DataTable
        testId="metadata-table"
        minWidth={300}
        rows={entries}
        rowKey={(m) => m.key}
        columns={[
          {
            header: t("meta.key"),
            cell: (m) => (
              <Text ff="monospace" size="sm">
                {m.key}
              </Text>
            ),
          },
          { header: t("meta.value"), td: { style: { wordBreak: "break-word" } }, cell: (m) => decoder.decode(m.value) },
        ]}
        actions={
          props.canWrite
            ? (m) => (
                <RowActions gap="xs">
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
                </RowActions>
              )
            : undefined
        }
        empty={<EmptyState title={t("meta.empty")} hint={t(props.canWrite ? "meta.emptyHint" : "meta.emptyHintRead")} />}
      />
      {props.canWrite && (
        <InlineForm
          onSubmit={async () => {
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
          error={error}
        >
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
        </InlineForm>
      )}
    </CardSection>
  );
}
