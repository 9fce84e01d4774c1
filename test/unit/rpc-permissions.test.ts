// Every RPC declares what a caller must hold (svc.options.v2.auth_option in the protos), and the Connect interceptor
// refuses a caller holding it nowhere. No server and no database: the interceptor runs in an in-memory router with
// a stand-in authenticator and stub handlers.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createConnectRouter, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { auth_option } from "../../gen/svc/options/v2/auth_pb.js";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { type ApiDeps, AUTHENTICATED, type Authenticator, authInterceptor, checkDeclaredPermission } from "../../src/api/connect.js";
import { API_SERVICES } from "../../src/api/services.js";
import { INSTANCE_ROLES, ORG_ROLES } from "../../src/domain/access/permissions.js";
import type { Ctx, Principal } from "../../src/domain/context.js";
import { unauthenticated } from "../../src/domain/errors.js";
import { createRestTranscoder } from "../../src/http/transcoder.js";

const KNOWN = new Set([AUTHENTICATED, ...Object.values(INSTANCE_ROLES).flat(), ...Object.values(ORG_ROLES).flat()]);
const methods = API_SERVICES.flatMap((s) => s.methods.map((m) => [`${s.typeName}/${m.name}`, m] as const));

describe("every RPC declares its permission", () => {
  it("covers every registered service", () => {
    expect(methods.length).toBeGreaterThan(90);
  });

  it.each(methods)("%s", (_name, method) => {
    expect(hasOption(method, auth_option)).toBe(true);
    const auth = getOption(method, auth_option);
    expect(KNOWN).toContain(auth.permission);
    if (auth.checkFieldName) {
      expect(auth.permission).not.toBe(AUTHENTICATED);
      expect(method.input.fields.map((f) => f.name)).toContain(auth.checkFieldName);
    }
  });
});

function principal(roles: { instance?: string[]; org?: Record<string, string[]> } = {}): Principal {
  return {
    userId: "u1",
    instanceId: "i1",
    orgId: "o1",
    userType: "MACHINE",
    instanceRoles: roles.instance ?? [],
    orgRoles: new Map(Object.entries(roles.org ?? {})),
    credentialId: "pat1",
  };
}

/** The interceptor, authenticating every call as `caller` (or none). */
function interceptorFor(caller: Principal | undefined) {
  const authenticate: Authenticator = async () => {
    if (!caller) throw unauthenticated("Errors.Token.Missing", "no token");
    return caller;
  };
  const deps = { instanceId: "i1", authenticate, clock: () => new Date(), log: pino({ level: "silent" }) } as unknown as ApiDeps;
  return authInterceptor(deps);
}

/** Clients of an in-memory router whose handlers answer empty: an error can only come from the interceptor. */
function clients(caller: Principal | undefined) {
  const transport = createRouterTransport(
    (router) => {
      router.service(UserService, { listUsers: async () => ({}), getUserByID: async () => ({}) });
      router.service(InstanceService, { getInstance: async () => ({}) });
      router.service(OrganizationService, { createOrganization: async () => ({}), getOrganizationByID: async () => ({}) });
      router.service(EventService, { listEvents: async () => ({}) });
      router.service(ProjectService, { listProjects: async () => ({}), getProject: async () => ({}) });
    },
    { router: { interceptors: [interceptorFor(caller)] } },
  );
  return {
    users: createClient(UserService, transport),
    instance: createClient(InstanceService, transport),
    orgs: createClient(OrganizationService, transport),
    events: createClient(EventService, transport),
    projects: createClient(ProjectService, transport),
  };
}

async function refusal(call: Promise<unknown>): Promise<{ code: Code; message: string } | undefined> {
  try {
    await call;
    return undefined;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
}

const denied = (permission: string) => ({ code: Code.PermissionDenied, message: `missing permission ${permission}` });

describe("the interceptor", () => {
  it("refuses a caller without any role the RPCs that name no resource", async () => {
    const c = clients(principal());
    expect(await refusal(c.users.listUsers({}))).toEqual(denied("user.read"));
    expect(await refusal(c.instance.getInstance({}))).toEqual(denied("iam.read"));
    expect(await refusal(c.orgs.createOrganization({ name: "x" }))).toEqual(denied("org.create"));
    expect(await refusal(c.events.listEvents({}))).toEqual(denied("events.read"));
  });

  it("leaves RPCs naming their resource, and RPCs open to any authenticated caller, to the domain", async () => {
    const c = clients(principal());
    expect(await refusal(c.users.getUserByID({ userId: "u1" }))).toBeUndefined();
    expect(await refusal(c.orgs.getOrganizationByID({ organizationId: "o2" }))).toBeUndefined();
    expect(await refusal(c.projects.getProject({ projectId: "p1" }))).toBeUndefined();
  });

  it("lets through a caller holding the permission in some organization, and refuses one holding it nowhere", async () => {
    const c = clients(principal({ org: { o1: ["ORG_USER_MANAGER"] } }));
    expect(await refusal(c.users.listUsers({}))).toBeUndefined();
    expect(await refusal(c.projects.listProjects({}))).toEqual(denied("project.read"));
    expect(await refusal(c.events.listEvents({}))).toEqual(denied("events.read"));
    expect(await refusal(c.instance.getInstance({}))).toEqual(denied("iam.read"));
  });

  it("lets instance roles through everywhere they grant", async () => {
    const c = clients(principal({ instance: ["IAM_OWNER_VIEWER"] }));
    expect(await refusal(c.instance.getInstance({}))).toBeUndefined();
    expect(await refusal(c.events.listEvents({}))).toBeUndefined();
    expect(await refusal(c.orgs.createOrganization({ name: "x" }))).toEqual(denied("org.create"));
  });

  it("answers Unauthenticated before any permission", async () => {
    expect((await refusal(clients(undefined).users.listUsers({})))?.code).toBe(Code.Unauthenticated);
  });

  it("refuses an RPC that declares nothing", () => {
    const ctx = { principal: principal({ instance: ["IAM_OWNER"] }) } as unknown as Ctx;
    expect(() => checkDeclaredPermission(ctx, Health.method.check)).toThrow("declares no permission");
  });

  it("guards REST calls too: the transcoder calls the router's handlers, interceptor included", async () => {
    const router = createConnectRouter({ interceptors: [interceptorFor(principal({ org: { o1: ["ORG_USER_MANAGER"] } }))] });
    router.service(InstanceService, { getInstance: async () => ({}) });
    router.service(UserService, { listUsers: async () => ({}) });
    const rest = createRestTranscoder(router);
    const server = createServer((req, res) => {
      if (!rest(req, res)) res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const instance = await fetch(`${base}/v2/instance`);
      expect({ status: instance.status, body: await instance.json() }).toMatchObject({ status: 403, body: { message: "missing permission iam.read" } });
      const users = await fetch(`${base}/v2/users`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
      expect(users.status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
