// Reading and ending sessions. Who may: holders of session.read / session.delete instance-wide (login clients and
// instance administrators), the session's own user, and whoever presents its token. Anybody else is told that it
// does not exist; a wrong token is refused as such.
import { sameHash, sha256 } from "../../crypto/tokens.js";
import type { SessionFilter, SessionRow } from "../../store/sessions.js";
import { hasInstancePermission, type Permission } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { DomainError, invalidArgument } from "../errors.js";
import type { ListTotal, Page } from "../list.js";
import { liveOf, signInState, terminateSession } from "./link.js";
import { expired, type SessionView, sessionNotFound, tokenInvalid } from "./model.js";
import { sessionView } from "./view.js";

async function visibleSession(ctx: Ctx, id: string, token: string | undefined, permission: Permission): Promise<SessionRow> {
  if (!id) throw invalidArgument("Errors.Session.Id.Missing", "session_id is required", { field: "session_id" });
  const session = await ctx.store.sessions.find(ctx.instanceId, id);
  if (!session || expired(session, ctx.clock())) throw sessionNotFound();
  if (token !== undefined) {
    if (!sameHash(sha256(token), session.tokenHash)) throw tokenInvalid();
    return session;
  }
  if (hasInstancePermission(ctx, permission) || (session.userId !== null && session.userId === ctx.principal.userId)) return session;
  throw sessionNotFound();
}

/**
 * The session as the API shows it; `o.nextStep`: with the sign-in policy's next step (one more read), which a login
 * UI of its own follows. A session whose user can no longer sign in has none.
 */
export async function getSession(ctx: Ctx, id: string, token?: string, o: { nextStep?: boolean } = {}): Promise<SessionView> {
  const session = await visibleSession(ctx, id, token, "session.read");
  const [user] = await ctx.store.sessions.viewUsers(session.userId ? [session.userId] : []);
  const view = sessionView(session, user, ctx.instanceId);
  const linked = o.nextStep ? liveOf(session, ctx.clock()) : null;
  if (linked) {
    try {
      view.nextStep = (await signInState(ctx, linked)).step;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
    }
  }
  return view;
}

export interface SessionQuery {
  ids?: string[];
  userId?: string;
  created?: { op: "eq" | "gt" | "gte" | "lt" | "lte"; at: Date };
}

/** The live sessions the caller may read: all of them with session.read, else its own. */
export async function listSessions(ctx: Ctx, queries: SessionQuery[], page: Page): Promise<ListTotal & { sessions: SessionView[] }> {
  const filter: SessionFilter = { instanceId: ctx.instanceId, liveAt: ctx.clock() };
  const ids = queries.filter((q) => q.ids).flatMap((q) => q.ids as string[]);
  if (queries.some((q) => q.ids)) filter.ids = ids;
  const userIds = queries.filter((q) => q.userId !== undefined).map((q) => q.userId as string);
  if (!hasInstancePermission(ctx, "session.read")) userIds.push(ctx.principal.userId);
  // Several user filters are and-ed: more than one distinct user matches nothing.
  if (userIds.length) filter.userIds = new Set(userIds).size === 1 ? [userIds[0]] : [];
  filter.created = queries.filter((q) => q.created).map((q) => q.created as NonNullable<SessionQuery["created"]>);
  const { rows, ...total } = await ctx.store.sessions.page(filter, page);
  const users = await ctx.store.sessions.viewUsers([...new Set(rows.flatMap((r) => (r.userId ? [r.userId] : [])))]);
  const byId = new Map(users.map((u) => [u.id, u]));
  return { ...total, sessions: rows.map((r) => sessionView(r, r.userId ? byId.get(r.userId) : undefined, ctx.instanceId)) };
}

/** Ends the session and the tokens issued from it (terminateSession), as the caller. */
export async function deleteSession(ctx: Ctx, id: string, token?: string): Promise<Date> {
  const session = await visibleSession(ctx, id, token, "session.delete");
  const now = ctx.clock();
  if (!(await terminateSession(ctx.store, ctx.instanceId, session.id, now, { editor: ctx.principal.userId }))) throw sessionNotFound();
  return now;
}
