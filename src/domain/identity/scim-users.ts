// The SCIM side of users: the full resource (profile, multi-valued rows and
// the provisioner's externalId) read, listed, replaced and deleted. Creation
// goes through createUser like the v2 CreateUser; a PATCH is applied by the
// adapter to the current resource and stored with replaceScimUser
// (scim-replace.ts).
import type { ContactRow } from "../../store/users.js";
import type { Ctx } from "../context.js";
import type { ScimProfile } from "./scim-profile.js";
import { authorizeOrg, type ScimUserRecord, storableId } from "./scim-read.js";
import { userNotFound } from "./user-access.js";
import { createUser } from "./user-create.js";
import { deleteUser } from "./users.js";

export type { ScimUserRecord } from "./scim-read.js";
export { authorizeOrg, getScimUser, listScimUsers, requireOrgMembership, type ScimListInput } from "./scim-read.js";
export { replaceScimUser, type ScimUserChange } from "./scim-replace.js";

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
  const str = (v: string | null | undefined) => v ?? null;
  const contact = ({ value, type, display, primary }: ContactRow) => ({ value, type, display, primary });
  return {
    id: d.id,
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
    addresses: prepared.rows.addresses.map((a) => ({
      type: a.type,
      streetAddress: a.streetAddress,
      locality: a.locality,
      region: a.region,
      postalCode: a.postalCode,
      country: a.country,
      formatted: a.formatted,
      primary: a.primary,
    })),
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

export async function deleteScimUser(ctx: Ctx, orgId: string, id: string): Promise<void> {
  authorizeOrg(ctx, "user.delete", orgId);
  const user = await ctx.store.users.findScimUser(ctx.instanceId, orgId, storableId(id));
  if (!user) throw userNotFound();
  // A concurrent delete between the read and the delete is NotFound there too.
  await deleteUser(ctx, user.id);
}
