// The list tables pages show: a head, one row a record, an empty state in its place when there is nothing, an
// optional last column of the row's buttons (under a header only screen readers read) and paging underneath.
import { Anchor, Group, type GroupProps, type MantineBreakpoint, Table, type TableTdProps, Text, VisuallyHidden } from "@mantine/core";
import type { ReactNode } from "react";
import { useI18n } from "./i18n";
import { Paging } from "./paging";
import { useLink } from "./router";

export interface Column<T> {
  header: string;
  cell(row: T): ReactNode;
  /** A secondary column, shown from this width on. */
  visibleFrom?: MantineBreakpoint;
  /** More of the cell's own properties (a weight, a style). */
  td?: Omit<TableTdProps, "children" | "visibleFrom">;
}

export function DataTable<T>(props: {
  testId: string;
  /** Undefined while the first answer is on its way. */
  rows: readonly T[] | undefined;
  rowKey(row: T): string;
  /** A column left out is `false` (one shown to some readers only). */
  columns: (Column<NoInfer<T>> | false | undefined)[];
  /** The row's buttons; without it the table has no actions column. */
  actions?: (row: T) => ReactNode;
  /** What screen readers read as the actions column's header ("Actions" unless said). */
  actionsHeader?: string;
  /** What stands in the table's place when `rows` is empty. */
  empty?: ReactNode;
  /** Show the head (and no rows) while the first answer is on its way, instead of nothing. */
  headWhileLoading?: boolean;
  striped?: boolean;
  highlightOnHover?: boolean;
  /** Scroll sideways under `minWidth` (the default); `false` for a narrow table in a card. */
  scroll?: boolean;
  minWidth?: number;
  busy?: boolean;
  rowTestId?(row: T): string;
  paging?: Parameters<typeof Paging>[0];
}) {
  const { t } = useI18n();
  const { rows, actions } = props;
  const columns = props.columns.filter((c): c is Column<T> => !!c);
  const table = (
    <Table striped={props.striped ?? true} highlightOnHover={props.highlightOnHover} aria-busy={props.busy} data-testid={props.testId}>
      <Table.Thead>
        <Table.Tr>
          {columns.map((c) => (
            <Table.Th key={c.header} visibleFrom={c.visibleFrom}>
              {c.header}
            </Table.Th>
          ))}
          {actions && (
            <Table.Th>
              <VisuallyHidden>{props.actionsHeader ?? t("list.actions")}</VisuallyHidden>
            </Table.Th>
          )}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows?.map((row) => (
          <Table.Tr key={props.rowKey(row)} data-testid={props.rowTestId?.(row)}>
            {columns.map((c) => (
              <Table.Td key={c.header} visibleFrom={c.visibleFrom} {...c.td}>
                {c.cell(row)}
              </Table.Td>
            ))}
            {actions && <Table.Td>{actions(row)}</Table.Td>}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
  let shown: ReactNode = null;
  if (rows && rows.length === 0) shown = props.empty;
  else if (rows || props.headWhileLoading)
    shown = props.scroll === false ? table : <Table.ScrollContainer minWidth={props.minWidth ?? 320}>{table}</Table.ScrollContainer>;
  return (
    <>
      {shown}
      {props.paging && <Paging {...props.paging} />}
    </>
  );
}

/** A column of the row's identifier in monospace; `breakAll` lets a long one wrap anywhere. */
export function idColumn<T extends { id: string }>(header: string, breakAll = false): Column<T> {
  return {
    header,
    cell: (row) => (
      <Text ff="monospace" size="sm" style={breakAll ? { wordBreak: "break-all" } : undefined}>
        {row.id}
      </Text>
    ),
  };
}

/** A row's buttons, right-aligned on one line. */
export function RowActions({ gap = 4, children }: { gap?: GroupProps["gap"]; children: ReactNode }) {
  return (
    <Group gap={gap} wrap="nowrap" justify="flex-end">
      {children}
    </Group>
  );
}

/** A row's name, linking to its page. */
export function RowLink({ to, children }: { to: string; children: ReactNode }) {
  const link = useLink(to);
  return (
    <Anchor {...link} fw={500}>
      {children}
    </Anchor>
  );
}
