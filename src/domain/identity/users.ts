// Users: the one implementation behind CreateUser/GetUserByID/ListUsers/
// UpdateUser/DeleteUser and the SCIM adapter. Creation (user-create.ts),
// changes (user-update.ts), input validation (user-input.ts), the SCIM
// profile (scim-profile.ts), state changes, passwords, metadata and machine
// credentials live beside it in user-*.ts; this module is their front door.
import { authorize } from "../access/permissions.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { keepActiveOrgOwners } from "../orgs/members.js";
import { queueBackchannelLogout } from "../sessions/backchannel-logout.js";
import { hiddenTargetUser, keepAnActiveInstanceOwner, userNotFound } from "./user-access.js";

export { type AddressInput, type ContactInput, MAX_CHILD_ROWS, type ScimProfile } from "./scim-profile.js";
export { keepAnActiveInstanceOwner, type TargetUser, targetUser, userNotFound } from "./user-access.js";
export { type CreateUserInput, createUser, insertUser, type PreparedUser, prepareUser } from "./user-create.js";
export { text, validateUsername, validExternalId, validMetadata } from "./user-input.js";
export { type UpdateUserInput, updateUser } from "./user-update.js";

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

export async function getUser(ctx: Ctx, userId: string): Promise<UserView> {
  const user = await ctx.store.users.view(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  if (user.id !== ctx.principal.userId) authorize(ctx, "user.read", user.orgId, userNotFound);
  return user;
}

export async function deleteUser(ctx: Ctx, userId: string): Promise<Date> {
  const user = await hiddenTargetUser(ctx, userId, "user.delete");
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      await tx.auth.invalidate({ userId: user.id });
      await keepAnActiveInstanceOwner(ctx, tx, user.id, "Errors.User.LastInstanceOwner", "the last active IAM_OWNER of the instance cannot be deleted");
      await keepActiveOrgOwners(tx, user, "Errors.User.LastOrgOwner", "the last active ORG_OWNER of an organization cannot be deleted");
      // Tokens, metadata and memberships go with the user (ON DELETE CASCADE). A concurrent delete got there
      // first when nothing is left to delete: the same NotFound as if this request had come second.
      // Its sessions end first, telling their OIDC applications (back-channel logout) while their participants exist.
      await queueBackchannelLogout(tx, ctx.instanceId, { userId: user.id }, now);
      await tx.sessions.terminateOfUser(ctx.instanceId, user.id, undefined, now);
      if (!(await tx.users.delete(user.id))) throw userNotFound();
      return userEvent(user, "user.removed", { username: user.username });
    },
    now,
  );
}
