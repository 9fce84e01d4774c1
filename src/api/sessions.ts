import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { TimestampQueryMethod } from "../../gen/svc/object/v2/object_pb.js";
import {
  type Checks,
  type RequestChallenges,
  type SearchQuery,
  type Session,
  SessionSchema,
  SignInStep_Kind,
  type UserAgent,
  UserVerificationRequirement,
} from "../../gen/svc/session/v2/session_pb.js";
import type { SessionService } from "../../gen/svc/session/v2/session_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { page } from "../domain/list.js";
import type {
  ChallengeAnswers,
  ChallengeRequests,
  UserAgent as DomainUserAgent,
  SessionChecks,
  SessionView,
  UserVerification,
} from "../domain/sessions/model.js";
import type { Factor, Step } from "../domain/sessions/policy.js";
import { deleteSession, getSession, listSessions, type SessionQuery } from "../domain/sessions/reads.js";
import { createSession, type SessionChange, setSession } from "../domain/sessions/sessions.js";
import { ctxOf } from "./connect.js";
import { createdDetails, dateOpt, deleted, details, listDetails, listPage, ts, tsOpt } from "./convert.js";

const USER_VERIFICATION: Record<number, UserVerification> = {
  [UserVerificationRequirement.UNSPECIFIED]: "preferred",
  [UserVerificationRequirement.REQUIRED]: "required",
  [UserVerificationRequirement.PREFERRED]: "preferred",
  [UserVerificationRequirement.DISCOURAGED]: "discouraged",
};

const TIMESTAMP_OPS: Record<number, NonNullable<SessionQuery["created"]>["op"]> = {
  [TimestampQueryMethod.UNSPECIFIED]: "eq",
  [TimestampQueryMethod.EQUALS]: "eq",
  [TimestampQueryMethod.GREATER]: "gt",
  [TimestampQueryMethod.GREATER_OR_EQUALS]: "gte",
  [TimestampQueryMethod.LESS]: "lt",
  [TimestampQueryMethod.LESS_OR_EQUALS]: "lte",
};

/** Whole and fractional seconds of a Duration; undefined when unset. */
const seconds = (d: Duration | undefined): number | undefined => (d ? Number(d.seconds) + d.nanos / 1e9 : undefined);

function checks(c: Checks | undefined): SessionChecks {
  const out: SessionChecks = {};
  if (!c) return out;
  if (c.user) {
    const s = c.user.search;
    if (s.case === "userId") out.user = { userId: s.value };
    else if (s.case === "loginName") out.user = { loginName: s.value };
    else throw invalidArgument("Errors.Session.User.Missing", "checks.user needs a user_id or a login_name", { field: "checks.user" });
  }
  if (c.password) out.password = { password: c.password.password };
  if (c.webAuthN) out.webAuthN = { credentialAssertionData: (c.webAuthN.credentialAssertionData ?? {}) as Record<string, unknown> };
  if (c.totp) out.totp = { code: c.totp.code };
  if (c.otpEmail) out.otpEmail = { code: c.otpEmail.code };
  if (c.idpIntent) out.idpIntent = { idpIntentId: c.idpIntent.idpIntentId, idpIntentToken: c.idpIntent.idpIntentToken };
  return out;
}

function challenges(r: RequestChallenges | undefined): ChallengeRequests {
  const out: ChallengeRequests = {};
  if (r?.webAuthN) out.webAuthN = { domain: r.webAuthN.domain, userVerification: USER_VERIFICATION[r.webAuthN.userVerificationRequirement] ?? "preferred" };
  if (r?.otpEmail) {
    const d = r.otpEmail.deliveryType;
    out.otpEmail =
      d.case === "returnCode" ? { delivery: "return" } : { delivery: "send", urlTemplate: d.case === "sendCode" ? d.value.urlTemplate : undefined };
  }
  return out;
}

function userAgent(ua: UserAgent | undefined): DomainUserAgent | undefined {
  if (!ua) return undefined;
  return {
    fingerprintId: ua.fingerprintId,
    ip: ua.ip,
    description: ua.description,
    header: Object.fromEntries(Object.entries(ua.header).map(([k, v]) => [k, v.values])),
  };
}

function challengeAnswers(a: ChallengeAnswers) {
  if (!a.webAuthN && a.otpEmail === undefined) return undefined;
  return {
    ...(a.webAuthN ? { webAuthN: { publicKeyCredentialRequestOptions: a.webAuthN.publicKeyCredentialRequestOptions as JsonObject } } : {}),
    ...(a.otpEmail !== undefined ? { otpEmail: a.otpEmail } : {}),
  };
}

