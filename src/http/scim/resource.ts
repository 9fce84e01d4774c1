// The SCIM User resource (RFC 7643 §4.1) ⇄ the domain's ScimUserInput /
// ScimUserRecord. Attribute names are matched case-insensitively (RFC 7643
// §2.1); read-only attributes in a request are ignored; wrong types are
// invalidValue.
import type { ScimUserInput, ScimUserRecord } from "../../domain/scim-users.js";
import type { AddressInput, ContactInput } from "../../domain/users.js";
import { ScimError } from "./errors.js";

export const USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User";

/** The JSON shape a SCIM client sends and receives (password only ever inbound). */
export type ScimDoc = Record<string, unknown>;

export const NAME_SUBS = ["formatted", "familyName", "givenName", "middleName", "honorificPrefix", "honorificSuffix"] as const;
export const CONTACT_SUBS = ["value", "type", "display", "primary"] as const;
export const ADDRESS_SUBS = ["type", "streetAddress", "locality", "region", "postalCode", "country", "formatted", "primary"] as const;
export const SIMPLE_STRINGS = [
  "userName",
  "externalId",
  "displayName",
  "nickName",
  "profileUrl",
  "userType",
  "title",
  "preferredLanguage",
  "locale",
  "timezone",
  "password",
] as const;
export const MULTI = { emails: CONTACT_SUBS, phoneNumbers: CONTACT_SUBS, addresses: ADDRESS_SUBS } as const;
export type MultiAttr = keyof typeof MULTI;
export const READ_ONLY = ["id", "meta", "groups", "schemas"] as const;

const TOP = [...SIMPLE_STRINGS, "name", "active", "emails", "phoneNumbers", "addresses", ...READ_ONLY];
const canonical = (names: readonly string[]) => new Map(names.map((n) => [n.toLowerCase(), n]));
const TOP_NAMES = canonical(TOP);
export const SUB_NAMES: Record<string, Map<string, string>> = {
  name: canonical(NAME_SUBS),
  emails: canonical(CONTACT_SUBS),
  phoneNumbers: canonical(CONTACT_SUBS),
  addresses: canonical(ADDRESS_SUBS),
};

/** Canonical spelling of a top-level attribute name, or undefined. */
export function topName(name: string): string | undefined {
  return TOP_NAMES.get(name.toLowerCase());
}

export const invalidValue = (detail: string, id = "Errors.Scim.Value.Invalid") => new ScimError(400, "invalidValue", id, detail);

/** RFC 7643 booleans, plus the "True"/"False" strings Entra ID sends. */
export function toBool(v: unknown, field: string): boolean {
  if (typeof v === "boolean") return v;
  if (typeof v === "string" && /^(true|false)$/i.test(v)) return v.toLowerCase() === "true";
  throw invalidValue(`${field} must be a boolean`);
}

function toStr(v: unknown, field: string): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== "string") throw invalidValue(`${field} must be a string`);
  return v;
}

function toObject(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalidValue(`${field} must be an object`);
  return v as Record<string, unknown>;
}

/** Keys of a complex value under their canonical names (unknown sub-attributes are ignored). */
function subs(attr: string, value: unknown): Record<string, unknown> {
  const names = SUB_NAMES[attr] as Map<string, string>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(toObject(value, attr))) {
    const name = names.get(k.toLowerCase());
    if (name) out[name] = v;
  }
  return out;
}

function contacts(attr: "emails" | "phoneNumbers", v: unknown): ContactInput[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw invalidValue(`${attr} must be an array`);
  return v.map((entry) => {
    const e = subs(attr, entry);
    const value = toStr(e.value, `${attr}.value`);
    if (!value) throw invalidValue(`${attr}.value is required`);
    return {
      value,
      type: toStr(e.type, `${attr}.type`),
      display: toStr(e.display, `${attr}.display`),
      primary: e.primary === undefined || e.primary === null ? false : toBool(e.primary, `${attr}.primary`),
    };
  });
}

