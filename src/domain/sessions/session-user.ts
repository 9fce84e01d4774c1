// The user a session's user check names (by id, by login name `username@<organization domain>`, or by a bare
// username that only one user of the instance has) and whether that user may sign in at all.
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { lockedError } from "../identity/lockout.js";
import type { SessionChecks, SessionUserRow } from "./model.js";

const MAX_LOGIN_NAME = 500;

export const sessionUserNotFound = () => notFound("Errors.User.NotFound", "no user with this id or login name");

export async function findSessionUser(ctx: Ctx, check: NonNullable<SessionChecks["user"]>): Promise<SessionUserRow> {
  const sessions = ctx.store.sessions;
  if ("userId" in check) {
    if (!check.userId) throw invalidArgument("Errors.Session.User.Missing", "checks.user needs a user_id or a login_name", { field: "checks.user" });
    return (await sessions.userById(ctx.instanceId, check.userId)) ?? throwNotFound();
  }
  const name = check.loginName.trim().toLowerCase();
  if (!name || name.length > MAX_LOGIN_NAME) {
    throw invalidArgument("Errors.Session.User.Missing", `checks.user.login_name must have 1 to ${MAX_LOGIN_NAME} characters`, {
      field: "checks.user.login_name",
    });
  }
  const at = name.lastIndexOf("@");
  if (at > 0) {
    const byLoginName = await sessions.userByLoginName(ctx.instanceId, name.slice(0, at), name.slice(at + 1));
    if (byLoginName) return byLoginName;
  }
  // A bare username (which may itself hold an "@", an e-mail address say) names a user only when it is unique in the
  // instance; otherwise the login name is needed.
  const named = await sessions.usersByUsername(ctx.instanceId, name, 2);
  if (named.length === 1) return named[0];
  return throwNotFound();
}

function throwNotFound(): never {
  throw sessionUserNotFound();
}

/** Refuses a user that cannot sign in now: a machine, deactivated, locked, or of a deactivated organization. */
export function assertCanSignIn(user: SessionUserRow): void {
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "machine users do not sign in with sessions; they use tokens");
  if (user.state === "INACTIVE") throw failedPrecondition("Errors.User.NotActive", "the user is deactivated");
  if (user.state === "LOCKED") throw lockedError();
  if (user.org.state !== "ACTIVE") throw failedPrecondition("Errors.Org.NotActive", "the user's organization is deactivated");
}

export const loginName = (u: Pick<SessionUserRow, "username" | "org">) => `${u.username}@${u.org.primaryDomain}`;

export function displayName(u: Pick<SessionUserRow, "displayName" | "givenName" | "familyName" | "username">): string {
  if (u.displayName) return u.displayName;
  const full = [u.givenName, u.familyName].filter(Boolean).join(" ");
  return full || u.username;
}
