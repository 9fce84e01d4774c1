// SessionService's commands. A login client (IAM_LOGIN_CLIENT: session.write) creates sessions for any user and runs
// their checks; a user may run checks on its own sessions. The session token, shown once and kept as its SHA-256, proves
// the session to later calls and is replaced by every SetSession (the previous one stops working).
import { newOpaqueToken, sameHash, sha256 } from "../../crypto/tokens.js";
import type { SessionPatch, SessionRow } from "../../store/sessions.js";
import type { SignInUser, UserChecks } from "../../store/sign-in-sql.js";
import { hasInstancePermission } from "../access/permissions.js";
import { eventRow, recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition, invalidArgument, permissionDenied } from "../errors.js";
import { intentSessionUser } from "../idp/session-intent.js";
import { newId } from "../ids.js";
import { effectiveOf } from "../settings/settings.js";
import { checkOutcomeOf } from "../signals.js";
import type { FactorStep } from "./factors.js";
import { FACTOR_ORDER } from "./factors.js";
import { checkUserAgent, expiryOf, mergeMetadata, readMetadata } from "./input.js";
import {
  type ChallengeAnswers,
  type ChallengeRequests,
  expired,
  type SessionChecks,
  type SessionUserRow,
  sessionNotFound,
  tokenInvalid,
  type UserAgent,
} from "./model.js";
import { CHALLENGES, CHECKS } from "./registry.js";
import { assertCanSignIn, findSessionUser } from "./session-user.js";

export interface CreateSessionInput {
  checks: SessionChecks;
  challenges: ChallengeRequests;
  metadata: Record<string, Uint8Array>;
  userAgent?: UserAgent;
  /** Seconds from now; undefined: until it is deleted. */
  lifetimeSeconds?: number;
}

export interface SetSessionInput {
  sessionId: string;
  sessionToken: string;
  checks: SessionChecks;
  challenges: ChallengeRequests;
  metadata: Record<string, Uint8Array>;
  lifetimeSeconds?: number;
}

export interface SessionChange {
  sessionId: string;
  sessionToken: string;
  createdAt: Date;
  changedAt: Date;
  ownerId: string;
  challenges: ChallengeAnswers;
}

/** Sessions of one user that may wait for their first factor check at once, made within PENDING_WINDOW_MS. */
export const PENDING_PER_USER = 20;
export const PENDING_WINDOW_MS = 10 * 60_000;

/** Whether the caller is a login client for sessions: `session.write` instance-wide. */
const isLoginClient = (ctx: Ctx) => hasInstancePermission(ctx, "session.write");

