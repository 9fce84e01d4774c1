// SCIM PUT and PATCH: the whole resource replaced, in one transaction that
// runs the user commands (profile here; state from user-state.ts, password
// from user-passwords.ts) on the user's locked row. No rule is repeated here.

import type { LockedScimUser, ProfileRows } from "../../store/users.js";
import { authorizeOverRoles } from "../access/permissions.js";
import { recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { iamOwnersLock, lockTx } from "../orgs/members.js";
import { type ScimColumns, scimProfileColumns } from "./scim-profile.js";
import { authorizeOrg, loadRecords, readBack, type ScimUserRecord, storableId } from "./scim-read.js";
import type { ScimUserInput } from "./scim-users.js";
import { userNotFound } from "./user-access.js";
import { validateUsername, validExternalId } from "./user-input.js";
import { hashNewPassword, storePassword } from "./user-passwords.js";
import { changeState } from "./user-state.js";
import { claimUsername } from "./usernames.js";

/** A whole new resource (PUT), or one computed from the current resource under the row lock (PATCH). */
export type ScimUserChange = ScimUserInput | ((current: ScimUserRecord) => ScimUserInput);

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
  // Any change of a user holding roles the caller could not grant is refused (a deactivation, a new e-mail, ...).
  await authorizeOverRoles(ctx, { id, orgId });
  // Validated and a new password hashed before the transaction: the row lock is held only for the writes.
  const preview = typeof change === "function" ? change(await readBack(ctx, orgId, id)) : change;
  validScimProfile(preview);
  const passwords = passwordHasher(ctx, orgId);
  if (preview.password !== undefined) await passwords(preview.password);
  await ctx.store.transaction(async (tx) => {
    // A deactivation takes the instance owners' lock; before the row lock, in deleteUser's order (no deadlock).
    if (!preview.active) await lockTx(tx, iamOwnersLock(ctx.instanceId));
    const user = await tx.users.lockScimUser(ctx.instanceId, orgId, id);
    if (!user) throw userNotFound();
    let input = preview;
    if (typeof change === "function") {
      const [record] = await loadRecords(ctx, orgId, [id], tx);
      if (!record) throw userNotFound();
      input = change(record);
    }
    await applyScimUser({ ...ctx, store: tx }, user, input, passwords);
  });
  return readBack(ctx, orgId, id);
}

/**
 * The commands of one SCIM change on the locked user, in the transaction of `ctx.store`. A deactivation runs
 * first, so that its refusals (oneself, the last owner) come before any other write's; a reactivation runs last,
 * so that it sees the new password (ACTIVE rather than INITIAL).
 */
async function applyScimUser(ctx: Ctx, user: LockedScimUser, input: ScimUserInput, passwords: (password: string) => Promise<string>): Promise<void> {
  const profile = validScimProfile(input);
  const passwordHash = input.password !== undefined ? await passwords(input.password) : undefined;
  if (!input.active && user.state !== "INACTIVE") await changeState(ctx, user, "deactivate", "deactivated");
  await writeScimProfile(ctx, user, profile);
  if (passwordHash !== undefined) await storePassword(ctx, user, { passwordHash, changeRequired: false, verifiedBy: "administrator" });
  if (input.active && user.state === "INACTIVE") await changeState(ctx, user, "reactivate");
}

/** Checks the policy and hashes each distinct password once (a PATCH may compute the one its preview had). */
function passwordHasher(ctx: Ctx, orgId: string): (password: string) => Promise<string> {
  const hashes = new Map<string, string>();
  return async (password) => {
    let hash = hashes.get(password);
    if (hash === undefined) {
      hash = await hashNewPassword(ctx, orgId, password);
      hashes.set(password, hash);
    }
    return hash;
  };
}

interface ScimProfileChange {
  columns: ScimColumns;
  rows: ProfileRows;
  username: string;
  externalId: string | null;
}

function validScimProfile(input: ScimUserInput): ScimProfileChange {
  const { columns, rows } = scimProfileColumns(input);
  return { columns, rows, username: validateUsername(input.username), externalId: validExternalId(input.externalId) };
}

/** The profile, child rows and the provisioner's externalId of a locked user, with the change's event. */
async function writeScimProfile(ctx: Ctx, user: LockedScimUser, p: ScimProfileChange): Promise<void> {
  const { columns, username, externalId } = p;
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    // A cached principal of this user (state, credentials) must not outlive the change.
    await tx.auth.invalidate({ userId: user.id });
    if (username.toLowerCase() !== user.username.toLowerCase()) await claimUsername(ctx, tx, user.id, username.toLowerCase());
    await tx.users.update(user.id, {
      ...columns,
      username,
      usernameLower: username.toLowerCase(),
      // A changed address is verified again only through the provisioner, which holds user.write.
      emailVerified: columns.email === user.email ? user.emailVerified || columns.email != null : columns.email != null,
      phoneVerified: columns.phone === user.phone ? user.phoneVerified : false,
      updatedAt: now,
    });
    await tx.users.replaceProfileRows(user.id, p.rows);
    await tx.users.setExternalId({ userId: user.id, orgId: user.orgId, provisionerId: ctx.principal.userId, externalId, now });
    await recordEvent(
      ctx,
      tx,
      userEvent(user, "user.changed", { via: "scim", username, email: columns.email ?? undefined, externalId: externalId ?? undefined }),
    );
  });
}
