// An organization picker over the organizations the user reads (the server decides which), narrowed to those where
// the user holds `permission` when one is given (ListMyPermissions).
import { useQuery } from "@connectrpc/connect-query";
import { Select } from "@mantine/core";
import { useEffect } from "react";
import { OrganizationFieldName } from "../../../gen/svc/org/v2/org_pb";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { useAccess } from "../access";

export function OrgSelect({
  label,
  value,
  onChange,
  clearable,
  permission,
}: {
  label: string;
  value: string | null;
  onChange(v: string | null): void;
  clearable?: boolean;
  permission?: string;
}) {
  const orgs = useQuery(OrganizationService.method.listOrganizations, { query: { limit: 200, asc: true }, sortingColumn: OrganizationFieldName.NAME });
  const access = useAccess().data;
  const result = (orgs.data?.result ?? []).filter((o) => !permission || access?.can(permission, o.id));
  const first = result[0]?.id;
  useEffect(() => {
    if (!clearable && value === null && first) onChange(first);
  }, [clearable, value, first, onChange]);
  return (
    <Select
      label={label}
      value={value}
      onChange={onChange}
      searchable
      clearable={clearable}
      data={result.map((o) => ({ value: o.id, label: o.name }))}
      required={!clearable}
    />
  );
}
