// Deactivate / reactivate / lock / unlock. A user that is not ACTIVE cannot
// authenticate: authn.ts refuses its tokens on the very next request. Taking
// access away (deactivate, an administrator's lock) also ends what was issued
// before it, in the same transaction: its OAuth tokens are revoked and its PATs
// removed, so that reactivating or unlocking never brings them back.

import type { Store } from "../../store/index.js";
import type { TargetUser, UserPatch } from "../../store/users.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";
import { keepActiveOrgOwners } from "../orgs/members.js";
import { queueBackchannelLogout } from "../sessions/backchannel-logout.js";
import { keepAnActiveInstanceOwner, targetUser } from "./user-access.js";
import type { UserState } from "./users.js";

export type Transition = "deactivate" | "reactivate" | "lock" | "unlock";
type StateTarget = Pick<TargetUser, "id" | "orgId" | "type" | "state">;

interface Rule {
  /** States the transition starts from; any other state gets `refused(state)`. */
  from: readonly UserState[];
  refused: (state: UserState) => Error;
  event: string;
  /** Taking access away: refused for oneself and for the last active IAM_OWNER. */
  revokesAccess: boolean;
}

const RULES: Record<Transition, Rule> = {
  deactivate: {
    from: ["ACTIVE", "LOCKED", "INITIAL"],
    refused: () => failedPrecondition("Errors.User.AlreadyInactive", "the user is already inactive"),
    event: "user.deactivated",
    revokesAccess: true,
  },
  reactivate: {
    from: ["INACTIVE"],
    refused: () => failedPrecondition("Errors.User.NotInactive", "only an inactive user can be reactivated"),
    event: "user.reactivated",
    revokesAccess: false,
  },
  lock: {
    from: ["ACTIVE", "INITIAL"],
    refused: (state) =>
      state === "LOCKED"
        ? failedPrecondition("Errors.User.AlreadyLocked", "the user is already locked")
        : failedPrecondition("Errors.User.NotActive", "an inactive user cannot be locked"),
    event: "user.locked",
    revokesAccess: true,
  },
  unlock: {
    from: ["LOCKED"],
    refused: () => failedPrecondition("Errors.User.NotLocked", "only a locked user can be unlocked"),
    event: "user.unlocked",
    revokesAccess: false,
  },
};

export const deactivateUser = (ctx: Ctx, userId: string) => transition(ctx, userId, "deactivate");
export const reactivateUser = (ctx: Ctx, userId: string) => transition(ctx, userId, "reactivate");
export const lockUser = (ctx: Ctx, userId: string) => transition(ctx, userId, "lock");
export const unlockUser = (ctx: Ctx, userId: string) => transition(ctx, userId, "unlock");

async function transition(ctx: Ctx, userId: string, kind: Transition): Promise<Date> {
  return changeState(ctx, await targetUser(ctx, userId, "user.write"), kind);
}

/**
 * Checks and applies a transition of a user the caller may change (`targetUser`, or a row the caller holds locked);
 * runs in (or joins) one transaction. `revokedAs` words the refusal to take the last owner's access.
 */
export async function changeState(ctx: Ctx, user: StateTarget, kind: Transition, revokedAs = "deactivated or locked"): Promise<Date> {
  const rule = RULES[kind];
  if (rule.revokesAccess && user.id === ctx.principal.userId) {
    throw failedPrecondition(`Errors.User.${kind === "lock" ? "LockSelf" : "DeactivateSelf"}`, `a user cannot ${kind} itself`);
  }
  if (!rule.from.includes(user.state)) throw rule.refused(user.state);
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      await tx.auth.invalidate({ userId: user.id });
      if (rule.revokesAccess) {
        await keepAnActiveInstanceOwner(ctx, tx, user.id, "Errors.User.LastInstanceOwner", `the last active IAM_OWNER of the instance cannot be ${revokedAs}`);
        await keepActiveOrgOwners(tx, user, "Errors.User.LastOrgOwner", `the last active ORG_OWNER of an organization cannot be ${revokedAs}`);
      }
      const data = await nextState(tx, user, kind, now);
      // Conditional on the state read above, so two concurrent calls cannot both succeed.
      if (!(await tx.users.updateInState(user.id, rule.from, data))) throw rule.refused((await tx.users.state(user.id)) ?? user.state);
      if (!rule.revokesAccess) return userEvent(user, rule.event, { state: data.state });
      // Its sign-in sessions end too (logout everywhere), telling their OIDC applications (back-channel logout).
      await queueBackchannelLogout(tx, ctx.instanceId, { userId: user.id }, now);
      const endedSessions = await tx.sessions.terminateOfUser(ctx.instanceId, user.id, undefined, now);
      const revokedTokens = await tx.tokens.revokeIssued({ userId: user.id }, now);
      // Refresh tokens too: otherwise a client would mint new access tokens once the user is back.
      const revokedRefreshTokens = await tx.refreshTokens.revokeOfUser(user.id, now);
      const removedPats = await tx.credentials.removeAllPats({ userId: user.id });
      return userEvent(user, rule.event, {
        state: data.state,
        revokedTokens,
        removedPats,
        ...(revokedRefreshTokens ? { revokedRefreshTokens } : {}),
        ...(endedSessions ? { endedSessions } : {}),
      });
    },
    now,
  );
}

async function nextState(tx: Store, user: StateTarget, kind: Transition, now: Date): Promise<UserPatch & { state: UserState }> {
  if (kind === "deactivate") return { state: "INACTIVE", updatedAt: now };
  // The count starts again: a password reset ends only the lockout policy's locks (those reached the count).
  if (kind === "lock") return { state: "LOCKED", lockedAt: now, failedPasswordAttempts: 0, passwordLockPending: false, updatedAt: now };
  // Back to usable, with fresh lockout counters. A human without a password
  // goes back to INITIAL, the state it had before: it still cannot sign in.
  const state: UserState = user.type === "HUMAN" && !(await tx.users.passwordHash(user.id)) ? "INITIAL" : "ACTIVE";
  return { state, lockedAt: null, failedPasswordAttempts: 0, passwordLockPending: false, failedOtpAttempts: 0, otpLockedAt: null, updatedAt: now };
}