function addresses(v: unknown): AddressInput[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw invalidValue("addresses must be an array");
  return v.map((entry) => {
    const a = subs("addresses", entry);
    const out: AddressInput = { primary: a.primary === undefined || a.primary === null ? false : toBool(a.primary, "addresses.primary") };
    for (const k of ADDRESS_SUBS) if (k !== "primary") out[k] = toStr(a[k], `addresses.${k}`);
    return out;
  });
}

/** The attributes of a request body under canonical names (unknown attributes and extensions are ignored). */
export function canonicalDoc(body: Record<string, unknown>): ScimDoc {
  const doc: ScimDoc = {};
  for (const [k, v] of Object.entries(body)) {
    const name = topName(k);
    if (name) doc[name] = v;
  }
  return doc;
}

/** A full User representation (POST, PUT, a patched resource) → domain input. */
export function toInput(doc: ScimDoc): ScimUserInput {
  const name = doc.name === undefined || doc.name === null ? {} : subs("name", doc.name);
  const userName = toStr(doc.userName, "userName");
  if (!userName) throw invalidValue("userName is required", "Errors.Scim.UserName.Missing");
  const password = toStr(doc.password, "password");
  return {
    username: userName,
    externalId: toStr(doc.externalId, "externalId"),
    givenName: toStr(name.givenName, "name.givenName"),
    familyName: toStr(name.familyName, "name.familyName"),
    middleName: toStr(name.middleName, "name.middleName"),
    honorificPrefix: toStr(name.honorificPrefix, "name.honorificPrefix"),
    honorificSuffix: toStr(name.honorificSuffix, "name.honorificSuffix"),
    nameFormatted: toStr(name.formatted, "name.formatted"),
    displayName: toStr(doc.displayName, "displayName"),
    nickName: toStr(doc.nickName, "nickName"),
    profileUrl: toStr(doc.profileUrl, "profileUrl"),
    userType: toStr(doc.userType, "userType"),
    title: toStr(doc.title, "title"),
    preferredLanguage: toStr(doc.preferredLanguage, "preferredLanguage"),
    locale: toStr(doc.locale, "locale"),
    timezone: toStr(doc.timezone, "timezone"),
    active: doc.active === undefined || doc.active === null ? true : toBool(doc.active, "active"),
    emails: contacts("emails", doc.emails),
    phoneNumbers: contacts("phoneNumbers", doc.phoneNumbers),
    addresses: addresses(doc.addresses),
    ...(password !== null ? { password } : {}),
  };
}

function compact<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) out[k as keyof T] = v as T[keyof T];
  return out;
}

/** The attributes of a stored user as a SCIM document (no schemas/id/meta): what PATCH operates on. */
export function toScimDocument(r: ScimUserRecord): ScimDoc {
  const name = compact({
    formatted: r.nameFormatted,
    familyName: r.familyName,
    givenName: r.givenName,
    middleName: r.middleName,
    honorificPrefix: r.honorificPrefix,
    honorificSuffix: r.honorificSuffix,
  });
  return compact({
    userName: r.username,
    externalId: r.externalId,
    name: Object.keys(name).length ? name : undefined,
    displayName: r.displayName,
    nickName: r.nickName,
    profileUrl: r.profileUrl,
    emails: r.emails.length ? r.emails.map((e) => compact({ ...e })) : undefined,
    phoneNumbers: r.phoneNumbers.length ? r.phoneNumbers.map((e) => compact({ ...e })) : undefined,
    addresses: r.addresses.length ? r.addresses.map((a) => compact({ ...a })) : undefined,
    userType: r.userType,
    title: r.title,
    preferredLanguage: r.preferredLanguage,
    locale: r.locale,
    timezone: r.timezone,
    active: r.active,
  });
}

export function location(base: string, id: string): string {
  return `${base}/Users/${encodeURIComponent(id)}`;
}

/** The User resource as returned. `base` is the absolute `/scim/v2/{orgId}` URL. */
export function toResource(r: ScimUserRecord, base: string): ScimDoc {
  return {
    schemas: [USER_URN],
    id: r.id,
    ...toScimDocument(r),
    meta: { resourceType: "User", created: r.createdAt.toISOString(), lastModified: r.updatedAt.toISOString(), location: location(base, r.id) },
  };
}
