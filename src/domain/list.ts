import { invalidArgument } from "./errors.js";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export interface Page {
  offset: number;
  limit: number;
  asc: boolean;
}

/** Offset/limit paging of every v2 list call: default 100, maximum 1000. */
export function page(input: { offset?: bigint | number; limit?: number; asc?: boolean } | undefined): Page {
  const limit = input?.limit ? Number(input.limit) : DEFAULT_LIMIT;
  if (limit > MAX_LIMIT) throw invalidArgument("Errors.List.LimitTooHigh", `limit must be at most ${MAX_LIMIT}`);
  const offset = Number(input?.offset ?? 0);
  if (!Number.isSafeInteger(offset) || offset > 2 ** 31 - 1) throw invalidArgument("Errors.List.OffsetTooHigh", "offset is too large");
  return { offset, limit, asc: input?.asc ?? false };
}

export type TextMethod = "equals" | "startsWith" | "contains" | "endsWith";

export interface TextMatch {
  method: TextMethod;
  ignoreCase: boolean;
  value: string;
}
