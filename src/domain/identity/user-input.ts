// Validation of user input shared by the v2 commands and SCIM: text fields,
// usernames, addresses, numbers, language tags, metadata.
import { failedPrecondition, invalidArgument } from "../errors.js";

const EMAIL = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:]+\.[^\s@"<>()[\]\\,;:]+$/;
const PHONE = /^\+?[0-9 ()./-]{4,30}$/;
const LANGUAGE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/;

export function text(value: string | undefined, field: string, opts: { required?: boolean; max?: number } = {}): string | undefined {
  const v = value?.trim();
  if (!v) {
    if (opts.required) throw invalidArgument(`Errors.User.${field}.Missing`, `${field} is required`, { field });
    return undefined;
  }
  if (v.length > (opts.max ?? 200)) throw invalidArgument(`Errors.User.${field}.TooLong`, `${field} must be at most ${opts.max ?? 200} characters`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(v)) throw invalidArgument(`Errors.User.${field}.Invalid`, `${field} contains control characters`, { field });
  return v;
}

/** An optional text attribute as a column value: absent or blank is null. */
export function optionalText(value: string | null | undefined, field: string, max?: number): string | null {
  return text(value ?? undefined, field, { max }) ?? null;
}

/** Like text() but keeps line breaks (an address's `formatted`). */
export function multiline(value: string | null | undefined, field: string): string | null {
  const v = value?.trim();
  if (!v) return null;
  if (v.length > 1000) throw invalidArgument(`Errors.User.${field}.TooLong`, `${field} must be at most 1000 characters`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters other than line breaks and tabs are rejected
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v))
    throw invalidArgument(`Errors.User.${field}.Invalid`, `${field} contains control characters`, { field });
  return v;
}

export function validateUsername(username: string): string {
  const v = text(username, "username", { required: true }) as string;
  if (/\s/.test(v)) throw invalidArgument("Errors.User.Username.Invalid", "username must not contain whitespace", { field: "username" });
  return v;
}

export function validExternalId(value: string | null | undefined): string | null {
  return text(value ?? undefined, "externalId", { max: 200 }) ?? null;
}

/** A required email address; `field` names it in the error (the v2 `email`, SCIM's `emails`). */
export function validEmail(value: string, field: string): string {
  const email = text(value, "email", { required: true, max: 320 }) as string;
  if (!EMAIL.test(email)) throw invalidArgument("Errors.User.Email.Invalid", "email is not a valid address", { field });
  return email;
}

/** A v2 phone number; blank is none. */
export function validPhone(value: string): string | undefined {
  const phone = text(value, "phone", { max: 30 });
  if (phone && !PHONE.test(phone)) throw invalidArgument("Errors.User.Phone.Invalid", "phone is not a valid number", { field: "phone" });
  return phone;
}

/** A preferred language is a BCP 47 language tag (or none); `field` is the protocol's name of the attribute. */
export function languageTag(language: string | null | undefined, field: string): void {
  if (language && !LANGUAGE.test(language)) {
    throw invalidArgument("Errors.User.PreferredLanguage.Invalid", `${field} must be a BCP 47 language tag`, { field });
  }
}

/** A v2 preferred language: text, then a language tag. */
export function validLanguage(value: string): string | undefined {
  const language = text(value, "preferred_language", { max: 35 });
  languageTag(language, "preferred_language");
  return language;
}

export const MAX_METADATA_PER_REQUEST = 100;
/**
 * What one user may hold: metadata goes into tokens (the urn:svc:iam:user:metadata scope), introspection and
 * userinfo answers, so it is bounded per user, not only per request.
 */
export const MAX_METADATA_PER_USER = 100;
export const MAX_METADATA_BYTES_PER_USER = 256 * 1024;

/** FailedPrecondition when a user's metadata would pass the per-user limits. */
export function checkMetadataUsage(usage: { entries: number; bytes: number }): void {
  if (usage.entries > MAX_METADATA_PER_USER || usage.bytes > MAX_METADATA_BYTES_PER_USER) {
    throw failedPrecondition(
      "Errors.User.Metadata.LimitReached",
      `a user holds at most ${MAX_METADATA_PER_USER} metadata entries and ${MAX_METADATA_BYTES_PER_USER / 1024} KiB of keys and values`,
    );
  }
}

/** Metadata entries of CreateUser and SetUserMetadata: text keys, unique, values up to 64 KiB. */
export function validMetadata(entries: readonly { key: string; value: Uint8Array }[]): { key: string; value: Uint8Array<ArrayBuffer> }[] {
  if (entries.length > MAX_METADATA_PER_REQUEST) {
    throw invalidArgument("Errors.User.Metadata.TooMany", `at most ${MAX_METADATA_PER_REQUEST} metadata entries per request`, { field: "metadata" });
  }
  const metadata = entries.map((m) => {
    const key = text(m.key, "metadata_key", { required: true }) as string;
    if (m.value.byteLength > 64 * 1024) throw invalidArgument("Errors.User.Metadata.TooLarge", "metadata values must be at most 64 KiB", { field: "metadata" });
    return { key, value: new Uint8Array(m.value) };
  });
  if (new Set(metadata.map((m) => m.key)).size !== metadata.length) throw invalidArgument("Errors.User.Metadata.Duplicate", "metadata keys must be unique");
  checkMetadataUsage({ entries: metadata.length, bytes: metadata.reduce((n, m) => n + Buffer.byteLength(m.key) + m.value.byteLength, 0) });
  return metadata;
}
