// Which user a command acts on, and the guard every command that takes a
// user's access away shares.
import type { Store } from "../../store/index.js";
import type { TargetUser } from "../../store/users.js";
import { authorize, authorizeOverRoles, type Permission } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { checkIamOwnerKept, iamOwnersLock, lockTx } from "../orgs/members.js";

export type { TargetUser } from "../../store/users.js";

export const userNotFound = () => notFound("Errors.User.NotFound", "user not found");

/** The permissions that change a user: each also needs the caller to be able to grant the user's roles. */
const CHANGES: ReadonlySet<Permission> = new Set<Permission>(["user.write", "user.delete", "user.credential.write"]);

/**
 * Loads a user of the instance that the caller wants to act on and checks
 * `permission` in the user's organization, and for a change that the caller
 * could grant the user's roles (authorizeOverRoles). A caller without
 * membership there gets NotFound; acting on oneself never hides the user,
 * and with `selfAllowed` needs no role at all.
 */
export async function targetUser(ctx: Ctx, userId: string, permission: Permission, opts: { selfAllowed?: boolean } = {}): Promise<TargetUser> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await ctx.store.users.findTarget(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  const self = user.id === ctx.principal.userId;
  if (self && opts.selfAllowed) return user;
  authorize(ctx, permission, user.orgId, self ? undefined : userNotFound);
  if (CHANGES.has(permission)) await authorizeOverRoles(ctx, user);
  return user;
}

/**
 * A user of the instance, checked like `targetUser` but hidden (NotFound) from a caller without `permission` even
 * when it is the caller itself.
 */
export async function hiddenTargetUser(ctx: Ctx, userId: string, permission: Permission): Promise<TargetUser> {
  const user = await ctx.store.users.findTarget(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  authorize(ctx, permission, user.orgId, userNotFound);
  if (CHANGES.has(permission)) await authorizeOverRoles(ctx, user);
  return user;
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
