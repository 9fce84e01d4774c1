// v2 UpdateUser: the fields given, of a human's profile, email and phone or a
// machine's description.
import type { UserPatch, UserProfileRow } from "../../store/users.js";
import { holds } from "../access/permissions.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, permissionDenied } from "../errors.js";
import { newId } from "../ids.js";
import { assertPresentedProof } from "./authn/access.js";
import { type TargetUser, targetUser } from "./user-access.js";
import { text, validateUsername, validEmail, validLanguage, validPhone } from "./user-input.js";
import { claimUsername } from "./usernames.js";

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
  const current = await ctx.store.users.profile(target.id);
  const mayVerify = () => holds(ctx, "user.write", target.orgId);

  const next: UserPatch = {};
  if (input.username !== undefined) {
    next.username = validateUsername(input.username);
    next.usernameLower = next.username.toLowerCase();
  }
  if (input.human?.profile) Object.assign(next, profileChanges(input.human.profile, current));
  if (input.human?.email) Object.assign(next, emailChange(input.human.email, current, mayVerify));
  if (input.human?.phone) Object.assign(next, phoneChange(input.human.phone, current, mayVerify));
  if (input.machine) Object.assign(next, machineChanges(input.machine));

  // Only real changes are written and recorded: clients often send back what they read.
  const changed = Object.keys(next).filter((k) => k !== "usernameLower" && next[k as keyof UserPatch] !== current[k as keyof UserProfileRow]);
  if (changed.length === 0) return current.updatedAt;
  // A new address is where password resets go: the user itself changes it only with a recent proof in a session it
  // presents (the sign-in policy's sensitive change); an administrator with user.write needs none.
  if (changed.includes("email") && target.id === ctx.principal.userId && !holds(ctx, "user.write", target.orgId)) {
    await assertPresentedProof(ctx, target, "email");
  }
  return writeChanges(ctx, target, current, next, changed);
}

function profileChanges(p: NonNullable<NonNullable<UpdateUserInput["human"]>["profile"]>, current: UserProfileRow): UserPatch {
  const next: UserPatch = {};
  if (p.givenName !== undefined) next.givenName = text(p.givenName, "given_name", { required: true });
  if (p.familyName !== undefined) next.familyName = text(p.familyName, "family_name", { required: true });
  if (p.nickName !== undefined) next.nickName = text(p.nickName, "nick_name") ?? null;
  if (p.displayName !== undefined) {
    next.displayName = text(p.displayName, "display_name") ?? `${next.givenName ?? current.givenName} ${next.familyName ?? current.familyName}`;
  }
  if (p.preferredLanguage !== undefined) next.preferredLanguage = validLanguage(p.preferredLanguage) ?? null;
  if (p.gender !== undefined) {
    if (!GENDERS.has(p.gender)) throw invalidArgument("Errors.User.Gender.Invalid", "unknown gender", { field: "gender" });
    next.gender = p.gender;
  }
  return next;
}

function emailChange(e: { email: string; isVerified: boolean }, current: UserProfileRow, mayVerify: () => boolean): UserPatch {
  const email = validEmail(e.email, "email");
  if (e.isVerified && !mayVerify()) throw permissionDenied("Errors.User.Email.VerifyDenied", "marking an email as verified needs user.write");
  // Re-sending the current address does not undo its verification.
  return { email, ...(e.isVerified || email !== current.email ? { emailVerified: e.isVerified } : {}) };
}

function phoneChange(ph: { phone: string; isVerified: boolean }, current: UserProfileRow, mayVerify: () => boolean): UserPatch {
  const phone = validPhone(ph.phone);
  if (phone && ph.isVerified && !mayVerify()) throw permissionDenied("Errors.User.Phone.VerifyDenied", "marking a phone as verified needs user.write");
  return { phone: phone ?? null, ...(ph.isVerified || phone !== current.phone ? { phoneVerified: phone ? ph.isVerified : false } : {}) };
}

function machineChanges(m: NonNullable<UpdateUserInput["machine"]>): UserPatch {
  const next: UserPatch = {};
  if (m.name !== undefined) next.machineName = text(m.name, "name", { required: true });
  if (m.description !== undefined) next.description = text(m.description, "description", { max: 500 }) ?? null;
  if (m.accessTokenType !== undefined) next.accessTokenType = m.accessTokenType;
  return next;
}

async function writeChanges(ctx: Ctx, target: TargetUser, current: UserProfileRow, next: UserPatch, changed: string[]): Promise<Date> {
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      await tx.auth.invalidate({ userId: target.id });
      if (next.usernameLower !== undefined && next.usernameLower !== current.username.toLowerCase()) {
        await claimUsername(ctx, tx, target.id, next.usernameLower);
      }
      await tx.users.update(target.id, { ...next, updatedAt: now });
      if (changed.includes("email")) await tx.users.syncPrimaryContact("email", target.id, current.email, next.email as string, newId());
      if (changed.includes("phone")) await tx.users.syncPrimaryContact("phone", target.id, current.phone, next.phone ?? null, newId());
      return userEvent(target, "user.changed", { changed, username: next.username, email: next.email ?? undefined });
    },
    now,
  );
}
