// Users: filtered, sorted and paged by the server (one ListUsers call per page, however many users there are).
import type { MessageInitShape } from "@bufbuild/protobuf";
import { useQuery } from "@connectrpc/connect-query";
import { Anchor, Badge, Button, Group, Select, Table, TextInput, UnstyledButton, VisuallyHidden } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData } from "@tanstack/react-query";
import { useState } from "react";
import { TextQueryMethod } from "../../../gen/svc/object/v2/object_pb";
import { type SearchQuerySchema, UserFieldName } from "../../../gen/svc/user/v2/query_pb";
import { type User, UserState } from "../../../gen/svc/user/v2/user_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { useAccess } from "../access";
import { type MessageKey, useI18n } from "../i18n";
import { Paging, pageQuery } from "../paging";
import { useLink, useRouter } from "../router";
import { ApiError, EmptyState, PageHeader, useDateFormat } from "../ui";

export const STATE_LABEL: Record<UserState, MessageKey> = {
  [UserState.UNSPECIFIED]: "state.unspecified",
  [UserState.ACTIVE]: "state.active",
  [UserState.INACTIVE]: "state.inactive",
  [UserState.LOCKED]: "state.locked",
  [UserState.INITIAL]: "state.initial",
};
const STATE_COLOR: Record<UserState, string> = {
  [UserState.UNSPECIFIED]: "gray.7",
  [UserState.ACTIVE]: "teal.9",
  [UserState.INACTIVE]: "gray.7",
  [UserState.LOCKED]: "red.9",
  [UserState.INITIAL]: "yellow.4",
};

export function StateBadge({ state }: { state: UserState }) {
  const { t } = useI18n();
  return (
    <Badge color={STATE_COLOR[state]} variant="filled" autoContrast>
      {t(STATE_LABEL[state])}
    </Badge>
  );
}

type Query = MessageInitShape<typeof SearchQuerySchema>;

/** Username, display name or e-mail containing the text (any case). */
function textQuery(text: string): Query[] {
  const method = TextQueryMethod.CONTAINS_IGNORE_CASE;
  const any: Query[] = [
    { query: { case: "userNameQuery", value: { userName: text, method } } },
    { query: { case: "displayNameQuery", value: { displayName: text, method } } },
    { query: { case: "emailQuery", value: { emailAddress: text, method } } },
  ];
  return [{ query: { case: "orQuery", value: { queries: any } } }];
}

type SortColumn = UserFieldName.USER_NAME | UserFieldName.DISPLAY_NAME | UserFieldName.EMAIL | UserFieldName.STATE | UserFieldName.CREATION_DATE;

function SortHeader({
  column,
  sort,
  onSort,
  children,
  visibleFrom,
}: {
  column: SortColumn;
  sort: { column: SortColumn; asc: boolean };
  onSort(c: SortColumn): void;
  children: string;
  visibleFrom?: "xs";
}) {
  const { t } = useI18n();
  const active = sort.column === column;
  return (
    <Table.Th aria-sort={active ? (sort.asc ? "ascending" : "descending") : "none"} visibleFrom={visibleFrom}>
      <UnstyledButton onClick={() => onSort(column)} fw={600} fz="sm">
        {children} <span aria-hidden="true">{active ? (sort.asc ? "▲" : "▼") : ""}</span>
        <VisuallyHidden>{active ? t(sort.asc ? "list.sortedAsc" : "list.sortedDesc") : t("list.sortBy")}</VisuallyHidden>
      </UnstyledButton>
    </Table.Th>
  );
}

function UserRow({ user }: { user: User }) {
  const link = useLink(`/users/${encodeURIComponent(user.userId)}`);
  const date = useDateFormat();
  const human = user.type.case === "human" ? user.type.value : undefined;
  const name = human?.profile?.displayName || (user.type.case === "machine" ? user.type.value.name : "");
  return (
    <Table.Tr>
      <Table.Td>
        <Anchor {...link} fw={500}>
          {user.username}
        </Anchor>
      </Table.Td>
      <Table.Td visibleFrom="xs">{name}</Table.Td>
      <Table.Td visibleFrom="sm">{human?.email?.email}</Table.Td>
      <Table.Td style={{ whiteSpace: "nowrap" }}>
        <StateBadge state={user.state} />
      </Table.Td>
      <Table.Td visibleFrom="md">{date(user.details?.creationDate ? new Date(Number(user.details.creationDate.seconds) * 1000) : undefined)}</Table.Td>
    </Table.Tr>
  );
}

