// Users: the one implementation behind CreateUser/GetUserByID/ListUsers/
// UpdateUser/DeleteUser (and, later, the SCIM adapter). State changes,
// passwords, metadata and machine credentials live beside it in user-*.ts.

import { Prisma } from "../../../gen/prisma/client.js";
import { hashPassword, importedHashFormat } from "../../crypto/passwords.js";
import type { Store } from "../../store/index.js";
import { query, sqlError, statement } from "../../store/sql.js";
import { authorize, holds, type Permission } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { alreadyExists, DomainError, failedPrecondition, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { ID_PATTERN, newId } from "../ids.js";
import { checkIamOwnerKept, iamOwnersLock, keepActiveOrgOwners, lockTx } from "../orgs/members.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";

export type UserState = "ACTIVE" | "INACTIVE" | "LOCKED" | "INITIAL";
export type UserType = "HUMAN" | "MACHINE";

export interface UserView {
  id: string;
  orgId: string;
  type: UserType;
  state: UserState;
  username: string;
  loginNames: string[];
  preferredLoginName: string;
  givenName: string | null;
  familyName: string | null;
  nickName: string | null;
  displayName: string | null;
  preferredLanguage: string | null;
  gender: number;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
  passwordChangeRequired: boolean;
  passwordChangedAt: Date | null;
  machineName: string | null;
  description: string | null;
  accessTokenType: "BEARER" | "JWT";
  /** A machine user has a client secret (never the secret itself). */
  hasSecret: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const userNotFound = () => notFound("Errors.User.NotFound", "user not found");

const USER_SELECT = {
  id: true,
  orgId: true,
  type: true,
  state: true,
  username: true,
  givenName: true,
  familyName: true,
  nickName: true,
  displayName: true,
  preferredLanguage: true,
  gender: true,
  email: true,
  emailVerified: true,
  phone: true,
  phoneVerified: true,
  passwordChangeRequired: true,
  passwordChangedAt: true,
  machineName: true,
  description: true,
  accessTokenType: true,
  // Whether a secret exists, never its hash.
  secretCreatedAt: true,
  createdAt: true,
  updatedAt: true,
  org: { select: { primaryDomain: true } },
} satisfies Prisma.UserSelect;

/** USER_SELECT as one SQL statement over `u` and its organization `o`, for reads on the driver (src/store/sql.ts). */
export const USER_VIEW_FROM = Prisma.sql`
  SELECT u."id", u."orgId", u."type"::text AS "type", u."state"::text AS "state", u."username", u."givenName", u."familyName",
    u."nickName", u."displayName", u."preferredLanguage", u."gender", u."email", u."emailVerified", u."phone", u."phoneVerified",
    u."passwordChangeRequired", u."passwordChangedAt", u."machineName", u."description", u."accessTokenType"::text AS "accessTokenType",
    u."secretCreatedAt" IS NOT NULL AS "hasSecret", u."createdAt", u."updatedAt", o."primaryDomain"
  FROM "User" u JOIN "Organization" o ON o."id" = u."orgId"`;

export type UserViewRow = Omit<UserView, "loginNames" | "preferredLoginName" | "passwordChangedAt" | "createdAt" | "updatedAt"> & {
  primaryDomain: string;
  passwordChangedAt: Date | string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
};

/** The embedded database may hand timestamps back as text. */
const asDate = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

/** Field by field (not a spread): one object shape for every user, which keeps a 1,000-row page cheap to build. */
export function viewFromRow(r: UserViewRow): UserView {
  const loginName = `${r.username}@${r.primaryDomain}`;
  return {
    id: r.id,
    orgId: r.orgId,
    type: r.type,
    state: r.state,
    username: r.username,
    loginNames: [loginName],
    preferredLoginName: loginName,
    givenName: r.givenName,
    familyName: r.familyName,
    nickName: r.nickName,
    displayName: r.displayName,
    preferredLanguage: r.preferredLanguage,
    gender: r.gender,
    email: r.email,
    emailVerified: r.emailVerified,
    phone: r.phone,
    phoneVerified: r.phoneVerified,
    passwordChangeRequired: r.passwordChangeRequired,
    passwordChangedAt: r.passwordChangedAt === null ? null : asDate(r.passwordChangedAt),
    machineName: r.machineName,
    description: r.description,
    accessTokenType: r.accessTokenType,
    hasSecret: r.hasSecret,
    createdAt: asDate(r.createdAt),
    updatedAt: asDate(r.updatedAt),
  };
}

// ---------------------------------------------------------------- access

const TARGET_SELECT = { id: true, orgId: true, type: true, state: true, username: true } satisfies Prisma.UserSelect;
export type TargetUser = Prisma.UserGetPayload<{ select: typeof TARGET_SELECT }>;

/**
 * Loads a user of the instance that the caller wants to act on and checks
 * `permission` in the user's organization. A caller without membership
 * there gets NotFound; acting on oneself never hides the user, and with
 * `selfAllowed` needs no role at all.
 */
export async function targetUser(ctx: Ctx, userId: string, permission: Permission, opts: { selfAllowed?: boolean } = {}): Promise<TargetUser> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await ctx.db.user.findFirst({ where: { id: userId, instanceId: ctx.instanceId }, select: TARGET_SELECT });
  if (!user) throw userNotFound();
  const self = user.id === ctx.principal.userId;
  if (self && opts.selfAllowed) return user;
  authorize(ctx, permission, user.orgId, self ? undefined : userNotFound);
  return user;
}

// ---------------------------------------------------------------- create

export interface CreateUserInput {
  orgId: string;
  userId?: string;
  username?: string;
  human?: {
    givenName: string;
    familyName: string;
    nickName?: string;
    displayName?: string;
    preferredLanguage?: string;
    gender?: number;
    email: string;
    emailVerified: boolean;
    phone?: string;
    phoneVerified?: boolean;
    password?: { password: string; changeRequired: boolean };
    hashedPassword?: { hash: string; changeRequired: boolean };
  };
  machine?: { name: string; description?: string; accessTokenType: "BEARER" | "JWT" };
  metadata?: { key: string; value: Uint8Array }[];
  /**
   * A SCIM provisioning create: the profile is the SCIM one (names and the
   * email become optional, the multi-valued attributes replace email/phone).
   */
  scim?: ScimProfile & { active: boolean; externalId?: string | null; provisionerId: string; password?: string };
}

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

/** The SCIM User attributes stored on the user row and its child rows (RFC 7643 §4.1). */
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

export function validateUsername(username: string): string {
  const v = text(username, "username", { required: true }) as string;
  if (/\s/.test(v)) throw invalidArgument("Errors.User.Username.Invalid", "username must not contain whitespace", { field: "username" });
  return v;
}

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

/** Rows of the multi-valued attributes, validated, positions kept, at most one primary. */
export interface ProfileRows {
  emails: Omit<Prisma.UserEmailCreateManyInput, "userId">[];
  phoneNumbers: Omit<Prisma.UserPhoneCreateManyInput, "userId">[];
  addresses: Omit<Prisma.UserAddressCreateManyInput, "userId">[];
}

/**
 * Validates a SCIM profile into user columns and child rows. The primary
 * email and phone (or the first entry when none is marked) are the user's
 * email and phone as the v2 API shows them.
 */
export function scimProfileColumns(p: ScimProfile): { columns: Prisma.UserUncheckedUpdateInput; rows: ProfileRows } {
  const opt = (v: string | null | undefined, field: string, max?: number) => text(v ?? undefined, field, { max }) ?? null;
  const columns: Prisma.UserUncheckedUpdateInput = {
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
  };
  const profileUrl = opt(p.profileUrl, "profile_url", 2000);
  if (profileUrl !== null) {
    let ok = false;
    try {
      const u = new URL(profileUrl);
      ok = u.protocol === "http:" || u.protocol === "https:";
    } catch {}
    if (!ok) throw invalidArgument("Errors.User.ProfileUrl.Invalid", "profileUrl must be an http or https URL", { field: "profileUrl" });
  }
  columns.profileUrl = profileUrl;
  if (columns.preferredLanguage && !LANGUAGE.test(columns.preferredLanguage as string)) {
    throw invalidArgument("Errors.User.PreferredLanguage.Invalid", "preferredLanguage must be a BCP 47 language tag", { field: "preferredLanguage" });
  }
  if (columns.locale && !LOCALE.test(columns.locale as string)) {
    throw invalidArgument("Errors.User.Locale.Invalid", "locale must be a BCP 47 language tag", { field: "locale" });
  }
  if (columns.timezone && !validTimezone(columns.timezone as string)) {
    throw invalidArgument("Errors.User.Timezone.Invalid", "timezone must be an IANA time zone name", { field: "timezone" });
  }
  const onePrimary = (entries: { primary: boolean }[], field: string) => {
    if (entries.length > MAX_CHILD_ROWS) throw invalidArgument(`Errors.User.${field}.TooMany`, `at most ${MAX_CHILD_ROWS} ${field} entries`, { field });
    if (entries.filter((e) => e.primary).length > 1)
      throw invalidArgument(`Errors.User.${field}.PrimaryTwice`, `at most one of ${field} is primary`, { field });
  };
  onePrimary(p.emails, "emails");
  onePrimary(p.phoneNumbers, "phoneNumbers");
  onePrimary(p.addresses, "addresses");
  const emails = p.emails.map((e, position) => {
    const value = text(e.value, "email", { required: true, max: 320 }) as string;
    if (!EMAIL.test(value)) throw invalidArgument("Errors.User.Email.Invalid", "email is not a valid address", { field: "emails" });
    return { id: newId(), position, value, type: opt(e.type, "email_type", 50), display: opt(e.display, "email_display"), primary: e.primary };
  });
  const phoneNumbers = p.phoneNumbers.map((e, position) => {
    const value = text(e.value, "phone", { required: true, max: 50 }) as string;
    return { id: newId(), position, value, type: opt(e.type, "phone_type", 50), display: opt(e.display, "phone_display"), primary: e.primary };
  });
  const addresses = p.addresses.map((a, position) => ({
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
  }));
  const primaryEmail = emails.find((e) => e.primary) ?? emails[0];
  const primaryPhone = phoneNumbers.find((e) => e.primary) ?? phoneNumbers[0];
  columns.email = primaryEmail?.value ?? null;
  columns.phone = primaryPhone?.value ?? null;
  return { columns, rows: { emails, phoneNumbers, addresses } };
}

/** Like text() but keeps line breaks (an address's `formatted`). */
function multiline(value: string | null | undefined, field: string): string | null {
  const v = value?.trim();
  if (!v) return null;
  if (v.length > 1000) throw invalidArgument(`Errors.User.${field}.TooLong`, `${field} must be at most 1000 characters`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters other than line breaks and tabs are rejected
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v))
    throw invalidArgument(`Errors.User.${field}.Invalid`, `${field} contains control characters`, { field });
  return v;
}

