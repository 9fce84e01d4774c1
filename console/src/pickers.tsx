// Pickers that search on the server (never a whole list in the browser).
import { useQuery } from "@connectrpc/connect-query";
import { Select } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useState } from "react";
import { TextQueryMethod } from "../../gen/svc/object/v2/object_pb";
import { UserFieldName } from "../../gen/svc/user/v2/query_pb";
import { UserService } from "../../gen/svc/user/v2/user_service_pb";

export function UserPicker({ label, value, onChange, orgId }: { label: string; value: string | null; onChange(v: string | null): void; orgId?: string }) {
  const [search, setSearch] = useState("");
  // Login names are matched exactly only (the API's rule): search the username and the e-mail, before any "@".
  const [debounced] = useDebouncedValue(search.trim().split("@")[0] ?? "", 250);
  const method = TextQueryMethod.CONTAINS_IGNORE_CASE;
  const users = useQuery(UserService.method.listUsers, {
    query: { limit: 20, asc: true },
    sortingColumn: UserFieldName.USER_NAME,
    queries: [
      ...(debounced
        ? [
            {
              query: {
                case: "orQuery" as const,
                value: {
                  queries: [
                    { query: { case: "userNameQuery" as const, value: { userName: debounced, method } } },
                    { query: { case: "emailQuery" as const, value: { emailAddress: debounced, method } } },
                  ],
                },
              },
            },
          ]
        : []),
      ...(orgId ? [{ query: { case: "organizationIdQuery" as const, value: { organizationId: orgId } } }] : []),
    ],
  });
  return (
    <SearchSelect
      label={label}
      value={value}
      onChange={onChange}
      search={search}
      onSearch={setSearch}
      data={(users.data?.result ?? []).map((u) => ({ value: u.userId, label: u.preferredLoginName || u.username }))}
    />
  );
}

/** A required select whose options the server found for what was typed (`search`); none filtered in the browser. */
export function SearchSelect(props: {
  label: string;
  value: string | null;
  onChange(v: string | null): void;
  search: string;
  onSearch(s: string): void;
  data: { value: string; label: string }[];
}) {
  return (
    <Select
      label={props.label}
      searchable
      required
      value={props.value}
      onChange={props.onChange}
      searchValue={props.search}
      onSearchChange={props.onSearch}
      filter={({ options }) => options}
      nothingFoundMessage="—"
      data={props.data}
    />
  );
}
