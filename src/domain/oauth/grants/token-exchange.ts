// RFC 8693 token exchange. A machine user holding oauth.token_exchange (IAM_TOKEN_EXCHANGER instance-wide,
// ORG_TOKEN_EXCHANGER in the subject's organization; ZITADEL's impersonator roles) trades a user's access token for a
// narrower one: impersonation without an actor token, delegation (the `act` claim naming the client) with its own.
// Audience and scope only narrow, the lifetime never outlasts the subject token, and each exchange is an audit event
// written in the transaction that writes the token. A subject token that was itself delegated keeps its actors: a
// delegation nests them under the new actor (RFC 8693 §4.1, at most MAX_ACTORS deep), an impersonation carries them
// unchanged, so that no exchange turns a delegated token into one that names nobody.

import type { TokenActor } from "../../../store/tokens.js";
import { rolesHold } from "../../access/permissions.js";
import { eventRow } from "../../audit/events.js";
import type { ClientRecord } from "../client-auth.js";
import { invalidRequest, invalidScope, invalidTarget, unauthorizedClient } from "../errors.js";
import { prepareTokens, type TokenResponse } from "../issue.js";
import { resolveToken, type UserToken } from "../resolve.js";
import type { OAuthRuntime } from "../runtime.js";
import { type GrantedScopes, scopeTokens } from "../scopes.js";
import type { Grant } from "./types.js";

export const GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
export const TOKEN_TYPE_ACCESS = "urn:ietf:params:oauth:token-type:access_token";
export const TOKEN_TYPE_JWT = "urn:ietf:params:oauth:token-type:jwt";
const SUPPORTED_TYPES = [TOKEN_TYPE_ACCESS, TOKEN_TYPE_JWT];
/** How many actors a delegation chain may name (each exchange by a delegate adds one). */
export const MAX_ACTORS = 5;
/** Project ids (ids.ts): what in an audience can carry role claims. */
const ID_SHAPE = /^[0-9a-z]{26}$/;

type Params = Record<string, string | undefined>;

/**
 * A presented token of a supported type: one of ours, live, standing for a user. RFC 8693 §2.2.2: a token that is
 * invalid or unacceptable for any reason is invalid_request.
 */
async function presentedUserToken(rt: OAuthRuntime, token: string | undefined, type: string | undefined, name: string, now: Date): Promise<UserToken> {
  if (!token) throw invalidRequest(`${name} is required`);
  if (!type) throw invalidRequest(`${name}_type is required`);
  if (!SUPPORTED_TYPES.includes(type)) throw invalidRequest(`${name}_type must be one of ${SUPPORTED_TYPES.join(", ")}`);
  const resolved = await resolveToken(rt, token, now);
  if (resolved?.subject !== "user") throw invalidRequest(`the ${name} is invalid, expired or revoked`);
  if (type === TOKEN_TYPE_JWT && resolved.kind !== "jwt") throw invalidRequest(`the ${name} is not a JWT`);
  return resolved;
}

/** The machine user the client is, holding oauth.token_exchange for users of `orgId`; unauthorized_client otherwise. */
async function exchanger(rt: OAuthRuntime, client: ClientRecord | undefined, orgId: string): Promise<ClientRecord & { userId: string }> {
  if (client?.kind !== "user" || !client.userId) throw unauthorizedClient("only machine users may exchange tokens");
  const held = await rt.store.grants.heldRoles(rt.instanceId, client.userId, orgId);
  const roles = { instance: held.instance?.roles ?? [], org: held.orgs.flatMap((m) => m.roles) };
  if (!rolesHold(roles, "oauth.token_exchange")) throw unauthorizedClient("the client may not exchange tokens of this user");
  return client as ClientRecord & { userId: string };
}

/** The requested scopes and audience, each a subset of the subject token's; all of them when none is asked for. */
function narrowed(subject: UserToken, params: Params): GrantedScopes {
  const asked = scopeTokens(params.scope);
  const widened = asked.filter((s) => !subject.scopes.includes(s));
  if (widened.length) throw invalidScope(`the subject token does not carry ${widened.join(" ")}`);
  const targets = [...new Set([...scopeTokens(params.audience), ...scopeTokens(params.resource)])];
  const foreign = targets.filter((a) => !subject.audience.includes(a));
  if (foreign.length) throw invalidTarget(`the subject token is not for ${foreign.join(" ")}`);
  const audience = targets.length ? targets : subject.audience;
  return { scopes: asked.length ? asked : subject.scopes, audience, projectIds: audience.filter((a) => ID_SHAPE.test(a)) };
}

