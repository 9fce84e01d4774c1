// Paging under a list: one request per page (offset and limit), the total as the API counted it.
import { Group, Pagination, Text } from "@mantine/core";
import { useI18n } from "./i18n";

export const PAGE_SIZE = 20;

export const pageQuery = (page: number, asc = true) => ({ offset: BigInt((page - 1) * PAGE_SIZE), limit: PAGE_SIZE, asc });

export function Paging({
  details,
  page,
  onPage,
  testId,
}: {
  details: { totalResult: bigint; totalResultIsLowerBound: boolean } | undefined;
  page: number;
  onPage(p: number): void;
  testId?: string;
}) {
  const { t } = useI18n();
  const total = Number(details?.totalResult ?? 0);
  const lowerBound = details?.totalResultIsLowerBound ?? false;
  if (total === 0) return null;
  // A count that stopped early (over 1000 matches) leaves the next page open: reaching it counts further.
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE) + (lowerBound ? 1 : 0));
  return (
    <Group justify="space-between" mt="md" wrap="wrap">
      <Text size="sm" c="dimmed" data-testid={testId}>
        {t(lowerBound ? "list.totalAtLeast" : "list.total", { count: total })}
      </Text>
      {pages > 1 && (
        <Pagination
          total={pages}
          value={page}
          onChange={onPage}
          siblings={1}
          boundaries={1}
          getControlProps={(c) => ({
            "aria-label": t(c === "next" ? "list.next" : c === "previous" ? "list.previous" : c === "first" ? "list.first" : "list.last"),
          })}
          getItemProps={(p) => ({ "aria-label": t("list.page", { page: p }) })}
        />
      )}
    </Group>
  );
}
