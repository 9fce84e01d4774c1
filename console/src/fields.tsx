// Small pieces that several pages' forms and tables repeat: a control bound to a field of the object a form edits, a
// select over a proto enum, a form's save row, a one-row form, a dialog holding a form, the SAML metadata field, a
// row's role badges, its "inactive" badge, and the deactivate/reactivate toggle.
import { Badge, Button, Group, Modal, Select, Stack, Textarea, Title } from "@mantine/core";
import type { ChangeEvent, ReactNode } from "react";
import { type MessageKey, useI18n } from "./i18n";
import { ApiError } from "./ui";

type KeysOf<T, V> = { [K in keyof T]-?: T[K] extends V ? K : never }[keyof T];

/**
 * Binds controls to the fields of the object a form edits (its state `c`, replaced whole by `setC`): spread
 * `checked(k)` on a checkbox or switch, `text(k)` on a text input or textarea, `value(k)` on an EnumSelect.
 */
export function bind<T extends object>(c: T, setC: (c: T) => void) {
  return {
    checked: (k: KeysOf<T, boolean>) => ({
      checked: c[k] as boolean,
      onChange: (e: ChangeEvent<HTMLInputElement>) => setC({ ...c, [k]: e.currentTarget.checked }),
    }),
    text: (k: KeysOf<T, string>) => ({
      value: c[k] as string,
      onChange: (e: ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => setC({ ...c, [k]: e.currentTarget.value }),
    }),
    value: <K extends KeysOf<T, number>>(k: K) => ({ value: c[k], onChange: (v: T[K]) => setC({ ...c, [k]: v }) }),
  };
}

/**
 * A form's end: the API's message where a call failed, then, for those who may write, the save button (a submit
 * button without `onSave`), a cancel (or back) button before it with `onCancel`, and what stands beside it (a reset, a
 * "saved" status).
 */
export function SaveRow(props: {
  error?: unknown;
  canWrite?: boolean;
  saving?: boolean;
  disabled?: boolean;
  onSave?(): void;
  label?: string;
  onCancel?(): void;
  cancelLabel?: string;
  justify?: "flex-end";
  children?: ReactNode;
}) {
  const { t } = useI18n();
  return (
    <>
      <ApiError error={props.error} />
      {(props.canWrite ?? true) && (
        <Group justify={props.justify}>
          {props.onCancel && (
            <Button variant="default" onClick={props.onCancel}>
              {props.cancelLabel ?? t("action.cancel")}
            </Button>
          )}
          <Button type={props.onSave ? "button" : "submit"} loading={props.saving} disabled={props.disabled} onClick={props.onSave}>
            {props.label ?? t("action.save")}
          </Button>
          {props.children}
        </Group>
      )}
    </>
  );
}

/** A form on one row that wraps (its fields, then its button), under an optional heading; the API's message below. */
export function InlineForm(props: { onSubmit(): void; error: unknown; title?: string; children: ReactNode }) {
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit();
      }}
    >
      {props.title && (
        <Title order={3} size="h5" mb="xs">
          {props.title}
        </Title>
      )}
      <Group align="flex-end" wrap="wrap">
        {props.children}
      </Group>
      <ApiError error={props.error} />
    </form>
  );
}

/** A dialog holding a form: its fields, the API's message, then (right-aligned) cancel if asked for and submit. */
export function FormDialog(props: {
  opened: boolean;
  onClose(): void;
  title: string;
  /** Names the dialog's close button ("Close"). */
  labelClose?: boolean;
  onSubmit(): void;
  error: unknown;
  saving: boolean;
  disabled?: boolean;
  /** The submit button's label ("Save" unless said). */
  label?: string;
  withCancel?: boolean;
  children: ReactNode;
}) {
  const { t } = useI18n();
  return (
    <Modal
      opened={props.opened}
      onClose={props.onClose}
      title={props.title}
      closeButtonProps={props.labelClose ? { "aria-label": t("action.close") } : undefined}
    >
      <form
        onSubmit={(e) => {
          e.preventDefault();
          props.onSubmit();
        }}
      >
        <Stack>
          {props.children}
          <SaveRow
            error={props.error}
            saving={props.saving}
            disabled={props.disabled}
            label={props.label}
            onCancel={props.withCancel ? props.onClose : undefined}
            justify="flex-end"
          />
        </Stack>
      </form>
    </Modal>
  );
}

/** A required select over some of a proto enum's values, each labelled from the catalogue. */
export function EnumSelect<E extends number>(props: { label: string; value: E; onChange(value: E): void; options: [E, MessageKey][] }) {
  const { t } = useI18n();
  return (
    <Select
      label={props.label}
      value={String(props.value)}
      onChange={(v) => props.onChange(Number(v) as E)}
      allowDeselect={false}
      data={props.options.map(([v, k]) => ({ value: String(v), label: t(k) }))}
    />
  );
}

/** A SAML metadata document pasted in: monospace, growing to twelve rows. */
export function MetadataXmlInput(props: { value: string; onChange(v: string): void; required?: boolean }) {
  const { t } = useI18n();
  return (
    <Textarea
      label={t("apps.metadataXml")}
      value={props.value}
      onChange={(e) => props.onChange(e.currentTarget.value)}
      autosize
      minRows={4}
      maxRows={12}
      required={props.required}
      styles={{ input: { fontFamily: "monospace", fontSize: 12 } }}
    />
  );
}

/** The roles a member or a grant holds, as badges. */
export function RoleBadges({ roles }: { roles: readonly string[] }) {
  return (
    <Group gap={4}>
      {roles.map((r) => (
        <Badge key={r} variant="default">
          {r}
        </Badge>
      ))}
    </Group>
  );
}

/** The badge beside a row's name when the row is inactive. */
export function InactiveBadge({ inactive }: { inactive: boolean }) {
  const { t } = useI18n();
  if (!inactive) return null;
  return (
    <Badge ml="xs" variant="default">
      {t("state.inactive")}
    </Badge>
  );
}

/** Deactivate an active row, reactivate an inactive one; `name` says which row for screen readers. */
export function ActiveToggle(props: { inactive: boolean; name: string; onToggle(): void }) {
  const { t } = useI18n();
  return (
    <Button
      size="xs"
      variant="default"
      onClick={props.onToggle}
      aria-label={t(props.inactive ? "grants.reactivateFor" : "grants.deactivateFor", { name: props.name })}
    >
      {t(props.inactive ? "action.reactivate" : "action.deactivate")}
    </Button>
  );
}