export async function createSession(ctx: Ctx, input: CreateSessionInput): Promise<SessionChange> {
  if (!input.checks.user && !input.checks.idpIntent) {
    throw invalidArgument("Errors.Session.User.Missing", "checks.user (or checks.idp_intent) is required to create a session", { field: "checks.user" });
  }
  const userAgent = input.userAgent ? checkUserAgent(input.userAgent) : null;
  const metadata = mergeMetadata({}, input.metadata);
  const now = ctx.clock();
  const expiresAt = input.lifetimeSeconds === undefined ? null : expiryOf(now, input.lifetimeSeconds);
  // Creating a session is a login client's work alone (as ZITADEL's session.write): a user's own access token reads
  // and ends its sessions but never mints one, so a stolen token does not become a session. Refused before any
  // lookup, so the answer tells nothing about the login name.
  if (!isLoginClient(ctx)) throw permissionDenied("Errors.Permission.Denied", "creating sessions needs the role IAM_LOGIN_CLIENT");
  const { user, checks: known } = await observed(ctx, "user", async () => {
    const found = input.checks.user
      ? await findSessionUser(ctx, input.checks.user)
      : await intentSessionUser(ctx, input.checks.idpIntent as NonNullable<SessionChecks["idpIntent"]>);
    assertCanSignIn(found.user);
    return found;
  });
  // A session without a factor proven at its creation (a passkey's challenge, a custom UI that checks later) is
  // pending: a user has at most PENDING_PER_USER of them made in the last PENDING_WINDOW_MS, so nobody can pile up
  // sessions of a user without knowing anything of it.
  if (!FACTOR_ORDER.some((f) => input.checks[f] !== undefined)) {
    const since = new Date(now.getTime() - PENDING_WINDOW_MS);
    if ((await ctx.store.sessions.countUnproven(ctx.instanceId, user.id, since)) >= PENDING_PER_USER) {
      throw new DomainError("ResourceExhausted", "Errors.Session.TooManyPending", "too many sessions of this user wait for a first check: try again later", {
        retryAfter: String(Math.ceil(PENDING_WINDOW_MS / 1000)),
      });
    }
  }

  const token = newOpaqueToken();
  const session: SessionRow = {
    id: newId(),
    instanceId: ctx.instanceId,
    userId: user.id,
    orgId: user.orgId,
    tokenHash: sha256(token),
    sequence: 0,
    creatorId: ctx.principal.userId,
    userCheckedAt: now,
    passwordCheckedAt: null,
    passwordChangeRequired: false,
    totpCheckedAt: null,
    otpEmailCheckedAt: null,
    webauthnCheckedAt: null,
    webauthnUserVerified: false,
    intentCheckedAt: null,
    webauthnChallenge: null,
    otpEmailCodeHash: null,
    otpEmailExpiresAt: null,
    metadata,
    userAgent,
    expiresAt,
    createdAt: now,
    updatedAt: now,
  };
  const step = stepOn(ctx, session, user, known, now);
  const { challenges } = await clearingOnFailure(step, async () => {
    const checked = await runChecks(step, input.checks);
    const challenges = await startChallenges(step, input.challenges);
    const row = { ...session, ...step.patch } as SessionRow;
    const event = eventRow(ctx, sessionEvent(row, "session.added", { checked, creator: isLoginClient(ctx) ? "login client" : "user" }));
    // The session, its event and the password check's fresh count in one statement.
    await ctx.store.sessions.insert(
      {
        ...row,
        tokenHash: sha256(token),
        webauthnChallenge: (row.webauthnChallenge ?? null) as never,
        otpEmailCodeHash: row.otpEmailCodeHash ? new Uint8Array(row.otpEmailCodeHash) : null,
        metadata,
        userAgent: userAgent as never,
      },
      event,
      step.clearFailedPasswords ? user.id : undefined,
    );
    return { challenges };
  });
  return { sessionId: session.id, sessionToken: token, createdAt: now, changedAt: now, ownerId: user.orgId, challenges };
}

export async function setSession(ctx: Ctx, input: SetSessionInput): Promise<SessionChange> {
  const now = ctx.clock();
  const session = await sessionForChange(ctx, input.sessionId, input.sessionToken, now);
  const patch: SessionPatch = {};
  if (input.lifetimeSeconds !== undefined) patch.expiresAt = expiryOf(now, input.lifetimeSeconds);
  if (Object.keys(input.metadata).length) patch.metadata = mergeMetadata(readMetadata(session.metadata), input.metadata);

  const { user, checks: known } = input.checks.user
    ? await observed(ctx, "user", () => sessionUser(ctx, session, input.checks.user))
    : await sessionUser(ctx, session, undefined);
  if (input.checks.user) patch.userCheckedAt = now;
  const step = stepOn(ctx, session, user, known, now, patch);
  const token = newOpaqueToken();
  const { challenges } = await clearingOnFailure(step, async () => {
    const checked = await runChecks(step, input.checks);
    const challenges = await startChallenges(step, input.challenges);
    await ctx.store.transaction(async (tx) => {
      const written = await tx.sessions.update(
        session.id,
        session.tokenHash,
        { tokenHash: sha256(token), sequence: session.sequence + 1, updatedAt: now },
        step.patch,
      );
      // Another request with the same token won: this one's token is stale.
      if (!written) throw tokenInvalid();
      if (step.clearFailedPasswords) await tx.users.clearFailedPasswords(user.id);
      await recordEvent(
        ctx,
        tx,
        sessionEvent(session, "session.updated", { checked, ...(patch.expiresAt ? { expiresAt: patch.expiresAt.toISOString() } : {}) }),
      );
    });
    return { challenges };
  });
  return { sessionId: session.id, sessionToken: token, createdAt: session.createdAt, changedAt: now, ownerId: session.orgId ?? ctx.instanceId, challenges };
}

