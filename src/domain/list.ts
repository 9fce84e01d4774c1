import { invalidArgument } from "./errors.js";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/**
 * Without `exactTotal`, a list counts at most this many matches (or up to the end of the requested page, if that is
 * further): the total of a page over a large result then costs about what the page costs. More matches make the
 * total a lower bound (ListDetails.total_result_is_lower_bound).
 */
export const COUNT_BOUND = 1000;

export interface Page {
  offset: number;
  limit: number;
  asc: boolean;
  /** Count the matches up to this many, and report more as a lower bound; undefined counts every match. */
  countUpTo?: number;
}

/** The total of a list answer: exact, or a lower bound when the count stopped at the page's countUpTo. */
export interface ListTotal {
  total: number;
  totalIsLowerBound: boolean;
}

export interface PageInput {
  offset?: bigint | number;
  limit?: number;
  asc?: boolean;
  /** Count every match, however many (ListQuery.exact_total). */
  exactTotal?: boolean;
}

/** Offset/limit paging of every v2 list call: default 100, maximum 1000; the count bounded unless exactTotal. */
export function page(input: PageInput | undefined): Page {
  const limit = input?.limit ? Number(input.limit) : DEFAULT_LIMIT;
  if (limit > MAX_LIMIT) throw invalidArgument("Errors.List.LimitTooHigh", `limit must be at most ${MAX_LIMIT}`);
  const offset = Number(input?.offset ?? 0);
  if (!Number.isSafeInteger(offset) || offset > 2 ** 31 - 1) throw invalidArgument("Errors.List.OffsetTooHigh", "offset is too large");
  const p: Page = { offset, limit, asc: input?.asc ?? false };
  if (!input?.exactTotal) p.countUpTo = Math.max(COUNT_BOUND, offset + limit);
  return p;
}

/**
 * How many rows a count for `p` reads: one beyond countUpTo tells "more than countUpTo" from "exactly countUpTo";
 * undefined counts them all.
 */
export function countLimit(p: Pick<Page, "countUpTo">): number | undefined {
  return p.countUpTo === undefined ? undefined : p.countUpTo + 1;
}

/** The total of what a count limited by countLimit(p) found. */
export function totalOf(counted: number, p: Pick<Page, "countUpTo">): ListTotal {
  if (p.countUpTo !== undefined && counted > p.countUpTo) return { total: p.countUpTo, totalIsLowerBound: true };
  return { total: counted, totalIsLowerBound: false };
}

/** The total of a list read whole (in memory, or small by construction): always exact. */
export const exactTotal = (total: number): ListTotal => ({ total, totalIsLowerBound: false });

export type TextMethod = "equals" | "startsWith" | "contains" | "endsWith";

export interface TextMatch {
  method: TextMethod;
  ignoreCase: boolean;
  value: string;
}
