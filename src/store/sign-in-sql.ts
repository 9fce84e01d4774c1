// The pieces the sign-in hot paths (CreateSession, CreateCallback, the authorization code and refresh grants) join
// into their one read per request: the user with its organization's state, the session a sign-in links to, the
// project gates of the user, the settings of the user's organization. Each read is one prepared statement on the
// driver, its row handed back as one JSON text (queryJson in sql.ts): a round trip, Prisma's runtime and the
// driver's work per column cost more than everything the database does for these joins.

import { Prisma } from "../../gen/prisma/client.js";
import type { UserInfoSource } from "../domain/oauth/resolve.js";
import type { ReadyFactors, SessionRow, SessionUserRow } from "./sessions.js";

/** Timestamps of reads through queryJson (sql.ts) are ISO text; the embedded database may hand them back as text too. */
export const asDate = (v: Date | string): Date => (v instanceof Date ? v : new Date(v));

/** bytea of a read through queryJson: "\x" and hex. */
export const bytesOf = (v: Uint8Array | string): Uint8Array => (typeof v === "string" ? Buffer.from(v.slice(2), "hex") : v);
const asDateOrNull = (v: Date | string | null): Date | null => (v === null ? null : asDate(v));

/**
 * Whether the user `userId` of `orgId` passes the gates of project `p`: with authorizationRequired it holds an active
 * grant of one of the project's roles; with projectAccessRequired its organization owns the project or holds an active
 * project grant of it.
 */
