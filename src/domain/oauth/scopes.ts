// Scopes: which requested scopes a grant keeps and the audience they make.
import { invalidScope } from "./errors.js";
import type { OAuthRuntime } from "./runtime.js";

export const MANAGEMENT_AUDIENCE = "svc";
export const SCOPE_MANAGEMENT = "urn:svc:iam:org:project:id:svc:aud";
/** Scope: every role of the user in the token's projects. */
export const SCOPE_ALL_ROLES = "urn:svc:iam:org:projects:roles";
/** Scope and claim: the user's metadata, each value base64-encoded. */
export const SCOPE_METADATA = "urn:svc:iam:user:metadata";

/** Project ids are always generated (ids.ts): 26 lower-case Crockford base32 characters. */
const PROJECT_ID_SHAPE = /^[0-9a-z]{26}$/;
/** Application client ids are `<generated id>@<project slug>` (apps.ts). */
const APP_CLIENT_ID_SHAPE = /^[0-9a-z]{26}@/;
const PROJECT_AUD = /^urn:svc:iam:org:project:id:([A-Za-z0-9_-]{1,64}):aud$/;
export const ROLE_SCOPE = /^urn:svc:iam:org:project:role:([A-Za-z0-9._:-]{1,200})$/;
const ORG_SCOPE = /^urn:svc:iam:org:id:([A-Za-z0-9_-]{1,64})$/;
const SIMPLE_SCOPES = new Set(["openid", "profile", "email", "phone", SCOPE_ALL_ROLES, SCOPE_METADATA]);
const MAX_SCOPES = 100;

export interface GrantedScopes {
  scopes: string[];
  audience: string[];
  projectIds: string[];
}

/** The `scope` parameter's tokens (at most MAX_SCOPES). */
export function scopeTokens(requested: string | undefined): string[] {
  return (requested ?? "").split(" ").filter(Boolean).slice(0, MAX_SCOPES);
}

/**
 * The scopes a user's grant may keep before the projects are checked: known scopes, project audiences (their
 * project ids in `projects`) and the user's own organization's scope; unknown ones are dropped, repeats once.
 */
export function parseUserScopes(requested: string | undefined, orgId: string): { scopes: string[]; projects: string[] } {
  const scopes: string[] = [];
  const projects: string[] = [];
  for (const s of scopeTokens(requested)) {
    if (scopes.includes(s)) continue;
    if (SIMPLE_SCOPES.has(s) || s === SCOPE_MANAGEMENT || ROLE_SCOPE.test(s)) {
      scopes.push(s);
      continue;
    }
    const project = PROJECT_AUD.exec(s)?.[1];
    if (project) {
      projects.push(project);
      scopes.push(s);
    } else if (ORG_SCOPE.exec(s)?.[1] === orgId) {
      scopes.push(s);
    }
  }
  return { scopes, projects };
}

/** Project audience scopes naming a project not in `projectIds` are dropped. */
export function keepKnownProjects(scopes: readonly string[], projectIds: readonly string[]): string[] {
  return scopes.filter((s) => {
    const m = s === SCOPE_MANAGEMENT ? null : PROJECT_AUD.exec(s);
    return !m || projectIds.includes(m[1] as string);
  });
}

/**
 * What grantScopes reads, when the caller read it already with the rest of its grant (one statement for the whole
 * read): the gates of the projects it asked about, for the grant's user, and whether an application has the client id.
 */
export interface ScopeFacts {
  /** Project id → whether the user passes its gates; an id asked about but absent is no project of the instance. */
  gates: ReadonlyMap<string, boolean>;
  asked: readonly string[];
  appClientExists: boolean;
}

/** The projects whose gates every grant of `clientId` reads, whatever its scopes: the app's project, a project-shaped client id. */
export function clientProjects(clientId: string, appProjectId?: string): string[] {
  return [...(PROJECT_ID_SHAPE.test(clientId) ? [clientId] : []), ...(appProjectId ? [appProjectId] : [])];
}