export function validExternalId(value: string | null | undefined): string | null {
  return text(value ?? undefined, "externalId", { max: 200 }) ?? null;
}

export async function createUser(ctx: Ctx, input: CreateUserInput): Promise<{ id: string; createdAt: Date; prepared: PreparedUser }> {
  if (!input.orgId) throw invalidArgument("Errors.User.Org.Missing", "organization_id is required", { field: "organization_id" });
  authorize(ctx, "user.write", input.orgId, () => notFound("Errors.Org.NotFound", "organization not found"));
  const prepared = await prepareUser(ctx, input, input.orgId);
  // One statement, atomic on its own; it also checks that the organization exists.
  await insertUser(ctx, undefined, prepared);
  return { id: prepared.data.id as string, createdAt: prepared.data.createdAt as Date, prepared };
}

export interface PreparedUser {
  data: Prisma.UserUncheckedCreateInput;
  metadata: { key: string; value: Uint8Array<ArrayBuffer> }[];
  rows: ProfileRows;
  externalId?: { provisionerId: string; externalId: string };
}

/**
 * Validates a new user and hashes its password: the slow part, kept out of
 * any transaction. Checks no permission: callers authorize first.
 */
export async function prepareUser(ctx: Ctx, input: CreateUserInput, orgId: string): Promise<PreparedUser> {
  if ([input.human, input.machine, input.scim].filter(Boolean).length !== 1) {
    throw invalidArgument("Errors.User.Type.Missing", "exactly one of human or machine is required");
  }
  if (input.userId !== undefined && !ID_PATTERN.test(input.userId)) {
    throw invalidArgument("Errors.User.Id.Invalid", "user_id must be 1-200 characters of letters, digits, '_', '.', '@' or '-'", { field: "user_id" });
  }
  const id = input.userId ?? newId();
  const now = ctx.clock();
  const data: Prisma.UserUncheckedCreateInput = {
    id,
    instanceId: ctx.instanceId,
    orgId,
    type: "HUMAN",
    username: "",
    usernameLower: "",
    createdAt: now,
    updatedAt: now,
  };

  let rows: ProfileRows = { emails: [], phoneNumbers: [], addresses: [] };
  let externalId: { provisionerId: string; externalId: string } | undefined;
  if (input.scim) {
    const sc = input.scim;
    const profile = scimProfileColumns(sc);
    Object.assign(data, profile.columns);
    rows = profile.rows;
    // The provisioner holds user.write, which is what marks an address as verified in the v2 API too.
    data.emailVerified = data.email != null;
    data.username = validateUsername(input.username ?? "");
    if (sc.password !== undefined) {
      checkPassword(sc.password, await passwordComplexity(ctx, orgId));
      data.passwordHash = await hashPassword(sc.password);
      data.passwordChangedAt = now;
    }
    data.state = !sc.active ? "INACTIVE" : data.passwordHash ? "ACTIVE" : "INITIAL";
    const ext = validExternalId(sc.externalId);
    if (ext) externalId = { provisionerId: sc.provisionerId, externalId: ext };
  } else if (input.human) {
    const h = input.human;
    data.givenName = text(h.givenName, "given_name", { required: true });
    data.familyName = text(h.familyName, "family_name", { required: true });
    data.nickName = text(h.nickName, "nick_name");
    data.displayName = text(h.displayName, "display_name") ?? `${data.givenName} ${data.familyName}`;
    data.preferredLanguage = text(h.preferredLanguage, "preferred_language", { max: 35 });
    if (data.preferredLanguage && !LANGUAGE.test(data.preferredLanguage)) {
      throw invalidArgument("Errors.User.PreferredLanguage.Invalid", "preferred_language must be a BCP 47 language tag", { field: "preferred_language" });
    }
    data.gender = h.gender ?? 0;
    const email = text(h.email, "email", { required: true, max: 320 }) as string;
    if (!EMAIL.test(email)) throw invalidArgument("Errors.User.Email.Invalid", "email is not a valid address", { field: "email" });
    data.email = email;
    data.emailVerified = h.emailVerified;
    if (h.phone !== undefined) {
      const phone = text(h.phone, "phone", { max: 30 });
      if (phone && !PHONE.test(phone)) throw invalidArgument("Errors.User.Phone.Invalid", "phone is not a valid number", { field: "phone" });
      data.phone = phone;
      data.phoneVerified = h.phoneVerified ?? false;
    }
    if (h.password && h.hashedPassword) throw invalidArgument("Errors.User.Password.Ambiguous", "give either password or hashed_password");
    if (h.password) {
      checkPassword(h.password.password, await passwordComplexity(ctx, orgId));
      data.passwordHash = await hashPassword(h.password.password);
      data.passwordChangeRequired = h.password.changeRequired;
      data.passwordChangedAt = now;
    } else if (h.hashedPassword) {
      if (!importedHashFormat(h.hashedPassword.hash)) {
        throw invalidArgument(
          "Errors.User.Password.HashUnsupported",
          "hashed_password must be an argon2, bcrypt, scrypt or PBKDF2 hash in PHC or modular crypt format",
          { field: "hashed_password" },
        );
      }
      data.passwordHash = h.hashedPassword.hash;
      data.passwordChangeRequired = h.hashedPassword.changeRequired;
      data.passwordChangedAt = now;
    }
    data.username = validateUsername(input.username ?? email);
    // A human without a password cannot sign in until one is set.
    data.state = data.passwordHash ? "ACTIVE" : "INITIAL";
    // The v2 email and phone are the primary entries of the SCIM emails / phoneNumbers.
    rows.emails.push({ id: newId(), position: 0, value: email, type: null, display: null, primary: true });
    if (data.phone) rows.phoneNumbers.push({ id: newId(), position: 0, value: data.phone, type: null, display: null, primary: true });
  } else if (input.machine) {
    const m = input.machine;
    data.type = "MACHINE";
    if (input.username === undefined) throw invalidArgument("Errors.User.Username.Missing", "username is required for a machine user", { field: "username" });
    data.username = validateUsername(input.username);
    data.machineName = text(m.name, "name", { required: true });
    data.description = text(m.description, "description", { max: 500 });
    data.accessTokenType = m.accessTokenType;
  }
  data.usernameLower = data.username.toLowerCase();

  const metadata = validMetadata(input.metadata ?? []);

  return { data, metadata, rows, externalId };
}

