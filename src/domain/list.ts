import type { Prisma } from "../../gen/prisma/client.js";
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

/**
 * Order and window of a list without a sort column: by creation, newest first
 * unless `asc`, the id (time-ordered) breaking ties.
 */
export function inCreationOrder(p: Page) {
  const dir = p.asc ? ("asc" as const) : ("desc" as const);
  return { orderBy: [{ createdAt: dir }, { id: dir }], skip: p.offset, take: p.limit };
}

export type TextMethod = "equals" | "startsWith" | "contains" | "endsWith";

export interface TextMatch {
  method: TextMethod;
  ignoreCase: boolean;
  value: string;
}

/**
 * Prisma compares with LIKE/ILIKE for every text method except case-sensitive
 * equality and passes the value unescaped, so `_` and `%` would be wildcards;
 * PostgreSQL's LIKE escapes with backslash.
 */
export function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A text match as one Prisma string filter, safe against LIKE wildcards. */
export function textFilter(m: TextMatch): Prisma.StringFilter {
  const value = m.method === "equals" && !m.ignoreCase ? m.value : escapeLike(m.value);
  return { [m.method]: value, ...(m.ignoreCase ? { mode: "insensitive" as const } : {}) };
}