/**
 * The session a SetSession changes: a login client's, or the caller's own, proven by its current token. Anybody
 * else is told it does not exist.
 */
async function sessionForChange(ctx: Ctx, id: string, token: string, now: Date): Promise<SessionRow> {
  if (!id) throw invalidArgument("Errors.Session.Id.Missing", "session_id is required", { field: "session_id" });
  const session = await ctx.store.sessions.find(ctx.instanceId, id);
  if (!session || expired(session, now)) throw sessionNotFound();
  if (!isLoginClient(ctx) && session.userId !== ctx.principal.userId) throw sessionNotFound();
  if (!token) throw invalidArgument("Errors.Session.Token.Missing", "session_token is required", { field: "session_token" });
  if (!sameHash(sha256(token), session.tokenHash)) throw tokenInvalid();
  return session;
}

/** The session's user, checked again when the request names it: a session stays with the user it was made for. */
async function sessionUser(ctx: Ctx, session: SessionRow, check: SessionChecks["user"]): Promise<SignInUser> {
  const named = check ? await findSessionUser(ctx, check) : undefined;
  if (named && named.user.id !== session.userId) {
    throw invalidArgument("Errors.Session.User.Changed", "a session stays with its user: create a new session for another user", { field: "checks.user" });
  }
  const found = named ?? (session.userId ? await ctx.store.sessions.userById(ctx.instanceId, session.userId) : null);
  if (!found) throw failedPrecondition("Errors.Session.NoUser", "the session's user no longer exists");
  assertCanSignIn(found.user);
  return found;
}

function stepOn(ctx: Ctx, session: SessionRow, user: SessionUserRow, checks: UserChecks, now: Date, patch: SessionPatch = {}): FactorStep {
  return { ctx, now, session, user, checks, login: effectiveOf("login", checks.settings, ctx.instanceId, user.orgId), patch };
}

/**
 * Runs a request's checks and write; when it fails after a right password (a later check, or the write), the count of
 * wrong passwords still starts again, as it would had the request succeeded.
 */
async function clearingOnFailure<T>(step: FactorStep, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (step.clearFailedPasswords) await step.ctx.store.users.clearFailedPasswords(step.user.id);
    throw err;
  }
}

/** Runs the factor checks the request carries, in order; returns their names (for the audit event). */
async function runChecks(step: FactorStep, checks: SessionChecks): Promise<string[]> {
  const ran: string[] = checks.user ? ["user"] : [];
  for (const name of FACTOR_ORDER) {
    const input = checks[name];
    if (input === undefined) continue;
    const check = CHECKS[name];
    await observed(step.ctx, name, () => (check as (s: FactorStep, i: typeof input) => Promise<void>)(step, input));
    ran.push(name);
  }
  return ran;
}

/** Runs one check and tells the metrics how it ended. */
async function observed<T>(ctx: Ctx, factor: string, run: () => Promise<T>): Promise<T> {
  try {
    const result = await run();
    ctx.signals?.check(factor, "success");
    return result;
  } catch (err) {
    ctx.signals?.check(factor, checkOutcomeOf(err));
    throw err;
  }
}

async function startChallenges(step: FactorStep, requests: ChallengeRequests): Promise<ChallengeAnswers> {
  let answers: ChallengeAnswers = {};
  for (const name of Object.keys(requests) as (keyof ChallengeRequests)[]) {
    const input = requests[name];
    if (input === undefined) continue;
    const start = CHALLENGES[name];
    answers = { ...answers, ...(await (start as (s: FactorStep, i: typeof input) => Promise<ChallengeAnswers>)(step, input)) };
  }
  return answers;
}

export function sessionEvent(s: Pick<SessionRow, "id" | "orgId" | "userId">, type: string, payload: Record<string, unknown> = {}) {
  return { aggregateType: "session", aggregateId: s.id, orgId: s.orgId, type, payload: { userId: s.userId, ...payload } };
}
