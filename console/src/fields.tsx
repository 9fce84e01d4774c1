// Small pieces that several pages' forms and tables repeat: a select over a proto enum, a row's role badges, its
// "inactive" badge, and the deactivate/reactivate toggle.
import { Badge, Button, Group, Select } from "@mantine/core";
import { type MessageKey, useI18n } from "./i18n";

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