/** The User columns a create writes, every one of them every time: one statement text, prepared once per connection. */
const INSERT_COLUMNS = [
  "id",
  "instanceId",
  "orgId",
  "type",
  "state",
  "username",
  "usernameLower",
  "givenName",
  "familyName",
  "nickName",
  "displayName",
  "preferredLanguage",
  "gender",
  "middleName",
  "honorificPrefix",
  "honorificSuffix",
  "nameFormatted",
  "profileUrl",
  "userType",
  "title",
  "locale",
  "timezone",
  "email",
  "emailVerified",
  "phone",
  "phoneVerified",
  "passwordHash",
  "passwordChangeRequired",
  "passwordChangedAt",
  "machineName",
  "description",
  "accessTokenType",
  "createdAt",
  "updatedAt",
] as const;
const INSERT_DEFAULTS: Partial<Record<(typeof INSERT_COLUMNS)[number], unknown>> = {
  state: "ACTIVE",
  gender: 0,
  emailVerified: false,
  phoneVerified: false,
  passwordChangeRequired: false,
  accessTokenType: "BEARER",
};
/** Enum columns: a typed text parameter (Prisma's raw queries send text) needs the cast. */
const INSERT_CASTS: Partial<Record<(typeof INSERT_COLUMNS)[number], Prisma.Sql>> = {
  type: Prisma.raw('::"UserType"'),
  state: Prisma.raw('::"UserState"'),
  accessTokenType: Prisma.raw('::"AccessTokenType"'),
  gender: Prisma.raw("::int"),
  emailVerified: Prisma.raw("::boolean"),
  phoneVerified: Prisma.raw("::boolean"),
  passwordChangeRequired: Prisma.raw("::boolean"),
  passwordChangedAt: Prisma.raw("::timestamptz"),
  createdAt: Prisma.raw("::timestamptz"),
  updatedAt: Prisma.raw("::timestamptz"),
};
const INSERT_COLUMN_LIST = Prisma.raw(INSERT_COLUMNS.map((c) => `"${c}"`).join(", "));

