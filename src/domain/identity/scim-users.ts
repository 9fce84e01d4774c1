// The SCIM side of users: the full resource (profile, multi-valued rows and
// the provisioner's externalId) read, listed, replaced and deleted. Creation
// goes through users.ts createUser like the v2 CreateUser; a PATCH is applied
// by the adapter to the current resource and stored with replaceScimUser.
import type { Prisma } from "../../../gen/prisma/client.js";
import { hashPassword } from "../../crypto/passwords.js";
import { authorizeOverRoles } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";
import { iamOwnersLock, keepActiveOrgOwners, lockTx } from "../orgs/members.js";
import { checkPassword, passwordComplexity } from "../settings/settings.js";
import { authorizeOrg, loadRecords, readBack, type ScimUserRecord, scimWhere, storableId } from "./scim-read.js";
import {
  createUser,
  deleteUser,
  keepAnActiveInstanceOwner,
  mapUniqueViolation,
  type ProfileRows,
  type ScimProfile,
  scimProfileColumns,
  type UserState,
  userNotFound,
  validateUsername,
  validExternalId,
  writeProfileRows,
} from "./users.js";

export type { ScimUserRecord } from "./scim-read.js";
export { authorizeOrg, getScimUser, listScimUsers, requireOrgMembership, type ScimListInput } from "./scim-read.js";

export interface ScimUserInput extends ScimProfile {
  username: string;
  externalId?: string | null;
  active: boolean;
  /** Write-only; absent keeps the current password. */
  password?: string;
}

/** A SCIM create ends in the same domain function as the v2 CreateUser. */
export async function createScimUser(ctx: Ctx, orgId: string, input: ScimUserInput): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.write", orgId);
  const { username, ...scim } = input;
  const { prepared } = await createUser(ctx, { orgId, username, scim: { ...scim, provisionerId: ctx.principal.userId } });
  // What was written is what a read would return: no second round trip.
  const d = prepared.data;
  const str = (v: unknown) => (v ?? null) as string | null;
  const contact = ({ value, type, display, primary }: ProfileRows["emails"][number]) => ({
    value,
    type: type ?? null,
    display: display ?? null,
    primary: primary ?? false,
  });
  return {
    id: d.id as string,
    orgId,
    username: d.username,
    externalId: prepared.externalId?.externalId ?? null,
    givenName: str(d.givenName),
    familyName: str(d.familyName),
    middleName: str(d.middleName),
    honorificPrefix: str(d.honorificPrefix),
    honorificSuffix: str(d.honorificSuffix),
    nameFormatted: str(d.nameFormatted),
    displayName: str(d.displayName),
    nickName: str(d.nickName),
    profileUrl: str(d.profileUrl),
    userType: str(d.userType),
    title: str(d.title),
    preferredLanguage: str(d.preferredLanguage),
    locale: str(d.locale),
    timezone: str(d.timezone),
    active: d.state !== "INACTIVE",
    emails: prepared.rows.emails.map(contact),
    phoneNumbers: prepared.rows.phoneNumbers.map(contact),
    addresses: prepared.rows.addresses.map(({ id: _id, position: _p, ...a }) => ({
      type: a.type ?? null,
      streetAddress: a.streetAddress ?? null,
      locality: a.locality ?? null,
      region: a.region ?? null,
      postalCode: a.postalCode ?? null,
      country: a.country ?? null,
      formatted: a.formatted ?? null,
      primary: a.primary ?? false,
    })),
    createdAt: d.createdAt as Date,
    updatedAt: d.updatedAt as Date,
  };
}

/** A whole new resource (PUT), or one computed from the current resource under the row lock (PATCH). */
export type ScimUserChange = ScimUserInput | ((current: ScimUserRecord) => ScimUserInput);

interface LockedUser {
  id: string;
  state: UserState;
  passwordHash: string | null;
  email: string | null;
  emailVerified: boolean;
  phone: string | null;
  phoneVerified: boolean;
}

/**
 * Replaces the whole resource (PUT, and the result of a PATCH): attributes
 * absent from the input are cleared, child rows rewritten, `active` moves the
 * user between INACTIVE and usable. One transaction with its audit events,
 * holding the user's row lock from the read of the current state to the
 * writes: concurrent PATCHes apply one after the other (none is lost), and a
 * DELETE in between makes the change a 404, never a half-written user.
 */
