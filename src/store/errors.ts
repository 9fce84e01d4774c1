// The one place that reads driver errors (pg, PGlite, or Prisma's wrapping of
// either) and turns them into the domain's error type.
import { DomainError, invalidArgument, setDriverErrorTranslator } from "../domain/errors.js";
import { sqlError } from "./sql.js";

/**
 * Whether PostgreSQL refused a text value it cannot store (a NUL character, or a byte sequence invalid in the
 * database encoding). Stored text never holds one, so it came from the request: bad input, not an internal error,
 * whichever query met it first.
 */
export function isUnstorableText(err: unknown): boolean {
  const { code } = sqlError(err);
  return code === "22021" || code === "22P05";
}

/**
 * A unique violation (Prisma's P2002 or a raw statement's SQLSTATE 23505), with what names the constraint: its
 * name, or Prisma's list of the fields. Undefined for any other error.
 */
export function uniqueViolation(err: unknown): { target: string } | undefined {
  const e = err as { code?: string; meta?: Record<string, unknown> } | null;
  if (e?.code === "P2002") return { target: JSON.stringify(e.meta ?? {}) };
  const raw = sqlError(err);
  if (raw.code === "23505") return { target: raw.constraint ?? JSON.stringify(err) };
  return undefined;
}

/**
 * Runs a write and turns its unique violation into `onDuplicate()` (an AlreadyExists of the domain). With `on`,
 * only a violation whose constraint or fields mention that text is translated.
 */
export async function unique<T>(write: Promise<T>, onDuplicate: () => Error, on?: string): Promise<T> {
  try {
    return await write;
  } catch (err) {
    const v = uniqueViolation(err);
    if (v && (on === undefined || v.target.includes(on))) throw onDuplicate();
    throw err;
  }
}

/** What the adapters see for a driver error: the domain error it stands for, or the error itself. */
export function translateDriverError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  if (isUnstorableText(err)) return invalidArgument("Errors.Input.Text", "text fields must not contain U+0000");
  return err;
}

setDriverErrorTranslator(translateDriverError);