/**
 * Writes a prepared user with its child rows (emails, phones, addresses,
 * metadata, the provisioner's externalId) and its audit event in ONE
 * statement: data-modifying CTEs, atomic on their own, one round trip. The
 * organization is checked in the same statement (none inserted: it does not
 * exist). With `tx`, the statement runs in that transaction instead.
 */
export async function insertUser(ctx: Ctx, tx: Store | undefined, p: PreparedUser): Promise<void> {
  const { data, metadata, rows } = p;
  const record = data as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (record[key] !== undefined && !(INSERT_COLUMNS as readonly string[]).includes(key)) throw new Error(`insertUser: column ${key} is not written`);
  }
  const value = (c: (typeof INSERT_COLUMNS)[number]) => Prisma.sql`${record[c] ?? INSERT_DEFAULTS[c] ?? null}${INSERT_CASTS[c] ?? Prisma.empty}`;
  const col = <T, K extends keyof T>(list: T[], k: K) => list.map((r) => (r[k] ?? null) as unknown);
  const { emails, phoneNumbers: phones, addresses } = rows;
  const sql = Prisma.sql`
    WITH o AS (SELECT "id" FROM "Organization" WHERE "id" = ${data.orgId} AND "instanceId" = ${data.instanceId}),
    u AS (INSERT INTO "User" (${INSERT_COLUMN_LIST}) SELECT ${Prisma.join(INSERT_COLUMNS.map(value))} FROM o RETURNING "id"),
    e AS (INSERT INTO "UserEmail" ("id", "userId", "position", "value", "type", "display", "primary")
      SELECT x.i, u."id", x.p, x.v, x.t, x.d, x.pr FROM u,
        unnest(${col(emails, "id")}::text[], ${col(emails, "position")}::int[], ${col(emails, "value")}::text[], ${col(emails, "type")}::text[],
          ${col(emails, "display")}::text[], ${emails.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, v, t, d, pr)),
    ph AS (INSERT INTO "UserPhone" ("id", "userId", "position", "value", "type", "display", "primary")
      SELECT x.i, u."id", x.p, x.v, x.t, x.d, x.pr FROM u,
        unnest(${col(phones, "id")}::text[], ${col(phones, "position")}::int[], ${col(phones, "value")}::text[], ${col(phones, "type")}::text[],
          ${col(phones, "display")}::text[], ${phones.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, v, t, d, pr)),
    a AS (INSERT INTO "UserAddress" ("id", "userId", "position", "type", "streetAddress", "locality", "region", "postalCode", "country", "formatted", "primary")
      SELECT x.i, u."id", x.p, x.t, x.s, x.l, x.r, x.z, x.c, x.f, x.pr FROM u,
        unnest(${col(addresses, "id")}::text[], ${col(addresses, "position")}::int[], ${col(addresses, "type")}::text[],
          ${col(addresses, "streetAddress")}::text[], ${col(addresses, "locality")}::text[], ${col(addresses, "region")}::text[],
          ${col(addresses, "postalCode")}::text[], ${col(addresses, "country")}::text[], ${col(addresses, "formatted")}::text[],
          ${addresses.map((r) => r.primary ?? false)}::boolean[]) AS x(i, p, t, s, l, r, z, c, f, pr)),
    m AS (INSERT INTO "UserMetadata" ("userId", "key", "value", "createdAt", "updatedAt")
      SELECT u."id", x.k, decode(x.v, 'base64'), ${data.createdAt}::timestamptz, ${data.createdAt}::timestamptz FROM u,
        unnest(${metadata.map((m) => m.key)}::text[], ${metadata.map((m) => Buffer.from(m.value).toString("base64"))}::text[]) AS x(k, v)),
    xid AS (INSERT INTO "ScimExternalId" ("userId", "orgId", "provisionerId", "externalId", "createdAt")
      SELECT u."id", ${data.orgId}, ${p.externalId?.provisionerId ?? null}::text, ${p.externalId?.externalId ?? null}::text, ${data.createdAt}::timestamptz
      FROM u WHERE ${p.externalId?.externalId ?? null}::text IS NOT NULL),
    ev AS (INSERT INTO "Event" ("id", "instanceId", "orgId", "aggregateType", "aggregateId", "type", "editorUserId", "payload", "createdAt")
      SELECT ${newId()}, ${ctx.instanceId}, ${data.orgId}, 'user', u."id", ${data.type === "MACHINE" ? "user.machine.added" : "user.human.added"},
        ${ctx.principal.userId ?? null}::text, ${JSON.stringify({
          username: data.username,
          email: data.email ?? undefined,
          metadataKeys: metadata.map((m) => m.key),
          ...(p.externalId ? { externalId: p.externalId.externalId, provisionerId: p.externalId.provisionerId } : {}),
        })}::jsonb, ${ctx.clock()}::timestamptz FROM u)
    SELECT count(*)::int AS "n" FROM u`;
  let inserted: { n: number }[];
  try {
    inserted = await query<{ n: number }>(tx?.db ?? ctx.db, statement(sql, "user_insert"));
  } catch (err) {
    throw mapUniqueViolation(err);
  }
  if (inserted[0]?.n !== 1) throw notFound("Errors.Org.NotFound", "organization not found");
}

