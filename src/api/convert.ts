import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ListQuery } from "../../gen/svc/object/v2/object_pb.js";
import { TextQueryMethod } from "../../gen/svc/object/v2/object_pb.js";
import { invalidArgument } from "../domain/errors.js";
import type { ListTotal, PageInput, TextMatch } from "../domain/list.js";
import { checkInstant, clampInstant } from "../domain/time.js";

export const ts = (d: Date): Timestamp => timestampFromDate(clampInstant(d));
export const tsOpt = (d: Date | null | undefined): Timestamp | undefined => (d ? ts(d) : undefined);
/** A request's timestamp as a Date, refused when svc cannot store it (see domain/time.ts). */
export const dateOpt = (t: Timestamp | undefined, field: string): Date | undefined => (t ? checkInstant(timestampDate(t), field) : undefined);

export function listPage(q: ListQuery | undefined): PageInput | undefined {
  return q ? { offset: q.offset, limit: q.limit, asc: q.asc, exactTotal: q.exactTotal } : undefined;
}

export function details(d: { createdAt: Date; updatedAt: Date }, owner: string) {
  return { creationDate: ts(d.createdAt), changeDate: ts(d.updatedAt), resourceOwner: owner };
}

const METHODS: Record<TextQueryMethod, Omit<TextMatch, "value">> = {
  [TextQueryMethod.UNSPECIFIED]: { method: "equals", ignoreCase: false },
  [TextQueryMethod.EQUALS]: { method: "equals", ignoreCase: false },
  [TextQueryMethod.EQUALS_IGNORE_CASE]: { method: "equals", ignoreCase: true },
  [TextQueryMethod.STARTS_WITH]: { method: "startsWith", ignoreCase: false },
  [TextQueryMethod.STARTS_WITH_IGNORE_CASE]: { method: "startsWith", ignoreCase: true },
  [TextQueryMethod.CONTAINS]: { method: "contains", ignoreCase: false },
  [TextQueryMethod.CONTAINS_IGNORE_CASE]: { method: "contains", ignoreCase: true },
  [TextQueryMethod.ENDS_WITH]: { method: "endsWith", ignoreCase: false },
  [TextQueryMethod.ENDS_WITH_IGNORE_CASE]: { method: "endsWith", ignoreCase: true },
};

export function textMatch(value: string, method: TextQueryMethod): TextMatch {
  const m = METHODS[method];
  if (!m) throw invalidArgument("Errors.Query.Method.Invalid", `unknown text query method ${method}`);
  if (value.length > 200) throw invalidArgument("Errors.Query.Value.TooLong", "filter values must be at most 200 characters");
  return { ...m, value };
}

export function enumValue<T extends string>(table: Record<number, T>, value: number, what: string): T {
  const v = table[value];
  if (v === undefined) throw invalidArgument(`Errors.Query.${what}.Invalid`, `unknown ${what} ${value}`);
  return v;
}

/** The details of a list answer: how many match in all (or at least, when the count stopped), and when they were read. */
export function listDetails(ctx: { clock: () => Date }, t: ListTotal) {
  return { totalResult: BigInt(t.total), totalResultIsLowerBound: t.totalIsLowerBound, timestamp: ts(ctx.clock()) };
}

/** The details of a resource that has not changed since it was created. */
export function createdDetails(createdAt: Date, owner: string) {
  return details({ createdAt, updatedAt: createdAt }, owner);
}

/** The answers of commands that change or remove a resource. */
export const changed = (d: Date) => ({ changeDate: ts(d) });
export const deleted = (d: Date) => ({ deletionDate: ts(d) });