/**
 * Unknown scopes are dropped; project audiences must name projects of this
 * instance. A project the user may not reach (its authorizationRequired or
 * projectAccessRequired gate, the user's application's project included)
 * fails the grant with invalid_scope: the token is never issued for it.
 * `facts`: what the caller already read (whatever it did not ask about is read here).
 */
export async function grantScopes(
  rt: OAuthRuntime,
  requested: string | undefined,
  user: { id: string; orgId: string },
  clientId: string,
  appProjectId?: string,
  facts?: ScopeFacts,
): Promise<GrantedScopes> {
  const { scopes, projects: wantedProjects } = parseUserScopes(requested, user.orgId);
  const projectIds: string[] = [];
  // A machine user's username or id is chosen by whoever creates it: it must not put a project id or
  // the management audience in the token's aud (resource servers of that project would accept it).
  let clientIsAmbiguous = clientId === MANAGEMENT_AUDIENCE;
  const lookup = [...wantedProjects, ...clientProjects(clientId, appProjectId)];
  if (lookup.length) {
    const found = facts && lookup.every((id) => facts.asked.includes(id)) ? facts.gates : await readGates(rt, lookup, user);
    for (const p of appProjectId ? [appProjectId, ...wantedProjects] : wantedProjects) {
      if (found.get(p) === false) throw invalidScope(`the user has no access to project ${p}`);
    }
    for (const p of wantedProjects) if (found.has(p)) projectIds.push(p);
    if (lookup.includes(clientId) && found.has(clientId)) clientIsAmbiguous = true;
  }
  // Nor an application's client id (a user id may be chosen at creation, "@" included).
  if (!clientIsAmbiguous && APP_CLIENT_ID_SHAPE.test(clientId) && (facts ? facts.appClientExists : await rt.store.tokens.appClientExists(clientId))) {
    clientIsAmbiguous = true;
  }
  const kept = keepKnownProjects(scopes, projectIds);
  if (appProjectId && !projectIds.includes(appProjectId)) projectIds.unshift(appProjectId);
  const audience = [...(clientIsAmbiguous ? [] : [clientId]), ...projectIds];
  if (kept.includes(SCOPE_MANAGEMENT)) audience.push(MANAGEMENT_AUDIENCE);
  return { scopes: kept, audience: [...new Set(audience)], projectIds };
}

async function readGates(rt: OAuthRuntime, ids: string[], user: { id: string; orgId: string }): Promise<Map<string, boolean>> {
  return new Map((await rt.store.tokens.projectGates(rt.instanceId, ids, user)).map((p) => [p.id, p.allowed]));
}

/**
 * Scopes of an API application's own token: only what means something without
 * a user. The audience is fixed to the app's project and itself, never the
 * management API (an app has no permissions there) nor other projects (an app
 * cannot widen its reach across projects or organizations); the scopes naming
 * exactly these are echoed, everything else (openid, profile, email, phone,
 * offline_access, metadata and role scopes, the management audience) is
 * dropped, as unknown scopes are.
 */
export function grantAppScopes(requested: string | undefined, app: { clientId: string; orgId: string; projectId: string }): GrantedScopes {
  const raw = new Set(scopeTokens(requested));
  const scopes = [...raw].filter((s) => PROJECT_AUD.exec(s)?.[1] === app.projectId || ORG_SCOPE.exec(s)?.[1] === app.orgId);
  return { scopes, audience: [app.projectId, app.clientId], projectIds: [app.projectId] };
}

/**
 * The `scope` of a response or token: RFC 6749 §3.3 makes a scope at least one
 * scope token, so a grant of none leaves the member out (JSON drops undefined).
 */
export function scopeValue(scopes: readonly string[]): string | undefined {
  return scopes.length ? scopes.join(" ") : undefined;
}
