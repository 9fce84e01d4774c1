// Usernames are unique per organization: the store's unique index says so, and the login name
// `username@<organization domain>` is therefore unique in the instance. An organization learns nothing about the
// names of another, and cannot squat them. The instance's domain setting `usernamesUniqueInInstance` makes them
// unique across the instance too, which no index can express: a name is then claimed under an advisory lock, in the
// transaction that writes it.
import type { Store } from "../../store/index.js";
import type { Ctx } from "../context.js";
import { alreadyExists } from "../errors.js";
import { effectiveSetting } from "../settings/settings.js";

export const usernameTaken = () => alreadyExists("Errors.User.AlreadyExists", "a user with this username already exists");

/** Whether usernames must be unique in the whole instance (the instance's own domain setting). */
export async function usernamesUniqueInInstance(ctx: Ctx): Promise<boolean> {
  return (await effectiveSetting(ctx, "domain")).usernamesUniqueInInstance;
}

/**
 * Claims a (lower-cased) username for `userId` in the running transaction `tx` when usernames are unique in the
 * instance: locks the name until the transaction ends and refuses it (AlreadyExists) when another user of any
 * organization has it. Without the setting it does nothing: the per-organization index decides.
 */
export async function claimUsername(ctx: Ctx, tx: Store, userId: string, usernameLower: string, known?: { wide: boolean }): Promise<void> {
  if (!(known?.wide ?? (await usernamesUniqueInInstance({ ...ctx, store: tx })))) return;
  await tx.users.lockUsername(ctx.instanceId, usernameLower);
  if (await tx.users.usernameTaken(ctx.instanceId, usernameLower, userId)) throw usernameTaken();
}
