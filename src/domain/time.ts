// The range of instants svc stores: what PostgreSQL's timestamptz, ISO 8601
// without an expanded year, and every client can represent. The protobuf
// Timestamp range ends at 9999-12-31T23:59:59.999999999Z, which rounds up to
// year 10000 at millisecond precision, so every instant that comes in is
// checked here before it is used or written.
import { invalidArgument } from "./errors.js";

export const MIN_INSTANT = new Date("0001-01-01T00:00:00.000Z");
export const MAX_INSTANT = new Date("9999-12-31T23:59:59.999Z");

/** True when `d` is a valid instant in [MIN_INSTANT, MAX_INSTANT]. */
export function storable(d: Date): boolean {
  const ms = d.getTime();
  return !Number.isNaN(ms) && ms >= MIN_INSTANT.getTime() && ms <= MAX_INSTANT.getTime();
}

/** `d` itself, or InvalidArgument naming `field` when svc cannot store it. */
export function checkInstant(d: Date, field: string): Date {
  if (!storable(d)) {
    throw invalidArgument("Errors.Timestamp.OutOfRange", `${field} must lie between ${MIN_INSTANT.toISOString()} and ${MAX_INSTANT.toISOString()}`, {
      field,
    });
  }
  return d;
}

/**
 * `d` brought into the storable range for display. A row written before the
 * range was checked may hold a later instant, which the driver reads as an
 * invalid Date; it shows as the last storable instant (an expiry that far
 * out means "does not expire"), so one such row never fails a whole list.
 */
export function clampInstant(d: Date): Date {
  const ms = d.getTime();
  if (Number.isNaN(ms) || ms > MAX_INSTANT.getTime()) return MAX_INSTANT;
  return ms < MIN_INSTANT.getTime() ? MIN_INSTANT : d;
}
