// Settings (policies) of the instance and its organizations. Each kind has a
// built-in default, an optional stored instance default (ownerId = instance
// id) and optional overrides per organization (ownerId = org id); the
// effective value is the org's own, else the instance's, else built-in.
// What a value may be and how it is validated is in values.ts.

import type { Store } from "../../store/index.js";
import type { StoredSettingRow } from "../../store/settings.js";
import { authorize, canSeeOrganization } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { authorizedOrg, existingOrg, orgNotFound } from "../orgs/orgs.js";
import {
  type Effective,
  type LockoutPolicy,
  type PasswordComplexity,
  parseStored,
  type SettingInput,
  type SettingKind,
  type SettingValues,
  validateSetting,
} from "./values.js";

// Other areas import these from here.
export {
  checkPassword,
  DEFAULT_PASSWORD_COMPLEXITY,
  DEFAULT_SETTINGS,
  type Effective,
  type LockoutPolicy,
  type PasswordComplexity,
  parseStored,
  type ResourceOwner,
  type SettingInput,
  type SettingKind,
  type SettingValues,
  validateSetting,
} from "./values.js";

// ---------------------------------------------------------------- reading

/**
 * The effective value of one kind for an organization (or the instance when
 * no org is given), in one query. No permission check: for domain code that
 * has already resolved and authorized the organization.
 */
export async function effectiveSetting<K extends SettingKind>(ctx: Ctx, kind: K, orgId?: string | null): Promise<Effective<K>> {
  const owners = orgId ? [orgId, ctx.instanceId] : [ctx.instanceId];
  const rows = await ctx.store.settings.values(ctx.instanceId, kind, owners);
  return effectiveOf(kind, rows, ctx.instanceId, orgId);
}

/**
 * The effective value of `kind` from stored rows the caller read (of this kind or others, for the organization and
 * the instance), e.g. with the user a sign-in is about, in the same statement.
 */
export function effectiveOf<K extends SettingKind>(
  kind: K,
  rows: readonly { ownerId: string; kind?: string; value: unknown }[],
  instanceId: string,
  orgId?: string | null,
): Effective<K> {
  const ofKind = rows.filter((r) => r.kind === undefined || r.kind === kind);
  const own = orgId ? ofKind.find((r) => r.ownerId === orgId) : undefined;
  const instance = ofKind.find((r) => r.ownerId === instanceId);
  const value = parseStored(kind, (own ?? instance)?.value);
  // Instance-wide by nature: an organization reads the instance's value, whatever its override holds.
  if (kind === "domain" && own) (value as SettingValues["domain"]).usernamesUniqueInInstance = parseStored("domain", instance?.value).usernamesUniqueInInstance;
  return { ...value, resourceOwner: own ? "org" : "instance" };
}

/** The complexity in force for an organization: its override, else the instance default, else built-in. */
export function passwordComplexity(ctx: Ctx, orgId?: string): Promise<PasswordComplexity> {
  return effectiveSetting(ctx, "password_complexity", orgId);
}

export function lockoutPolicy(ctx: Ctx, orgId?: string | null): Promise<LockoutPolicy> {
  return effectiveSetting(ctx, "lockout", orgId);
}

// ---------------------------------------------------------------- API operations

/**
 * Get<Kind>Settings. The password complexity is readable by any caller who
 * can see the organization (its own users, its members, instance members),
 * because users need the rules before choosing a password; every other kind
 * needs policy.read in the org, or iam.read for the instance default.
 */
export async function getSettings<K extends SettingKind>(ctx: Ctx, kind: K, orgId?: string): Promise<Effective<K>> {
  if (orgId && kind === "password_complexity") {
    if (!canSeeOrganization(ctx, (await existingOrg(ctx, orgId)).id)) throw orgNotFound();
  } else if (orgId) {
    await authorizedOrg(ctx, orgId, "policy.read");
  } else if (kind !== "password_complexity") {
    authorize(ctx, "iam.read", null);
  }
  return effectiveSetting(ctx, kind, orgId);
}

export type StoredSetting = StoredSettingRow;

/**
 * Set<Kind>Settings: changes the instance default (no org) or an organization's override. `update` is the new value,
 * or (a partial update) makes it from the value the owner has now — its stored one, else the one in force for it
 * (an organization without an override starts from the instance default) — read under a lock of the owner's setting,
 * so that concurrent partial updates of different fields both take effect.
 */
export async function setSettings<K extends SettingKind>(
  ctx: Ctx,
  kind: K,
  orgId: string | undefined,
  update: SettingInput<K> | ((current: Effective<K>) => SettingInput<K>) | undefined,
): Promise<StoredSetting> {
  let ownerId = ctx.instanceId;
  if (orgId) {
    ownerId = (await authorizedOrg(ctx, orgId, "policy.write")).id;
  } else {
    authorize(ctx, "iam.write", null);
  }
  if (!update) throw invalidArgument("Errors.Settings.Missing", "settings is required", { field: "settings" });
  const now = ctx.clock();
  return ctx.store.transaction(async (tx) => {
    let input: SettingInput<K>;
    if (typeof update === "function") {
      await tx.members.lock(`settings:${ownerId}:${kind}`);
      const owners = orgId ? [ownerId, ctx.instanceId] : [ctx.instanceId];
      input = update(effectiveOf(kind, await tx.settings.values(ctx.instanceId, kind, owners), ctx.instanceId, orgId ? ownerId : undefined));
    } else input = update;
    const value = validateSetting(kind, input);
    // An organization's override cannot make usernames unique beyond the organization: the field is ignored there.
    if (kind === "domain" && orgId) (value as SettingValues["domain"]).usernamesUniqueInInstance = false;
    if (kind === "domain" && !orgId && (value as SettingValues["domain"]).usernamesUniqueInInstance) await noSharedUsernames(ctx, tx);
    const row = await tx.settings.put(ctx.instanceId, ownerId, kind, value as object, now);
    await recordEvent(ctx, tx, {
      aggregateType: "settings",
      aggregateId: ownerId,
      orgId: orgId ? ownerId : null,
      type: `settings.${kind}.set`,
      payload: { ...value },
    });
    return row;
  });
}

/** Usernames can become unique in the instance only while no name is held in several organizations. */
async function noSharedUsernames(ctx: Ctx, tx: Store): Promise<void> {
  const shared = await tx.users.usernamesInSeveralOrgs(ctx.instanceId, 5);
  if (shared.length === 0) return;
  throw failedPrecondition(
    "Errors.Settings.Domain.UsernamesShared",
    `usernames cannot be made unique in the instance while some exist in several organizations: ${shared.map((n) => `"${n}"`).join(", ")}${shared.length === 5 ? ", …" : ""}`,
  );
}

/** Reset<Kind>Settings: removes an organization's override; NotFound when it has none. */
export async function resetSettings(ctx: Ctx, kind: SettingKind, orgId: string | undefined): Promise<{ ownerId: string; changedAt: Date }> {
  if (!orgId)
    throw invalidArgument("Errors.Settings.Org.Missing", "organization_id is required: only an organization's override can be reset", {
      field: "organization_id",
    });
  const ownerId = (await authorizedOrg(ctx, orgId, "policy.write")).id;
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    if (!(await tx.settings.remove(ctx.instanceId, ownerId, kind)))
      throw notFound("Errors.Settings.NotFound", "the organization has no settings of its own to reset");
    await recordEvent(ctx, tx, { aggregateType: "settings", aggregateId: ownerId, orgId: ownerId, type: `settings.${kind}.reset` });
  });
  return { ownerId, changedAt: now };
}
