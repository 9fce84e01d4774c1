// Shared by the projects-*, grants-*, authorizations-* and apps-* tests: the
// REST/Connect call helper for ProjectService, AuthorizationService and
// ApplicationService (replies normalised to a Connect code and the
// ErrorInfo reason), and a world of two organizations with callers per role.

import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { expect } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { addMember, type Machine, machine, type World, world } from "./orgs.js";
import { rest, type TestServer } from "./server.js";

export type Via = "rest" | "connect";
export const VIAS: Via[] = ["rest", "connect"];

// biome-ignore lint/suspicious/noExplicitAny: JSON replies are checked field by field
export type Json = any;
type Req = Record<string, Json>;

const PROJECT = "svc.project.v2.ProjectService";
const AUTHZ = "svc.authorization.v2.AuthorizationService";
const APP = "svc.app.v2.ApplicationService";
const e = encodeURIComponent;
const without = (r: Req, ...keys: string[]) => Object.fromEntries(Object.entries(r).filter(([k]) => !keys.includes(k)));
const p = (r: Req) => `/v2/projects/${e(r.projectId ?? "")}`;
const g = (r: Req) => `${p(r)}/grants/${e(r.grantedOrganizationId ?? "")}`;
const a = (r: Req) => `${p(r)}/apps/${e(r.appId ?? "")}`;

/** RPC → service and REST mapping (method, path, body), as annotated in the protos. */
const ROUTES: Record<string, { service: string; rest: (r: Req) => [string, string, Req?] }> = {
  CreateProject: { service: PROJECT, rest: (r) => ["POST", "/v2/projects/new", r] },
  GetProject: { service: PROJECT, rest: (r) => ["GET", p(r)] },
  ListProjects: { service: PROJECT, rest: (r) => ["POST", "/v2/projects", r] },
  UpdateProject: { service: PROJECT, rest: (r) => ["POST", p(r), without(r, "projectId")] },
  DeactivateProject: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/deactivate`, {}] },
  ReactivateProject: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/reactivate`, {}] },
  DeleteProject: { service: PROJECT, rest: (r) => ["DELETE", p(r)] },
  AddProjectRole: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/roles`, without(r, "projectId")] },
  ListProjectRoles: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/roles/search`, without(r, "projectId")] },
  UpdateProjectRole: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/roles/${e(r.roleKey)}`, without(r, "projectId", "roleKey")] },
  RemoveProjectRole: { service: PROJECT, rest: (r) => ["DELETE", `${p(r)}/roles/${e(r.roleKey)}`] },
  CreateProjectGrant: { service: PROJECT, rest: (r) => ["POST", `${p(r)}/grants`, without(r, "projectId")] },
  ListProjectGrants: { service: PROJECT, rest: (r) => ["POST", "/v2/projects/grants/search", r] },
  UpdateProjectGrant: { service: PROJECT, rest: (r) => ["POST", g(r), without(r, "projectId", "grantedOrganizationId")] },
  DeactivateProjectGrant: { service: PROJECT, rest: (r) => ["POST", `${g(r)}/deactivate`, {}] },
  ReactivateProjectGrant: { service: PROJECT, rest: (r) => ["POST", `${g(r)}/reactivate`, {}] },
  DeleteProjectGrant: { service: PROJECT, rest: (r) => ["DELETE", g(r)] },
  AddUserGrant: { service: AUTHZ, rest: (r) => ["POST", "/v2/authorizations/new", r] },
  ListUserGrants: { service: AUTHZ, rest: (r) => ["POST", "/v2/authorizations", r] },
  UpdateUserGrant: { service: AUTHZ, rest: (r) => ["POST", `/v2/authorizations/${e(r.grantId)}`, without(r, "grantId")] },
  RemoveUserGrant: {
    service: AUTHZ,
    rest: (r) => ["DELETE", `/v2/authorizations/${e(r.grantId)}${r.userId ? `?userId=${e(r.userId)}` : ""}`],
  },
  CreateApplication: { service: APP, rest: (r) => ["POST", `${p(r)}/apps`, without(r, "projectId")] },
  GetApplication: { service: APP, rest: (r) => ["GET", a(r)] },
  ListApplications: { service: APP, rest: (r) => ["POST", `${p(r)}/apps/search`, without(r, "projectId")] },
  UpdateApplication: { service: APP, rest: (r) => ["POST", a(r), without(r, "projectId", "appId")] },
  DeactivateApplication: { service: APP, rest: (r) => ["POST", `${a(r)}/deactivate`, {}] },
  ReactivateApplication: { service: APP, rest: (r) => ["POST", `${a(r)}/reactivate`, {}] },
  DeleteApplication: { service: APP, rest: (r) => ["DELETE", a(r)] },
  RegenerateClientSecret: { service: APP, rest: (r) => ["POST", `${a(r)}/secret`, {}] },
  AddApplicationKey: { service: APP, rest: (r) => ["POST", `${a(r)}/keys`, without(r, "projectId", "appId")] },
  ListApplicationKeys: { service: APP, rest: (r) => ["POST", `${a(r)}/keys/search`, without(r, "projectId", "appId")] },
  RemoveApplicationKey: { service: APP, rest: (r) => ["DELETE", `${a(r)}/keys/${e(r.keyId)}`] },
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
  code: string;
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

export async function ok(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: Req = {}): Promise<Json> {
  const reply = await call(t, via, token, rpc, req);
  if (reply.code !== "ok") throw new Error(`${rpc} via ${via}: ${reply.code} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

export async function fails(t: TestServer, via: Via, token: string | undefined, rpc: Rpc, req: Req, code: string, reason?: string): Promise<Reply> {
  const reply = await call(t, via, token, rpc, req);
  expect({ rpc, via, code: reply.code, ...(reason ? { reason: reply.reason } : {}) }).toEqual({ rpc, via, code, ...(reason ? { reason } : {}) });
  return reply;
}

/** The orgs world plus an ORG_PROJECT_PERMISSION_MANAGER in A and a project in A with roles. */
export interface ProjectWorld extends World {
  ppmA: Machine;
}

export async function projectWorld(t: TestServer, prefix: string): Promise<ProjectWorld> {
  const w = await world(t, prefix);
  const ppmA = await machine(t, w.orgA, `${prefix}-ppm-a`);
  await addMember(t, w.orgA, ppmA.userId, ["ORG_PROJECT_PERMISSION_MANAGER"]);
  return { ...w, ppmA };
}

/** A project in `orgId` with the given roles, made by the instance admin. */
export async function project(t: TestServer, orgId: string, name: string, roles: string[] = []): Promise<string> {
  const { projectId } = await ok(t, "rest", t.pat, "CreateProject", { organizationId: orgId, name });
  for (const roleKey of roles) await ok(t, "rest", t.pat, "AddProjectRole", { projectId, roleKey, displayName: roleKey.toUpperCase() });
  return projectId;
}

export const sorted = (xs: string[]) => [...xs].sort();