/** Inserts the multi-valued attribute rows (one statement per kind, only when there are rows). */
export async function writeProfileRows(tx: Store, userId: string, rows: ProfileRows): Promise<void> {
  if (rows.emails.length) await tx.db.userEmail.createMany({ data: rows.emails.map((r) => ({ ...r, userId })) });
  if (rows.phoneNumbers.length) await tx.db.userPhone.createMany({ data: rows.phoneNumbers.map((r) => ({ ...r, userId })) });
  if (rows.addresses.length) await tx.db.userAddress.createMany({ data: rows.addresses.map((r) => ({ ...r, userId })) });
}

export const MAX_METADATA_PER_REQUEST = 100;

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
  return metadata;
}

export function mapUniqueViolation(err: unknown): unknown {
  const e = err as { code?: string; meta?: { target?: unknown; driverAdapterError?: { cause?: { constraint?: { fields?: string[] } } } } };
  // Prisma's own unique error, or a raw statement's SQLSTATE 23505 with the constraint's name.
  const raw = sqlError(err);
  if (e?.code !== "P2002" && raw.code !== "23505") return err;
  const fields = e?.code === "P2002" ? JSON.stringify(e.meta ?? {}) : (raw.constraint ?? JSON.stringify(err));
  if (fields.includes("usernameLower")) return alreadyExists("Errors.User.AlreadyExists", "a user with this username already exists");
  if (fields.includes("externalId")) return alreadyExists("Errors.User.ExternalIdTaken", "another user of this provisioner has this externalId");
  return alreadyExists("Errors.User.IdTaken", "a user with this id already exists");
}