export async function replaceScimUser(ctx: Ctx, orgId: string, id: string, change: ScimUserChange): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.write", orgId);
  storableId(id);
  // Validated and a new password hashed before the transaction: the row lock is held only for the writes.
  const preview = typeof change === "function" ? change(await readBack(ctx, orgId, id)) : change;
  scimProfileColumns(preview);
  validateUsername(preview.username);
  validExternalId(preview.externalId);
  const hashes = new Map<string, string>();
  const hashOf = async (password: string): Promise<string> => {
    let hash = hashes.get(password);
    if (hash === undefined) {
      checkPassword(password, await passwordComplexity(ctx, orgId));
      hash = await hashPassword(password);
      hashes.set(password, hash);
    }
    return hash;
  };
  if (preview.password !== undefined) {
    // Setting another user's password takes the account over: only for callers who could grant its roles.
    await authorizeOverRoles(ctx, id);
    await hashOf(preview.password);
  }
  const provisionerId = ctx.principal.userId;
  const now = ctx.clock();
  try {
    await ctx.store.transaction(async (tx) => {
      // A deactivation takes the instance owners' lock; before the row lock, in deleteUser's order (no deadlock).
      if (!preview.active) await lockTx(tx, iamOwnersLock(ctx.instanceId));
      const [current] = await tx.db.$queryRaw<LockedUser[]>`
        SELECT "id", "state", "passwordHash", "email", "emailVerified", "phone", "phoneVerified" FROM "User"
        WHERE "id" = ${id} AND "instanceId" = ${ctx.instanceId} AND "orgId" = ${orgId} AND "type" = 'HUMAN' FOR UPDATE`;
      if (!current) throw userNotFound();
      let input = preview;
      if (typeof change === "function") {
        const [record] = await loadRecords(ctx, orgId, [id], tx.db);
        if (!record) throw userNotFound();
        input = change(record);
      }
      const { columns, rows } = scimProfileColumns(input);
      const username = validateUsername(input.username);
      const externalId = validExternalId(input.externalId);
      const passwordHash = input.password !== undefined ? await hashOf(input.password) : undefined;
      const deactivating = !input.active && current.state !== "INACTIVE";
      const reactivating = input.active && current.state === "INACTIVE";
      if (deactivating && id === ctx.principal.userId) throw failedPrecondition("Errors.User.DeactivateSelf", "a user cannot deactivate itself");
      const hasPassword = passwordHash !== undefined || current.passwordHash !== null;
      let state: UserState | undefined;
      if (deactivating) state = "INACTIVE";
      else if (reactivating) state = hasPassword ? "ACTIVE" : "INITIAL";
      else if (passwordHash && current.state === "INITIAL") state = "ACTIVE";

      const data: Prisma.UserUncheckedUpdateInput = {
        ...columns,
        username,
        usernameLower: username.toLowerCase(),
        // A changed address is verified again only through the provisioner, which holds user.write.
        emailVerified: columns.email === current.email ? current.emailVerified || columns.email != null : columns.email != null,
        phoneVerified: columns.phone === current.phone ? current.phoneVerified : false,
        updatedAt: now,
        ...(state ? { state } : {}),
        ...(reactivating ? { lockedAt: null, failedPasswordAttempts: 0, failedOtpAttempts: 0 } : {}),
        ...(passwordHash ? { passwordHash, passwordChangedAt: now, passwordChangeRequired: false } : {}),
      };
      if (deactivating) {
        await keepAnActiveInstanceOwner(ctx, tx, id, "Errors.User.LastInstanceOwner", "the last active IAM_OWNER of the instance cannot be deactivated");
        await keepActiveOrgOwners(tx, id, "Errors.User.LastOrgOwner", "the last active ORG_OWNER of an organization cannot be deactivated");
      }
      // A cached principal of this user (state, credentials) must not outlive the change.
      await tx.auth.invalidate({ userId: id });
      await tx.db.user.update({ where: { id }, data });
      await Promise.all([
        tx.db.userEmail.deleteMany({ where: { userId: id } }),
        tx.db.userPhone.deleteMany({ where: { userId: id } }),
        tx.db.userAddress.deleteMany({ where: { userId: id } }),
      ]);
      await writeProfileRows(tx, id, rows);
      if (externalId === null) await tx.db.scimExternalId.deleteMany({ where: { userId: id, provisionerId } });
      else
        await tx.db.scimExternalId.upsert({
          where: { userId_provisionerId: { userId: id, provisionerId } },
          create: { userId: id, orgId, provisionerId, externalId, createdAt: now },
          update: { externalId },
        });
      await recordEvent(ctx, tx, {
        aggregateType: "user",
        aggregateId: id,
        orgId,
        type: "user.changed",
        payload: { via: "scim", username, email: columns.email ?? undefined, externalId: externalId ?? undefined },
      });
      if (deactivating || reactivating) {
        await recordEvent(ctx, tx, {
          aggregateType: "user",
          aggregateId: id,
          orgId,
          type: deactivating ? "user.deactivated" : "user.reactivated",
          payload: { state },
        });
      }
      if (passwordHash) {
        await recordEvent(ctx, tx, {
          aggregateType: "user",
          aggregateId: id,
          orgId,
          type: "user.password.changed",
          payload: { changeRequired: false, verifiedBy: "administrator" },
        });
      }
    });
  } catch (err) {
    throw mapUniqueViolation(err);
  }
  return readBack(ctx, orgId, id);
}

export async function deleteScimUser(ctx: Ctx, orgId: string, id: string): Promise<void> {
  authorizeOrg(ctx, "user.delete", orgId);
  const user = await ctx.db.user.findFirst({ where: scimWhere(ctx, orgId, storableId(id)), select: { id: true } });
  if (!user) throw userNotFound();
  // A concurrent delete between the read and the delete is NotFound there too.
  await deleteUser(ctx, user.id);
}
