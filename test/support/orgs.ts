// Shared by the orgs-* and instance-* tests: one call helper that speaks
// REST (the google.api.http paths) or Connect JSON, with replies normalised
// to a Connect code and the ErrorInfo reason, so one expectation checks both
// transports; and a world of two organizations with callers per role.

import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { expect } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { rest, type TestServer } from "./server.js";

export type Via = "rest" | "connect";
export const VIAS: Via[] = ["rest", "connect"];

// biome-ignore lint/suspicious/noExplicitAny: JSON replies are checked field by field
type Json = any;
type Req = Record<string, Json>;

const ORG = "svc.org.v2.OrganizationService";
const INSTANCE = "svc.instance.v2.InstanceService";
const e = encodeURIComponent;
const without = (r: Req, ...keys: string[]) => Object.fromEntries(Object.entries(r).filter(([k]) => !keys.includes(k)));

/** RPC → service and REST mapping (method, path, body), as annotated in the protos. */
const ROUTES: Record<string, { service: string; rest: (r: Req) => [string, string, Req?] }> = {
  CreateOrganization: { service: ORG, rest: (r) => ["POST", "/v2/organizations/new", r] },
  GetOrganizationByID: { service: ORG, rest: (r) => ["GET", `/v2/organizations/${e(r.organizationId)}`] },
  ListOrganizations: { service: ORG, rest: (r) => ["POST", "/v2/organizations", r] },
  UpdateOrganization: { service: ORG, rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}`, without(r, "organizationId")] },
  DeactivateOrganization: { service: ORG, rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/deactivate`, {}] },
  ReactivateOrganization: { service: ORG, rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/reactivate`, {}] },
  DeleteOrganization: { service: ORG, rest: (r) => ["DELETE", `/v2/organizations/${e(r.organizationId)}`] },
  SetOrganizationMetadata: {
    service: ORG,
    rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/metadata`, without(r, "organizationId")],
  },
  ListOrganizationMetadata: {
    service: ORG,
    rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/metadata/search`, without(r, "organizationId")],
  },
  DeleteOrganizationMetadata: {
    service: ORG,
    rest: (r) => ["DELETE", `/v2/organizations/${e(r.organizationId)}/metadata?${((r.keys ?? []) as string[]).map((k) => `keys=${e(k)}`).join("&")}`],
  },
  AddOrganizationMember: {
    service: ORG,
    rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/members`, without(r, "organizationId")],
  },
  ListOrganizationMembers: {
    service: ORG,
    rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/members/search`, without(r, "organizationId")],
  },
  UpdateOrganizationMember: {
    service: ORG,
    rest: (r) => ["POST", `/v2/organizations/${e(r.organizationId)}/members/${e(r.userId)}`, without(r, "organizationId", "userId")],
  },
  RemoveOrganizationMember: {
    service: ORG,
    rest: (r) => ["DELETE", `/v2/organizations/${e(r.organizationId)}/members/${e(r.userId)}`],
  },
  AddInstanceMember: { service: INSTANCE, rest: (r) => ["POST", "/v2/instance/members", r] },
  ListInstanceMembers: { service: INSTANCE, rest: (r) => ["POST", "/v2/instance/members/search", r] },
  UpdateInstanceMember: { service: INSTANCE, rest: (r) => ["POST", `/v2/instance/members/${e(r.userId)}`, without(r, "userId")] },
  RemoveInstanceMember: { service: INSTANCE, rest: (r) => ["DELETE", `/v2/instance/members/${e(r.userId)}`] },
};

export type Rpc = keyof typeof ROUTES;

const CODE_NAMES: Record<number, string> = {
  3: "invalid_argument",
  5: "not_found",
  6: "already_exists",
  7: "permission_denied",
  9: "failed_precondition",
  13: "internal",
  16: "unauthenticated",
};

export interface Reply {
  /** "ok" or the Connect error code name. */
  code: string;
  /** google.rpc.ErrorInfo reason of an error. */
  reason?: string;
  status: number;
  body: Json;
}

export async function call(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: Req = {}): Promise<Reply> {
  const route = ROUTES[rpc];
  if (!route) throw new Error(`unknown rpc ${rpc}`);
  let res: Response;
  if (via === "rest") {
    const [method, path, body] = route.rest(req);
    res = await rest(t.url, token, method, path, body);
  } else {
    res = await fetch(`${t.url}/${route.service}/${rpc}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(req),
    });
  }
  const text = await res.text();
  const body = text ? JSON.parse(text) : {};
  if (res.status === 200) return { code: "ok", status: 200, body };
  if (via === "rest") {
    return { code: CODE_NAMES[body.code as number] ?? `code ${body.code}`, reason: body.details?.[0]?.reason, status: res.status, body };
  }
  const info = body.details?.find((d: Json) => d.type === "google.rpc.ErrorInfo");
  const reason = info ? fromBinary(ErrorInfoSchema, base64Decode(info.value)).reason : undefined;
  return { code: body.code, reason, status: res.status, body };
}

/** Calls and expects success, returning the JSON body. */
export async function ok(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: Req = {}): Promise<Json> {
  const reply = await call(t, via, token, rpc, req);
  if (reply.code !== "ok") throw new Error(`${rpc} via ${via}: ${reply.code} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** Calls and expects the error code (and reason, when given). */
export async function fails(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: Req, code: string, reason?: string): Promise<Reply> {
  const reply = await call(t, via, token, rpc, req);
  expect({ rpc, via, code: reply.code, ...(reason ? { reason: reply.reason } : {}) }).toEqual({ rpc, via, code, ...(reason ? { reason } : {}) });
  return reply;
}

export async function defaultOrgId(t: TestServer): Promise<string> {
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  return ((await res.json()) as Json).instance.defaultOrganizationId;
}

export interface Machine {
  userId: string;
  pat: string;
  tokenId: string;
}

/** A machine user with a PAT, created by the instance admin. */
export async function machine(t: TestServer, orgId: string, username: string): Promise<Machine> {
  const created = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username, machine: { name: username } });
  if (created.status !== 200) throw new Error(`create ${username}: ${created.status} ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const pat = await rest(t.url, t.pat, "POST", `/v2/users/${id}/pats`, {});
  if (pat.status !== 200) throw new Error(`pat of ${username}: ${pat.status} ${await pat.text()}`);
  const body = (await pat.json()) as { id: string; token: string };
  return { userId: id, pat: body.token, tokenId: body.id };
}

export async function createOrg(t: TestServer, name: string, admins: Req[] = []): Promise<string> {
  return (await ok(t, "rest", t.pat, "CreateOrganization", { name, admins })).organizationId;
}

export async function addMember(t: TestServer, orgId: string, userId: string, roles: string[]): Promise<void> {
  await ok(t, "rest", t.pat, "AddOrganizationMember", { organizationId: orgId, userId, roles });
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