// ---------------------------------------------------------------- read

/** One prepared statement on the driver: GetUserByID is among the most called reads. */
export async function getUser(ctx: Ctx, userId: string): Promise<UserView> {
  const [row] = await query<UserViewRow>(
    ctx.db,
    statement(Prisma.sql`${USER_VIEW_FROM} WHERE u."id" = ${userId} AND u."instanceId" = ${ctx.instanceId}`, "user_view_by_id"),
  );
  if (!row) throw userNotFound();
  if (row.id !== ctx.principal.userId) authorize(ctx, "user.read", row.orgId, userNotFound);
  return viewFromRow(row);
}

export interface UpdateUserInput {
  userId: string;
  username?: string;
  human?: {
    profile?: {
      givenName?: string;
      familyName?: string;
      nickName?: string;
      displayName?: string;
      preferredLanguage?: string;
      gender?: number;
    };
    email?: { email: string; isVerified: boolean };
    /** An empty phone removes the number. */
    phone?: { phone: string; isVerified: boolean };
  };
  machine?: { name?: string; description?: string; accessTokenType?: "BEARER" | "JWT" };
}

const GENDERS = new Set([0, 1, 2, 3]);

/**
 * Changes only the fields given. Users may change themselves without a role,
 * but marking an email or phone as verified takes user.write: otherwise a
 * user could vouch for an address it does not own.
 */
