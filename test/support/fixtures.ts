// The one way tests make things: organizations with members, users and their
// credentials, projects with roles. Everything goes through the real API as
// the instance admin (REST, paths from the protos), so fixtures are built by
// the same code paths the tests then exercise.

import { admin, type Json } from "./rpc.js";
import type { TestServer } from "./server.js";

export const PASSWORD = "Initial-Passw0rd!";

/** A machine user's id and the bearer token (PAT) it calls with. */
export interface Caller {
  userId: string;
  pat: string;
}

/** A caller whose PAT id is known (to list or revoke it). */
export interface Machine extends Caller {
  tokenId: string;
}

export async function defaultOrgId(t: TestServer): Promise<string> {
  return (await admin(t, "GetInstance")).instance.defaultOrganizationId;
}

/** An organization, optionally with its first administrators (CreateOrganization's `admins`). */
export async function createOrg(t: TestServer, name: string, admins: Json[] = []): Promise<string> {
  return (await admin(t, "CreateOrganization", { name, admins })).organizationId;
}

export async function addMember(t: TestServer, orgId: string, userId: string, roles: string[]): Promise<void> {
  await admin(t, "AddOrganizationMember", { organizationId: orgId, userId, roles });
}

export async function createMachine(t: TestServer, orgId: string, username: string): Promise<string> {
  return (await admin(t, "CreateUser", { organizationId: orgId, username, machine: { name: username } })).id;
}

export async function createHuman(
  t: TestServer,
  orgId: string,
  username: string,
  password: { password?: string; hashedPassword?: string } = { password: PASSWORD },
): Promise<string> {
  const { id } = await admin(t, "CreateUser", {
    organizationId: orgId,
    username,
    human: {
      profile: { givenName: "Given", familyName: "Family" },
      email: { email: `${username}@example.com` },
      ...(password.password ? { password: { password: password.password } } : {}),
      ...(password.hashedPassword ? { hashedPassword: { hash: password.hashedPassword } } : {}),
    },
  });
  return id;
}

/** A new PAT of `userId`: the token (shown once) and its id. */
export async function newPat(t: TestServer, userId: string): Promise<{ token: string; tokenId: string }> {
  const { token, id } = await admin(t, "AddPersonalAccessToken", { userId });
  return { token, tokenId: id };
}

/** A new PAT of `userId` (the token only). */
export async function addPat(t: TestServer, userId: string): Promise<string> {
  return (await newPat(t, userId)).token;
}

/** A machine user with a PAT and, when `roles` is given, membership with those roles in `roleOrg`. */
export async function machine(t: TestServer, orgId: string, username: string, roles: string[] = [], roleOrg = orgId): Promise<Machine> {
  const userId = await createMachine(t, orgId, username);
  if (roles.length) await addMember(t, roleOrg, userId, roles);
  const { token, tokenId } = await newPat(t, userId);
  return { userId, pat: token, tokenId };
}

/** A project in `orgId` with the given roles (display name: the key in upper case). */
export async function project(t: TestServer, orgId: string, name: string, roles: string[] = []): Promise<string> {
  const { projectId } = await admin(t, "CreateProject", { organizationId: orgId, name });
  for (const roleKey of roles) await admin(t, "AddProjectRole", { projectId, roleKey, displayName: roleKey.toUpperCase() });
  return projectId;
}

/**
 * Two organizations A and B. In A: an ORG_OWNER, an ORG_USER_MANAGER, an
 * ORG_AUDITOR and a user without a role; in B: an ORG_OWNER. Usernames get
 * `prefix` so several worlds fit in one instance.
 */
export interface World {
  orgA: string;
  orgB: string;
  ownerA: Machine;
  userManagerA: Machine;
  auditorA: Machine;
  plainA: Machine;
  ownerB: Machine;
}

export async function world(t: TestServer, prefix: string): Promise<World> {
  const orgA = await createOrg(t, `${prefix} Alpha`);
  const orgB = await createOrg(t, `${prefix} Beta`);
  const [ownerA, userManagerA, auditorA, plainA, ownerB] = await Promise.all([
    machine(t, orgA, `${prefix}-owner-a`),
    machine(t, orgA, `${prefix}-usermanager-a`),
    machine(t, orgA, `${prefix}-auditor-a`),
    machine(t, orgA, `${prefix}-plain-a`),
    machine(t, orgB, `${prefix}-owner-b`),
  ]);
  await addMember(t, orgA, ownerA.userId, ["ORG_OWNER"]);
  await addMember(t, orgA, userManagerA.userId, ["ORG_USER_MANAGER"]);
  await addMember(t, orgA, auditorA.userId, ["ORG_AUDITOR"]);
  await addMember(t, orgB, ownerB.userId, ["ORG_OWNER"]);
  return { orgA, orgB, ownerA, userManagerA, auditorA, plainA, ownerB };
}

/** The orgs world plus an ORG_PROJECT_PERMISSION_MANAGER in A. */
export interface ProjectWorld extends World {
  ppmA: Machine;
}

export async function projectWorld(t: TestServer, prefix: string): Promise<ProjectWorld> {
  const w = await world(t, prefix);
  const ppmA = await machine(t, w.orgA, `${prefix}-ppm-a`, ["ORG_PROJECT_PERMISSION_MANAGER"]);
  return { ...w, ppmA };
}

/**
 * The callers of the UserService tests: the default org, another org, and
 * machine users with no role, ORG_AUDITOR and ORG_USER_MANAGER of the
 * default org, and ORG_USER_MANAGER of the other org (for which the default
 * org's users do not exist).
 */
export interface UserCallers {
  orgId: string;
  otherOrgId: string;
  nobody: Caller;
  auditor: Caller;
  manager: Caller;
  foreignManager: Caller;
}

export async function userCallers(t: TestServer): Promise<UserCallers> {
  const orgId = await defaultOrgId(t);
  const otherOrgId = await createOrg(t, "Other");
  const nobody = await machine(t, orgId, "nobody");
  const auditor = await machine(t, orgId, "auditor", ["ORG_AUDITOR"]);
  const manager = await machine(t, orgId, "manager", ["ORG_USER_MANAGER"]);
  const foreignManager = await machine(t, otherOrgId, "foreign-manager", ["ORG_USER_MANAGER"]);
  return { orgId, otherOrgId, nobody, auditor, manager, foreignManager };
}

export const sorted = (xs: string[]) => [...xs].sort();
