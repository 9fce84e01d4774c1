// The SCIM User attributes stored on the user row and its child rows (RFC
// 7643 §4.1), validated into columns and rows.
import type { AddressRow, ContactRow, ProfileRows } from "../../store/users.js";
import { invalidArgument } from "../errors.js";
import { newId } from "../ids.js";
import { languageTag, multiline, optionalText as opt, text, validEmail } from "./user-input.js";

export type { ProfileRows } from "../../store/users.js";

export interface ContactInput {
  value: string;
  type?: string | null;
  display?: string | null;
  primary: boolean;
}

export interface AddressInput {
  type?: string | null;
  streetAddress?: string | null;
  locality?: string | null;
  region?: string | null;
  postalCode?: string | null;
  country?: string | null;
  formatted?: string | null;
  primary: boolean;
}

export interface ScimProfile {
  givenName?: string | null;
  familyName?: string | null;
  middleName?: string | null;
  honorificPrefix?: string | null;
  honorificSuffix?: string | null;
  nameFormatted?: string | null;
  displayName?: string | null;
  nickName?: string | null;
  profileUrl?: string | null;
  userType?: string | null;
  title?: string | null;
  preferredLanguage?: string | null;
  locale?: string | null;
  timezone?: string | null;
  emails: ContactInput[];
  phoneNumbers: ContactInput[];
  addresses: AddressInput[];
}

/** The user columns a SCIM profile sets (every one of them: what is absent is cleared). */
export type ScimColumns = Record<
  | "givenName"
  | "familyName"
  | "middleName"
  | "honorificPrefix"
  | "honorificSuffix"
  | "nameFormatted"
  | "displayName"
  | "nickName"
  | "userType"
  | "title"
  | "preferredLanguage"
  | "locale"
  | "timezone"
  | "profileUrl"
  | "email"
  | "phone",
  string | null
>;

const LOCALE = /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$/;
const TIMEZONE = /^[A-Za-z]+(?:[/_+-][A-Za-z0-9]+)*$/;
export const MAX_CHILD_ROWS = 20;

function validTimezone(tz: string): boolean {
  if (!TIMEZONE.test(tz)) return false;
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function validProfileUrl(value: string | null | undefined): string | null {
  const profileUrl = opt(value, "profile_url", 2000);
  if (profileUrl === null) return null;
  let ok = false;
  try {
    const u = new URL(profileUrl);
    ok = u.protocol === "http:" || u.protocol === "https:";
  } catch {}
  if (!ok) throw invalidArgument("Errors.User.ProfileUrl.Invalid", "profileUrl must be an http or https URL", { field: "profileUrl" });
  return profileUrl;
}

/** The single-valued attributes as columns; email and phone come from the rows. */
function singleValued(p: ScimProfile): Omit<ScimColumns, "email" | "phone"> {
  const columns = {
    givenName: opt(p.givenName, "given_name"),
    familyName: opt(p.familyName, "family_name"),
    middleName: opt(p.middleName, "middle_name"),
    honorificPrefix: opt(p.honorificPrefix, "honorific_prefix"),
    honorificSuffix: opt(p.honorificSuffix, "honorific_suffix"),
    nameFormatted: opt(p.nameFormatted, "name_formatted", 500),
    displayName: opt(p.displayName, "display_name"),
    nickName: opt(p.nickName, "nick_name"),
    userType: opt(p.userType, "user_type"),
    title: opt(p.title, "title"),
    preferredLanguage: opt(p.preferredLanguage, "preferred_language", 35),
    locale: opt(p.locale, "locale", 35),
    timezone: opt(p.timezone, "timezone", 64),
    profileUrl: validProfileUrl(p.profileUrl),
  };
  languageTag(columns.preferredLanguage, "preferredLanguage");
  if (columns.locale && !LOCALE.test(columns.locale)) {
    throw invalidArgument("Errors.User.Locale.Invalid", "locale must be a BCP 47 language tag", { field: "locale" });
  }
  if (columns.timezone && !validTimezone(columns.timezone)) {
    throw invalidArgument("Errors.User.Timezone.Invalid", "timezone must be an IANA time zone name", { field: "timezone" });
  }
  return columns;
}

function onePrimary(entries: { primary: boolean }[], field: string): void {
  if (entries.length > MAX_CHILD_ROWS) throw invalidArgument(`Errors.User.${field}.TooMany`, `at most ${MAX_CHILD_ROWS} ${field} entries`, { field });
  if (entries.filter((e) => e.primary).length > 1) throw invalidArgument(`Errors.User.${field}.PrimaryTwice`, `at most one of ${field} is primary`, { field });
}

/** Rows of the multi-valued attributes, validated, positions kept, at most one primary. */
function profileRows(p: ScimProfile): ProfileRows {
  onePrimary(p.emails, "emails");
  onePrimary(p.phoneNumbers, "phoneNumbers");
  onePrimary(p.addresses, "addresses");
  const contact = (kind: "email" | "phone", e: ContactInput, position: number, value: string): ContactRow => ({
    id: newId(),
    position,
    value,
    type: opt(e.type, `${kind}_type`, 50),
    display: opt(e.display, `${kind}_display`),
    primary: e.primary,
  });
  const address = (a: AddressInput, position: number): AddressRow => ({
    id: newId(),
    position,
    type: opt(a.type, "address_type", 50),
    streetAddress: opt(a.streetAddress, "street_address", 500),
    locality: opt(a.locality, "locality"),
    region: opt(a.region, "region"),
    postalCode: opt(a.postalCode, "postal_code", 50),
    country: opt(a.country, "country", 100),
    formatted: multiline(a.formatted, "formatted"),
    primary: a.primary,
  });
  return {
    emails: p.emails.map((e, i) => contact("email", e, i, validEmail(e.value, "emails"))),
    phoneNumbers: p.phoneNumbers.map((e, i) => contact("phone", e, i, text(e.value, "phone", { required: true, max: 50 }) as string)),
    addresses: p.addresses.map(address),
  };
}

/**
 * Validates a SCIM profile into user columns and child rows. The primary
 * email and phone (or the first entry when none is marked) are the user's
 * email and phone as the v2 API shows them.
 */
export function scimProfileColumns(p: ScimProfile): { columns: ScimColumns; rows: ProfileRows } {
  const columns = singleValued(p);
  const rows = profileRows(p);
  const primaryEmail = rows.emails.find((e) => e.primary) ?? rows.emails[0];
  const primaryPhone = rows.phoneNumbers.find((e) => e.primary) ?? rows.phoneNumbers[0];
  return { columns: { ...columns, email: primaryEmail?.value ?? null, phone: primaryPhone?.value ?? null }, rows };
}