function toSession(s: SessionView): Session {
  const f = s.factors;
  return create(SessionSchema, {
    id: s.id,
    creationDate: ts(s.createdAt),
    changeDate: ts(s.updatedAt),
    sequence: BigInt(s.sequence),
    factors: {
      user: f.user && {
        verifiedAt: ts(f.user.verifiedAt),
        id: f.user.id,
        loginName: f.user.loginName,
        displayName: f.user.displayName,
        organizationId: f.user.orgId,
      },
      password: f.password && { verifiedAt: ts(f.password.verifiedAt), changeRequired: f.password.changeRequired },
      webAuthN: f.webAuthN && { verifiedAt: ts(f.webAuthN.verifiedAt), userVerified: f.webAuthN.userVerified },
      intent: f.intent && { verifiedAt: ts(f.intent.verifiedAt) },
      totp: f.totp && { verifiedAt: ts(f.totp.verifiedAt) },
      otpEmail: f.otpEmail && { verifiedAt: ts(f.otpEmail.verifiedAt) },
    },
    metadata: s.metadata,
    userAgent: s.userAgent && {
      fingerprintId: s.userAgent.fingerprintId,
      ip: s.userAgent.ip,
      description: s.userAgent.description,
      header: Object.fromEntries(Object.entries(s.userAgent.header ?? {}).map(([k, values]) => [k, { values }])),
    },
    expirationDate: tsOpt(s.expiresAt),
    nextStep: s.nextStep && { kind: STEP_KINDS[s.nextStep.kind], factors: "options" in s.nextStep ? s.nextStep.options.map(factorName) : [] },
  });
}

const STEP_KINDS: Record<Step["kind"], SignInStep_Kind> = {
  firstFactor: SignInStep_Kind.FIRST_FACTOR,
  secondFactor: SignInStep_Kind.SECOND_FACTOR,
  setUpSecondFactor: SignInStep_Kind.SET_UP_SECOND_FACTOR,
  changePassword: SignInStep_Kind.CHANGE_PASSWORD,
  done: SignInStep_Kind.DONE,
};

/** The factors' names on the wire (snake case). */
const factorName = (f: Factor) => (f === "otpEmail" ? "otp_email" : f);

function query(q: SearchQuery): SessionQuery {
  const v = q.query;
  switch (v.case) {
    case "idsQuery":
      return { ids: v.value.ids };
    case "userIdQuery":
      return { userId: v.value.id };
    case "creationDateQuery": {
      const at = dateOpt(v.value.creationDate, "creation_date_query.creation_date");
      if (!at) throw invalidArgument("Errors.Session.Query.Invalid", "creation_date_query needs a creation_date", { field: "creation_date_query" });
      return { created: { op: TIMESTAMP_OPS[v.value.method] ?? "eq", at } };
    }
    default:
      throw invalidArgument("Errors.Session.Query.Invalid", "a search query needs one of its filters", { field: "queries" });
  }
}

const changeDetails = (c: SessionChange) => details({ createdAt: c.createdAt, updatedAt: c.changedAt }, c.ownerId);

export function sessionService(): ServiceImpl<typeof SessionService> {
  return {
    async createSession(req, hctx) {
      const out = await createSession(ctxOf(hctx), {
        checks: checks(req.checks),
        challenges: challenges(req.challenges),
        metadata: req.metadata,
        userAgent: userAgent(req.userAgent),
        lifetimeSeconds: seconds(req.lifetime),
      });
      return {
        details: createdDetails(out.createdAt, out.ownerId),
        sessionId: out.sessionId,
        sessionToken: out.sessionToken,
        challenges: challengeAnswers(out.challenges),
      };
    },
    async setSession(req, hctx) {
      const out = await setSession(ctxOf(hctx), {
        sessionId: req.sessionId,
        sessionToken: req.sessionToken,
        checks: checks(req.checks),
        challenges: challenges(req.challenges),
        metadata: req.metadata,
        lifetimeSeconds: seconds(req.lifetime),
      });
      return { details: changeDetails(out), sessionToken: out.sessionToken, challenges: challengeAnswers(out.challenges) };
    },
    async getSession(req, hctx) {
      return { session: toSession(await getSession(ctxOf(hctx), req.sessionId, req.sessionToken, { nextStep: true })) };
    },
    async listSessions(req, hctx) {
      const ctx = ctxOf(hctx);
      const out = await listSessions(ctx, req.queries.map(query), page(listPage(req.query)));
      return { details: listDetails(ctx, out), sessions: out.sessions.map(toSession) };
    },
    async deleteSession(req, hctx) {
      return deleted(await deleteSession(ctxOf(hctx), req.sessionId, req.sessionToken));
    },
  };
}
