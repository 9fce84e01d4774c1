// Input rules shared by the access commands: names and role keys.
import { invalidArgument } from "../errors.js";

const MAX_NAME = 200;
const ROLE_KEY = /^[A-Za-z0-9_.:-]{1,100}$/;
const MAX_ROLE_KEYS = 200;

/** Trimmed, non-empty, bounded, without control characters. */
export function validText(value: string | undefined, field: string, errorPrefix: string, opts: { required?: boolean; max?: number } = {}): string | undefined {
  const v = value?.trim();
  const max = opts.max ?? MAX_NAME;
  if (!v) {
    if (opts.required) throw invalidArgument(`${errorPrefix}.Missing`, `${field} is required`, { field });
    return undefined;
  }
  if (v.length > max) throw invalidArgument(`${errorPrefix}.TooLong`, `${field} must be at most ${max} characters`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalidArgument(`${errorPrefix}.Invalid`, `${field} contains control characters`, { field });
  return v;
}

/** A required name: validText's checks, and the trimmed value. */
export function validName(value: string, field: string, errorPrefix: string): string {
  return validText(value, field, errorPrefix, { required: true }) as string;
}

/** Role keys of a request: each URL-safe, no duplicates (dropped), bounded count. */
export function validRoleKeys(keys: readonly string[], field = "role_keys"): string[] {
  if (keys.length > MAX_ROLE_KEYS) throw invalidArgument("Errors.Project.Role.TooMany", `at most ${MAX_ROLE_KEYS} role keys`, { field });
  for (const k of keys) {
    if (!ROLE_KEY.test(k)) throw invalidArgument("Errors.Project.Role.Key.Invalid", "role keys are 1 to 100 of A-Z a-z 0-9 _ . : -", { field });
  }
  return [...new Set(keys)];
}