export function gateAllowed(p: Prisma.Sql, userId: Prisma.Sql, orgId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(NOT ${p}."authorizationRequired" OR EXISTS (
      SELECT 1 FROM "UserGrant" ug LEFT JOIN "ProjectGrant" g ON g."id" = ug."projectGrantId"
      WHERE ug."projectId" = ${p}."id" AND ug."userId" = ${userId} AND ug."state" = 'ACTIVE' AND (g."id" IS NULL OR g."state" = 'ACTIVE')))
    AND (NOT ${p}."projectAccessRequired" OR ${p}."orgId" = ${orgId} OR EXISTS (
      SELECT 1 FROM "ProjectGrant" g WHERE g."projectId" = ${p}."id" AND g."grantedOrgId" = ${orgId} AND g."state" = 'ACTIVE'))`;
}

/** The instance's projects among `ids` as a JSON array of [id, allowed] pairs (see gateAllowed). */
export function gatesJson(ids: Prisma.Sql, instanceId: Prisma.Sql, userId: Prisma.Sql, orgId: Prisma.Sql): Prisma.Sql {
  const p = Prisma.raw("gp");
  return Prisma.sql`COALESCE((SELECT json_agg(json_build_array(gp."id", ${gateAllowed(p, userId, orgId)}))
    FROM "Project" gp WHERE gp."id" = ANY(${ids}) AND gp."instanceId" = ${instanceId}), '[]'::json)`;
}

/** The gates of a gatesJson column: project id → allowed (projects not of the instance are absent). */
export const gatesOf = (json: unknown): Map<string, boolean> => new Map((json as [string, boolean][]).map(([id, allowed]) => [id, allowed]));

/** The user a token is issued to: what the grant checks (state, organization state) and the ID token's claims. */
/** The user of a grant: what its claims are made of, and what says whether it may still have tokens. */
export interface GrantUserRow extends UserInfoSource {
  instanceId: string;
  state: string;
  org: { state: string };
}

/** GrantUserRow's columns of user `u` and organization `o`, each named u_<column>. */
export const GRANT_USER_COLUMNS = Prisma.sql`u."id" AS "u_id", u."instanceId" AS "u_instanceId", u."orgId" AS "u_orgId",
  u."state"::text AS "u_state", u."username" AS "u_username", u."givenName" AS "u_givenName", u."familyName" AS "u_familyName",
  u."nickName" AS "u_nickName", u."displayName" AS "u_displayName", u."preferredLanguage" AS "u_preferredLanguage",
  u."email" AS "u_email", u."emailVerified" AS "u_emailVerified", u."phone" AS "u_phone", u."phoneVerified" AS "u_phoneVerified",
  u."updatedAt" AS "u_updatedAt", o."state"::text AS "u_orgState"`;

type Prefixed = Record<string, unknown>;

export function grantUserOf(r: Prefixed): GrantUserRow | null {
  if (r.u_id === null || r.u_id === undefined) return null;
  return {
    id: r.u_id as string,
    instanceId: r.u_instanceId as string,
    orgId: r.u_orgId as string,
    state: r.u_state as string,
    username: r.u_username as string,
    givenName: r.u_givenName as string | null,
    familyName: r.u_familyName as string | null,
    nickName: r.u_nickName as string | null,
    displayName: r.u_displayName as string | null,
    preferredLanguage: r.u_preferredLanguage as string | null,
    email: r.u_email as string | null,
    emailVerified: r.u_emailVerified as boolean,
    phone: r.u_phone as string | null,
    phoneVerified: r.u_phoneVerified as boolean,
    updatedAt: asDate(r.u_updatedAt as Date),
    org: { state: r.u_orgState as string },
  };
}

/** What a sign-in needs of the session it links to: its user and the verification time of each factor. */
export type LinkSessionRow = Pick<
  SessionRow,
  | "id"
  | "userId"
  | "orgId"
  | "userCheckedAt"
  | "passwordCheckedAt"
  | "passwordChangeRequired"
  | "totpCheckedAt"
  | "otpEmailCheckedAt"
  | "webauthnCheckedAt"
  | "webauthnUserVerified"
  | "intentCheckedAt"
  | "expiresAt"
>;

/** LinkSessionRow's columns of session `s`, each named s_<column>. */
export const LINK_SESSION_COLUMNS = Prisma.sql`s."id" AS "s_id", s."userId" AS "s_userId", s."orgId" AS "s_orgId",
  s."userCheckedAt" AS "s_userCheckedAt", s."passwordCheckedAt" AS "s_passwordCheckedAt",
  s."passwordChangeRequired" AS "s_passwordChangeRequired", s."totpCheckedAt" AS "s_totpCheckedAt",
  s."otpEmailCheckedAt" AS "s_otpEmailCheckedAt", s."webauthnCheckedAt" AS "s_webauthnCheckedAt",
  s."webauthnUserVerified" AS "s_webauthnUserVerified", s."intentCheckedAt" AS "s_intentCheckedAt", s."expiresAt" AS "s_expiresAt"`;

export function linkSessionOf(r: Prefixed): LinkSessionRow | null {
  if (r.s_id === null || r.s_id === undefined) return null;
  return {
    id: r.s_id as string,
    userId: r.s_userId as string | null,
    orgId: r.s_orgId as string | null,
    userCheckedAt: asDateOrNull(r.s_userCheckedAt as Date | null),
    passwordCheckedAt: asDateOrNull(r.s_passwordCheckedAt as Date | null),
    passwordChangeRequired: r.s_passwordChangeRequired as boolean,
    totpCheckedAt: asDateOrNull(r.s_totpCheckedAt as Date | null),
    otpEmailCheckedAt: asDateOrNull(r.s_otpEmailCheckedAt as Date | null),
    webauthnCheckedAt: asDateOrNull(r.s_webauthnCheckedAt as Date | null),
    webauthnUserVerified: r.s_webauthnUserVerified as boolean,
    intentCheckedAt: asDateOrNull(r.s_intentCheckedAt as Date | null),
    expiresAt: asDateOrNull(r.s_expiresAt as Date | null),
  };
}

/** SessionUserRow's columns of user `u` and organization `o`, each named u_<column>. */
export const SESSION_USER_COLUMNS = Prisma.sql`u."id" AS "u_id", u."orgId" AS "u_orgId", u."type"::text AS "u_type", u."state"::text AS "u_state",
  u."username" AS "u_username", u."displayName" AS "u_displayName", u."givenName" AS "u_givenName", u."familyName" AS "u_familyName",
  u."passwordChangeRequired" AS "u_passwordChangeRequired", u."passwordChangedAt" AS "u_passwordChangedAt",
  o."state"::text AS "u_orgState", o."primaryDomain" AS "u_orgPrimaryDomain"`;

export function sessionUserOf(r: Prefixed): SessionUserRow | null {
  if (r.u_id === null || r.u_id === undefined) return null;
  return {
    id: r.u_id as string,
    orgId: r.u_orgId as string,
    type: r.u_type as SessionUserRow["type"],
    state: r.u_state as SessionUserRow["state"],
    username: r.u_username as string,
    displayName: r.u_displayName as string | null,
    givenName: r.u_givenName as string | null,
    familyName: r.u_familyName as string | null,
    passwordChangeRequired: r.u_passwordChangeRequired as boolean,
    passwordChangedAt: asDateOrNull(r.u_passwordChangedAt as Date | null),
    org: { state: r.u_orgState as SessionUserRow["org"]["state"], primaryDomain: r.u_orgPrimaryDomain as string },
  };
}

/** A stored setting of some kind of an organization or the instance (what effectiveOf reads). */
export interface StoredSettingValue {
  ownerId: string;
  kind: string;
  value: unknown;
}

/**
 * The stored settings of `kinds` of the organization of user `u` and of its instance, as a JSON array (column
 * "settings"): the settings a sign-in applies, read with the user.
 */
export function settingsJson(kinds: readonly string[], instanceId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`COALESCE((SELECT json_agg(json_build_object('ownerId', st."ownerId", 'kind', st."kind", 'value', st."value"))
    FROM "Setting" st WHERE st."instanceId" = ${instanceId} AND st."kind" = ANY(${[...kinds]}::text[]) AND st."ownerId" IN (u."orgId", ${instanceId})),
    '[]'::json) AS "settings"`;
}

/** Which second factors user `u` has ready (ReadyFactors), each named f_<factor>. */
export const READY_FACTOR_COLUMNS = Prisma.sql`EXISTS (SELECT 1 FROM "UserTotp" t WHERE t."userId" = u."id" AND t."verifiedAt" IS NOT NULL) AS "f_totp",
  u."otpEmailAddedAt" IS NOT NULL AS "f_otpEmail",
  (SELECT count(*)::int FROM "Passkey" pk WHERE pk."userId" = u."id" AND pk."verifiedAt" IS NOT NULL) AS "f_passkeys"`;

/** What finishing a sign-in checks about its user: the user, the settings of its organization, its second factors. */
export interface SignInFacts {
  user: SessionUserRow;
  settings: StoredSettingValue[];
  ready: ReadyFactors;
}

/** The settings a finished sign-in applies (assertSignInComplete). */
export const SIGN_IN_SETTING_KINDS = ["login", "password_expiry"] as const;

export function signInFactsOf(r: Prefixed): SignInFacts | null {
  const user = sessionUserOf(r);
  if (!user) return null;
  return {
    user,
    settings: r.settings as StoredSettingValue[],
    ready: { totp: r.f_totp as boolean, otpEmail: r.f_otpEmail as boolean, passkeys: r.f_passkeys as number },
  };
}

/** What a session's checks read about its user besides SessionUserRow: the password check's state and the settings. */
export interface UserChecks {
  passwordHash: string | null;
  failedPasswordAttempts: number;
  lockedAt: Date | null;
  /** Stored settings of CHECK_SETTING_KINDS of the user's organization and instance. */
  settings: StoredSettingValue[];
}

/** A session's user as a user check finds it, with what the factor checks then read. */
export interface SignInUser {
  user: SessionUserRow;
  checks: UserChecks;
}

/** The settings a session's checks apply: which factors are allowed, password expiry, the lockout policy. */
export const CHECK_SETTING_KINDS = ["login", "password_expiry", "lockout"] as const;

/** SessionUserRow's and UserChecks' columns of user `u` and organization `o` (settings of the instance `instanceId`). */
export function signInUserColumns(instanceId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`${SESSION_USER_COLUMNS}, u."passwordHash" AS "c_passwordHash", u."failedPasswordAttempts" AS "c_failedPasswordAttempts",
    u."lockedAt" AS "c_lockedAt", ${settingsJson(CHECK_SETTING_KINDS, instanceId)}`;
}

export function signInUserOf(r: Prefixed): SignInUser | null {
  const user = sessionUserOf(r);
  if (!user) return null;
  return {
    user,
    checks: {
      passwordHash: r.c_passwordHash as string | null,
      failedPasswordAttempts: r.c_failedPasswordAttempts as number,
      lockedAt: asDateOrNull(r.c_lockedAt as Date | null),
      settings: r.settings as StoredSettingValue[],
    },
  };
}