export async function updateUser(ctx: Ctx, input: UpdateUserInput): Promise<Date> {
  const target = await targetUser(ctx, input.userId, "user.write", { selfAllowed: true });
  if (input.human && target.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "the user is not a human user");
  if (input.machine && target.type !== "MACHINE") throw failedPrecondition("Errors.User.NotMachine", "the user is not a machine user");
  const current = await ctx.db.user.findUniqueOrThrow({ where: { id: target.id }, select: USER_SELECT });
  const mayVerify = () => holds(ctx, "user.write", target.orgId);

  const next: Prisma.UserUncheckedUpdateInput = {};
  if (input.username !== undefined) {
    next.username = validateUsername(input.username);
    next.usernameLower = next.username.toLowerCase();
  }
  const p = input.human?.profile;
  if (p) {
    if (p.givenName !== undefined) next.givenName = text(p.givenName, "given_name", { required: true });
    if (p.familyName !== undefined) next.familyName = text(p.familyName, "family_name", { required: true });
    if (p.nickName !== undefined) next.nickName = text(p.nickName, "nick_name") ?? null;
    if (p.displayName !== undefined) {
      next.displayName = text(p.displayName, "display_name") ?? `${next.givenName ?? current.givenName} ${next.familyName ?? current.familyName}`;
    }
    if (p.preferredLanguage !== undefined) {
      const language = text(p.preferredLanguage, "preferred_language", { max: 35 });
      if (language && !LANGUAGE.test(language)) {
        throw invalidArgument("Errors.User.PreferredLanguage.Invalid", "preferred_language must be a BCP 47 language tag", { field: "preferred_language" });
      }
      next.preferredLanguage = language ?? null;
    }
    if (p.gender !== undefined) {
      if (!GENDERS.has(p.gender)) throw invalidArgument("Errors.User.Gender.Invalid", "unknown gender", { field: "gender" });
      next.gender = p.gender;
    }
  }
  const e = input.human?.email;
  if (e) {
    const email = text(e.email, "email", { required: true, max: 320 }) as string;
    if (!EMAIL.test(email)) throw invalidArgument("Errors.User.Email.Invalid", "email is not a valid address", { field: "email" });
    if (e.isVerified && !mayVerify()) throw permissionDenied("Errors.User.Email.VerifyDenied", "marking an email as verified needs user.write");
    next.email = email;
    // Re-sending the current address does not undo its verification.
    if (e.isVerified || email !== current.email) next.emailVerified = e.isVerified;
  }
  const ph = input.human?.phone;
  if (ph) {
    const phone = text(ph.phone, "phone", { max: 30 });
    if (phone && !PHONE.test(phone)) throw invalidArgument("Errors.User.Phone.Invalid", "phone is not a valid number", { field: "phone" });
    if (phone && ph.isVerified && !mayVerify()) throw permissionDenied("Errors.User.Phone.VerifyDenied", "marking a phone as verified needs user.write");
    next.phone = phone ?? null;
    if (ph.isVerified || phone !== current.phone) next.phoneVerified = phone ? ph.isVerified : false;
  }
  const m = input.machine;
  if (m) {
    if (m.name !== undefined) next.machineName = text(m.name, "name", { required: true });
    if (m.description !== undefined) next.description = text(m.description, "description", { max: 500 }) ?? null;
    if (m.accessTokenType !== undefined) next.accessTokenType = m.accessTokenType;
  }

  // Only real changes are written and recorded: clients often send back what they read.
  const changed = Object.keys(next).filter((k) => k !== "usernameLower" && next[k as keyof typeof next] !== current[k as keyof typeof current]);
  if (changed.length === 0) return current.updatedAt;
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      await tx.auth.invalidate({ userId: target.id });
      await tx.db.user.update({ where: { id: target.id }, data: { ...next, updatedAt: now } });
      if (changed.includes("email")) await syncPrimaryRow(tx, "email", target.id, current.email, next.email as string);
      if (changed.includes("phone")) await syncPrimaryRow(tx, "phone", target.id, current.phone, (next.phone as string | null) ?? null);
      await recordEvent(ctx, tx, {
        aggregateType: "user",
        aggregateId: target.id,
        orgId: target.orgId,
        type: "user.changed",
        payload: { changed, username: next.username, email: next.email ?? undefined },
      });
    });
  } catch (err) {
    throw mapUniqueViolation(err);
  }
  return now;
}

