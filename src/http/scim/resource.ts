// The SCIM User resource (RFC 7643 §4.1) ⇄ the domain's ScimUserInput /
// ScimUserRecord. Attribute names are matched case-insensitively (RFC 7643
// §2.1); read-only attributes in a request are ignored; wrong types are
// invalidValue.
import type { ScimUserInput, ScimUserRecord } from "../../domain/identity/scim-users.js";
import type { AddressInput, ContactInput } from "../../domain/identity/users.js";
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

/** Sets `key` on `out` unless the value is null or undefined (SCIM leaves unassigned attributes out). */
function put(out: ScimDoc, key: string, v: unknown): void {
  if (v !== null && v !== undefined) out[key] = v;
}

function compact(o: object): ScimDoc {
  const out: ScimDoc = {};
  for (const k in o) put(out, k, (o as ScimDoc)[k]);
  return out;
}

/** The attributes of a stored user as a SCIM document (no schemas/id/meta): what PATCH operates on. */
export function toScimDocument(r: ScimUserRecord): ScimDoc {
  const doc: ScimDoc = {};
  put(doc, "userName", r.username);
  put(doc, "externalId", r.externalId);
  const name: ScimDoc = {};
  put(name, "formatted", r.nameFormatted);
  put(name, "familyName", r.familyName);
  put(name, "givenName", r.givenName);
  put(name, "middleName", r.middleName);
  put(name, "honorificPrefix", r.honorificPrefix);
  put(name, "honorificSuffix", r.honorificSuffix);
  for (const _ in name) {
    doc.name = name;
    break;
  }
  put(doc, "displayName", r.displayName);
  put(doc, "nickName", r.nickName);
  put(doc, "profileUrl", r.profileUrl);
  if (r.emails.length) doc.emails = r.emails.map(compact);
  if (r.phoneNumbers.length) doc.phoneNumbers = r.phoneNumbers.map(compact);
  if (r.addresses.length) doc.addresses = r.addresses.map(compact);
  put(doc, "userType", r.userType);
  put(doc, "title", r.title);
  put(doc, "preferredLanguage", r.preferredLanguage);
  put(doc, "locale", r.locale);
  put(doc, "timezone", r.timezone);
  doc.active = r.active;
  return doc;
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
