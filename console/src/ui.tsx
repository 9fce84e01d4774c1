// Pieces every page uses: the page header, the API's message where a call failed, empty states, confirmation, copy,
// a secret shown once, a titled card.
import { Alert, Button, Card, CopyButton, Group, Modal, Stack, Text, TextInput, Title, Tooltip } from "@mantine/core";
import { type ReactNode, useState } from "react";
import { apiMessage } from "./api-message";
import { type MessageKey, useI18n } from "./i18n";
import { useLink } from "./router";

export function PageHeader({ title, actions, back }: { title: string; actions?: ReactNode; back?: { to: string; label: string } }) {
  return (
    <Stack gap={4} mb="md">
      {back && <BackLink to={back.to} label={back.label} />}
      <Group justify="space-between" wrap="wrap" gap="sm">
        <Title order={1} size="h2">
          {title}
        </Title>
        {actions && <Group gap="xs">{actions}</Group>}
      </Group>
    </Stack>
  );
}

function BackLink({ to, label }: { to: string; label: string }) {
  const link = useLink(to);
  return (
    <Text component="a" size="sm" c="dimmed" {...link}>
      <span aria-hidden="true">← </span>
      {label}
    </Text>
  );
}

/** The API's own message, where the call was made. */
export function ApiError({ error, title }: { error: unknown; title?: string }) {
  const { t } = useI18n();
  if (!error) return null;
  return (
    <Alert color="red" title={title ?? t("error.title")} role="alert" mb="md">
      {apiMessage(error)}
    </Alert>
  );
}

/** What a list shows when it has nothing, saying what to do next. */
export function EmptyState({ title, hint, action }: { title: string; hint: string; action?: ReactNode }) {
  return (
    <Stack align="center" gap="xs" py="xl" ta="center" data-testid="empty-state">
      <Title order={2} size="h4">
        {title}
      </Title>
      <Text c="dimmed" maw={420}>
        {hint}
      </Text>
      {action}
    </Stack>
  );
}

const DANGER_TEXT = "light-dark(var(--mantine-color-red-9), var(--mantine-color-red-3))";

/** A destructive action behind a dialog; with `typeToConfirm` the user types the name first. */
export function ConfirmButton(props: {
  label: string;
  title: string;
  body: string;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  typeToConfirm?: string;
  color?: string;
  /** A smaller button (in a table row), and a name that says which row it acts on. */
  size?: "xs" | "sm";
  ariaLabel?: string;
}) {
  const { t } = useI18n();
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const close = () => {
    setOpen(false);
    setTyped("");
    setError(undefined);
  };
  return (
    <>
      <Button
        color={props.color ?? "red.9"}
        variant="outline"
        size={props.size}
        aria-label={props.ariaLabel}
        onClick={() => setOpen(true)}
        // red.9 keeps 4.5:1 on a light background; on a dark one a light red does.
        style={props.color ? undefined : { "--button-color": DANGER_TEXT, "--button-bd": `1px solid ${DANGER_TEXT}` }}
      >
        {props.label}
      </Button>
      <Modal opened={open} onClose={close} title={props.title} closeButtonProps={{ "aria-label": t("action.close") }}>
        <Stack>
          <Text>{props.body}</Text>
          {props.typeToConfirm !== undefined && (
            <TextInput
              label={t("confirm.type", { name: props.typeToConfirm })}
              value={typed}
              onChange={(e) => setTyped(e.currentTarget.value)}
              data-autofocus
            />
          )}
          <ApiError error={error} />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              {t("action.cancel")}
            </Button>
            <Button
              color={props.color ?? "red.9"}
              loading={busy}
              disabled={props.typeToConfirm !== undefined && typed !== props.typeToConfirm}
              onClick={async () => {
                setBusy(true);
                try {
                  await props.onConfirm();
                  close();
                } catch (err) {
                  setError(err);
                } finally {
                  setBusy(false);
                }
              }}
            >
              {props.confirmLabel}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

/** A value shown once (a secret, a token) with a copy button. */
export function SecretValue({ label, value }: { label: string; value: string }) {
  const { t } = useI18n();
  return (
    <Group gap="xs" wrap="nowrap" align="flex-end">
      <TextInput label={label} value={value} readOnly style={{ flex: 1 }} styles={{ input: { fontFamily: "monospace" } }} />
      <CopyButton value={value}>
        {({ copied, copy }) => (
          <Tooltip label={copied ? t("action.copied") : t("action.copy")}>
            <Button variant={copied ? "filled" : "default"} onClick={copy}>
              {copied ? t("action.copied") : t("action.copy")}
            </Button>
          </Tooltip>
        )}
      </CopyButton>
    </Group>
  );
}

/** A secret shown once (a client secret, a token): the value to copy and the warning that it will not be shown again. */
export function ShownOnce({ label, value, note }: { label: string; value: string; note: string }) {
  const { t } = useI18n();
  return (
    <>
      <SecretValue label={label} value={value} />
      <Alert color="orange" title={t("apps.secretOnceTitle")}>
        {note}
      </Alert>
    </>
  );
}

/** A bordered card under its heading: a section of a settings page or a form. */
export function TitledCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="sm">
        {title}
      </Title>
      {children}
    </Card>
  );
}

/** A bordered card of a detail page: its heading, then its content one piece under another. */
export function CardSection({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Card withBorder>
      <Stack gap="sm">
        <Title order={2} size="h4">
          {title}
        </Title>
        {children}
      </Stack>
    </Card>
  );
}

export function useDateFormat() {
  const { lang } = useI18n();
  return (d: Date | undefined) => (d ? new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" }).format(d) : "");
}

export type { MessageKey };