export const tokenExchange: Grant = {
  type: GRANT_TOKEN_EXCHANGE,
  parameters: ["subject_token", "subject_token_type", "actor_token", "actor_token_type", "audience", "resource", "scope", "requested_token_type"],
  clientAuthentication: "required",
  async handle(rt, params, client, now) {
    const requested = params.requested_token_type ?? TOKEN_TYPE_ACCESS;
    if (!SUPPORTED_TYPES.includes(requested)) throw invalidRequest(`requested_token_type must be one of ${SUPPORTED_TYPES.join(", ")}`);
    const subject = await presentedUserToken(rt, params.subject_token, params.subject_token_type, "subject_token", now);
    const me = await exchanger(rt, client, subject.user.orgId);
    // The subject token's own actors stay named (an impersonation of a delegated token is still the delegate's doing).
    let act: TokenActor | undefined = subject.act;
    const delegation = params.actor_token !== undefined || params.actor_token_type !== undefined;
    if (delegation) {
      // Delegation: the actor is the client itself, proven by a token of its own (RFC 8693 §4.1), the earlier
      // actors nested under it.
      const actor = await presentedUserToken(rt, params.actor_token, params.actor_token_type, "actor_token", now);
      if (actor.user.id !== me.userId) throw invalidRequest("the actor_token must stand for the client");
      act = { sub: actor.user.id, ...(subject.act ? { act: subject.act } : {}) };
      if (actorCount(act) > MAX_ACTORS) throw invalidRequest(`a delegation may name at most ${MAX_ACTORS} actors`);
    }
    const granted = narrowed(subject, params);
    const left = subject.expiresAt === null ? Number.POSITIVE_INFINITY : Math.floor((subject.expiresAt - now.getTime()) / 1000);
    if (left <= 0) throw invalidRequest("the subject_token is invalid, expired or revoked");
    const lifetime = Math.min(rt.lifetimes.user, left);
    // The act claim travels in the token: with an actor, the issued access token is a JWT.
    const tokenType = requested === TOKEN_TYPE_JWT || act ? "JWT" : me.accessTokenType;
    const { response, row } = await prepareTokens(rt, {
      userId: subject.user.id,
      orgId: subject.user.orgId,
      clientId: me.clientId,
      granted,
      lifetime,
      tokenType,
      now,
      act,
    });
    await rt.store.transaction(async (tx) => {
      // The user's sign-in session, when the subject token came from one: ending it (logout, DeleteSession) ends this too.
      if (!(await tx.tokens.insertOne({ ...row, sessionId: subject.principal.sessionId ?? null }))) throw new Error("token id collision");
      await tx.events.append(
        eventRow(
          { instanceId: rt.instanceId, clock: () => now, principal: { userId: me.userId } },
          {
            aggregateType: "user",
            aggregateId: subject.user.id,
            orgId: subject.user.orgId,
            type: delegation ? "oauth.token.exchanged.delegation" : "oauth.token.exchanged.impersonation",
            payload: {
              clientId: me.clientId,
              actor: delegation ? (act?.sub ?? null) : null,
              ...(act?.act || (!delegation && act) ? { actors: actorChain(act) } : {}),
              subjectTokenId: subject.id,
              tokenId: row.id,
              scopes: granted.scopes,
              audience: granted.audience,
            },
          },
        ),
      );
    });
    // RFC 8693 §2.2.1: no ID token (nothing was signed in), the type issued named.
    const answer: TokenResponse = { ...response, issued_token_type: requested };
    delete answer.id_token;
    return answer;
  },
};

function actorCount(act: TokenActor | undefined): number {
  let n = 0;
  for (let a = act; a; a = a.act) n++;
  return n;
}

/** The actors of a chain, the latest first. */
function actorChain(act: TokenActor | undefined): string[] {
  const out: string[] = [];
  for (let a = act; a; a = a.act) out.push(a.sub);
  return out;
}