/**
 * Keeps the SCIM emails / phoneNumbers rows in step with a v2 change of the
 * user's email or phone: the row holding the old value (the primary one,
 * which is what the v2 API shows) takes the new value; none given removes it.
 */
async function syncPrimaryRow(tx: Store, kind: "email" | "phone", userId: string, previous: string | null, value: string | null): Promise<void> {
  const table = (kind === "email" ? tx.db.userEmail : tx.db.userPhone) as unknown as typeof tx.db.userEmail;
  const rows = await table.findMany({ where: { userId }, orderBy: { position: "asc" }, select: { id: true, value: true, primary: true, position: true } });
  const row = rows.find((r) => r.primary) ?? rows.find((r) => r.value === previous);
  if (row && value === null) await table.delete({ where: { id: row.id } });
  else if (row && value !== null) await table.update({ where: { id: row.id }, data: { value } });
  else if (value !== null) {
    const position = rows.length ? Math.min(...rows.map((r) => r.position)) - 1 : 0;
    await table.create({ data: { id: newId(), userId, position, value, primary: true } });
  }
}

// ---------------------------------------------------------------- delete

export async function deleteUser(ctx: Ctx, userId: string): Promise<Date> {
  const user = await ctx.db.user.findFirst({ where: { id: userId, instanceId: ctx.instanceId }, select: { id: true, orgId: true, username: true } });
  if (!user) throw userNotFound();
  authorize(ctx, "user.delete", user.orgId, userNotFound);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: user.id });
    await keepAnActiveInstanceOwner(ctx, tx, user.id, "Errors.User.LastInstanceOwner", "the last active IAM_OWNER of the instance cannot be deleted");
    await keepActiveOrgOwners(tx, user.id, "Errors.User.LastOrgOwner", "the last active ORG_OWNER of an organization cannot be deleted");
    // Tokens, metadata and memberships go with the user (ON DELETE CASCADE). A concurrent delete got there
    // first when nothing is left to delete: the same NotFound as if this request had come second.
    const { count } = await tx.db.user.deleteMany({ where: { id: user.id } });
    if (count === 0) throw userNotFound();
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.removed", payload: { username: user.username } });
  });
  return now;
}

/**
 * The instance must keep an IAM_OWNER that can act (an active user of an
 * active organization) when `userId` loses its access. Takes the same
 * advisory lock as instance member changes, so two administrators taking
 * each other's access at the same moment cannot both succeed.
 */
export async function keepAnActiveInstanceOwner(ctx: Ctx, tx: Store, userId: string, errorId: string, message: string): Promise<void> {
  await lockTx(tx, iamOwnersLock(ctx.instanceId));
  await checkIamOwnerKept(ctx, tx, { userId }, message, errorId);
}

export function isDomainError(err: unknown): err is DomainError {
  return err instanceof DomainError;
}