export default function Users() {
  const { t } = useI18n();
  const { search, navigate } = useRouter();
  const newUser = useLink("/users/new");
  // Creating needs user.write in some organization (the new user's organization is picked among those).
  const canCreate = useAccess().data?.can("user.write") ?? false;
  const [text, setText] = useState(search.get("q") ?? "");
  const [debounced] = useDebouncedValue(text.trim(), 300);
  const [state, setState] = useState<string | null>(null);
  const [sort, setSort] = useState<{ column: SortColumn; asc: boolean }>({ column: UserFieldName.USER_NAME, asc: true });
  const [page, setPage] = useState(1);
  const queries: Query[] = [
    ...(debounced ? textQuery(debounced) : []),
    ...(state ? [{ query: { case: "stateQuery", value: { state: Number(state) as UserState } } } satisfies Query] : []),
  ];
  const list = useQuery(
    UserService.method.listUsers,
    { query: pageQuery(page, sort.asc), sortingColumn: sort.column, queries },
    { placeholderData: keepPreviousData },
  );
  const filtered = queries.length > 0;
  const onSort = (column: SortColumn) => {
    setSort((s) => ({ column, asc: s.column === column ? !s.asc : true }));
    setPage(1);
  };
  return (
    <>
      <PageHeader
        title={t("users.title")}
        actions={
          canCreate && (
            <Button component="a" {...newUser}>
              {t("users.new")}
            </Button>
          )
        }
      />
      <Group mb="md" gap="sm" align="flex-end" wrap="wrap">
        <TextInput
          label={t("users.search")}
          placeholder={t("users.searchPlaceholder")}
          value={text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            setPage(1);
            navigate(e.currentTarget.value ? `/users?q=${encodeURIComponent(e.currentTarget.value)}` : "/users", { replace: true });
          }}
          style={{ flex: "1 1 220px" }}
        />
        <Select
          label={t("users.state")}
          placeholder={t("users.anyState")}
          clearable
          value={state}
          onChange={(v) => {
            setState(v);
            setPage(1);
          }}
          data={[UserState.ACTIVE, UserState.INACTIVE, UserState.LOCKED, UserState.INITIAL].map((s) => ({ value: String(s), label: t(STATE_LABEL[s]) }))}
          style={{ flex: "0 1 180px" }}
        />
      </Group>
      <ApiError error={list.error} />
      {list.data && list.data.result.length === 0 ? (
        filtered ? (
          <EmptyState title={t("users.noMatch")} hint={t("users.noMatchHint")} />
        ) : (
          <EmptyState
            title={t("users.empty")}
            hint={t("users.emptyHint")}
            action={
              canCreate && (
                <Button component="a" {...newUser}>
                  {t("users.new")}
                </Button>
              )
            }
          />
        )
      ) : (
        <Table.ScrollContainer minWidth={320}>
          <Table striped highlightOnHover aria-busy={list.isFetching} data-testid="users-table">
            <Table.Thead>
              <Table.Tr>
                <SortHeader column={UserFieldName.USER_NAME} sort={sort} onSort={onSort}>
                  {t("users.username")}
                </SortHeader>
                <SortHeader column={UserFieldName.DISPLAY_NAME} sort={sort} onSort={onSort} visibleFrom="xs">
                  {t("users.name")}
                </SortHeader>
                <Table.Th visibleFrom="sm">{t("users.email")}</Table.Th>
                <SortHeader column={UserFieldName.STATE} sort={sort} onSort={onSort}>
                  {t("users.state")}
                </SortHeader>
                <Table.Th visibleFrom="md">{t("users.created")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data?.result.map((u) => (
                <UserRow key={u.userId} user={u} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      <Paging details={list.data?.details} page={page} onPage={setPage} testId="users-total" />
    </>
  );
}
