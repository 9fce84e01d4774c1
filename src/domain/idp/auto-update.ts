// A provider's option is_auto_update: at each sign-in with it, the linked user's names and e-mail follow what the
// provider says (the provider is the source of that profile). A value svc would refuse (an address that is not one)
// is left as it is rather than failing the sign-in.
import type { UserPatch } from "../../store/users.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { validEmail } from "../identity/user-input.js";
import { newId } from "../ids.js";
import type { ExternalProfile } from "./claims.js";

function emailOf(value: string): string | undefined {
  try {
    return validEmail(value, "email");
  } catch {
    return undefined;
  }
}

export async function updateFromProvider(ctx: Ctx, user: { id: string; orgId: string }, p: ExternalProfile): Promise<void> {
  const current = await ctx.store.users.profile(user.id);
  const next: UserPatch = {};
  if (p.givenName) next.givenName = p.givenName;
  if (p.familyName) next.familyName = p.familyName;
  if (p.displayName) next.displayName = p.displayName;
  const email = p.email ? emailOf(p.email) : undefined;
  if (email) {
    next.email = email;
    // A new address is as verified as the provider says; the current one is not unverified by a provider that is silent.
    if (email !== current.email || p.emailVerified) next.emailVerified = p.emailVerified;
  }
  const changed = (Object.keys(next) as (keyof UserPatch)[]).filter((k) => next[k] !== current[k as keyof typeof current]);
  if (!changed.length) return;
  await commit(ctx, async (tx, now) => {
    await tx.auth.invalidate({ userId: user.id });
    await tx.users.update(user.id, { ...next, updatedAt: now });
    if (changed.includes("email")) await tx.users.syncPrimaryContact("email", user.id, current.email, next.email as string, newId());
    return userEvent(user, "user.changed", { changed, by: "identity provider" });
  });
}
