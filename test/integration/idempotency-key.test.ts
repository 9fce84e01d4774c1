// Issue 25, finding 5: the Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header) on the API's creates
// (REST, Connect) and SCIM POST /Users, through real clients, on the embedded database and (SVC_TEST_DATABASE_URL)
// PostgreSQL: a retry with the same key, principal and request gets the first answer and creates nothing; the same key
// with another request is 422 (REST, SCIM) / FAILED_PRECONDITION (Connect); a key is per principal; the answer
// stored for a PAT holds neither the PAT nor the key in the clear.
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { createOrg, machine } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { grpcClient, rpcError } from "../support/users.js";

let t: TestServer;
let orgId: string;
let manager: string;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await createOrg(t, "Idempotent");
  manager = (await machine(t, orgId, "idem-manager", ["ORG_USER_MANAGER"])).pat;
});
afterAll(() => t?.stop());

const USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User";

function rest(path: string, body: unknown, key: string | undefined, token = t.pat): Promise<Response> {
  return fetch(`${t.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) },
    body: JSON.stringify(body),
  });
}

const machines = async (username: string) => t.server.db.prisma.user.count({ where: { orgId, username } });

describe("Idempotency-Key on REST creates", () => {
  it("a retry gets the first answer, marked Idempotent-Replayed, and creates nothing", async () => {
    const req = { organizationId: orgId, username: "idem-robot", machine: { name: "idem robot" } };
    const first = await rest("/v2/users/new", req, "2f1c7a52-0d6b-4a55-9a57-7e1f0e2a9a01");
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const firstBody = await first.json();
    const again = await rest("/v2/users/new", req, "2f1c7a52-0d6b-4a55-9a57-7e1f0e2a9a01");
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(firstBody);
    expect(await machines("idem-robot")).toBe(1);
    // Without a key the same request is a second create: refused as a duplicate.
    expect((await rest("/v2/users/new", req, undefined)).status).toBe(409);
  });

  it("the same key with another request is 422; a key is the principal's own", async () => {
    const key = "d1a7c0de-1111-4a55-9a57-7e1f0e2a9a02";
    expect((await rest("/v2/users/new", { organizationId: orgId, username: "idem-a", machine: { name: "a" } }, key)).status).toBe(200);
    const other = await rest("/v2/users/new", { organizationId: orgId, username: "idem-b", machine: { name: "b" } }, key);
    expect(other.status).toBe(422);
    expect(((await other.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Idempotency.KeyReused");
    expect(await machines("idem-b")).toBe(0);
    // Another principal with the same key: its own create.
    const theirs = await rest("/v2/users/new", { organizationId: orgId, username: "idem-b", machine: { name: "b" } }, key, manager);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(await machines("idem-b")).toBe(1);
  });

  it("a PAT is given again to the same key, and stored sealed: neither the PAT nor the key is in the database", async () => {
    const user = (await (await rest("/v2/users/new", { organizationId: orgId, username: "idem-pat", machine: { name: "p" } }, undefined)).json()) as {
      id: string;
    };
    const key = "pat-7d3e2c1b-9f8a-4b6c-8d5e-0a1b2c3d4e5f";
    const first = (await (await rest(`/v2/users/${user.id}/pats`, {}, key)).json()) as { token: string; tokenId: string };
    expect(first.token).toBeTruthy();
    const again = await rest(`/v2/users/${user.id}/pats`, {}, key);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual(first);
    expect(await t.server.db.prisma.personalAccessToken.count({ where: { userId: user.id } })).toBe(1);
    const rows = await t.server.db.prisma.idempotencyKey.findMany();
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const raw = Buffer.concat([Buffer.from(r.answer), Buffer.from(r.id), Buffer.from(r.requestHash)]).toString("latin1");
      expect(raw).not.toContain(first.token);
      expect(raw).not.toContain(key);
    }
  });

  it("refuses a malformed key and a key on an RPC that creates nothing (400)", async () => {
    const req = { organizationId: orgId, username: "idem-bad", machine: { name: "bad" } };
    const long = await rest("/v2/users/new", req, "k".repeat(256));
    expect(long.status).toBe(400);
    expect(((await long.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Idempotency.Key");
    expect(await machines("idem-bad")).toBe(0);
    const list = await rest("/v2/users", {}, "a-key-for-a-list");
    expect(list.status).toBe(400);
    expect(((await list.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.Idempotency.NotSupported");
  });

  it("two requests with one key at once create one user: the other gets the answer or 409", async () => {
    const req = { organizationId: orgId, username: "idem-race", machine: { name: "race" } };
    const key = "race-0b7e4c8a-5d2f-4e1a-9c3b-6f8d7e5a4b3c";
    const answers = await Promise.all([rest("/v2/users/new", req, key), rest("/v2/users/new", req, key), rest("/v2/users/new", req, key)]);
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    for (const s of statuses) expect([200, 409]).toContain(s);
    expect(await machines("idem-race")).toBe(1);
    const ids = new Set(await Promise.all(answers.filter((a) => a.status === 200).map(async (a) => ((await a.json()) as { id: string }).id)));
    expect(ids.size).toBe(1);
  });
});

describe("Idempotency-Key over Connect (connect-node)", () => {
  it("CreateOrganization: a retry gets the same organization; another request with the key is FAILED_PRECONDITION", async () => {
    const client = createClient(OrganizationService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
    const headers = (key: string) => ({ authorization: `Bearer ${t.pat}`, "idempotency-key": key });
    let replayed: string | null = null;
    const first = await client.createOrganization({ name: "Idem Org" }, { headers: headers("org-1c2d3e4f") });
    const again = await client.createOrganization(
      { name: "Idem Org" },
      {
        headers: headers("org-1c2d3e4f"),
        onHeader: (h) => {
          replayed = h.get("idempotent-replayed");
        },
      },
    );
    expect(again.organizationId).toBe(first.organizationId);
    expect(replayed).toBe("true");
    expect(await t.server.db.prisma.organization.count({ where: { name: "Idem Org" } })).toBe(1);
    const reused = await rpcError(client.createOrganization({ name: "Other Org" }, { headers: headers("org-1c2d3e4f") }));
    expect(reused).toEqual({ code: Code.FailedPrecondition, reason: "Errors.Idempotency.KeyReused" });
  });
});

describe("Idempotency-Key on more creates (Connect JSON over fetch)", () => {
  const connect = (path: string, body: unknown, key: string) =>
    fetch(`${t.url}/${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body),
    });

  it("CreateProject, CreateApplication (its client secret), AddUserGrant, AddSecret and AddKey answer a retry with the first answer", async () => {
    const once = async (path: string, body: unknown) => {
      const key = `more-${path}-${Math.random()}`;
      const first = await connect(path, body, key);
      expect(first.status).toBe(200);
      const firstBody = await first.json();
      const again = await connect(path, body, key);
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.json()).toEqual(firstBody);
      return firstBody as Record<string, string>;
    };
    const { projectId } = await once("svc.project.v2.ProjectService/CreateProject", { organizationId: orgId, name: "Idem Project" });
    expect(await t.server.db.prisma.project.count({ where: { name: "Idem Project" } })).toBe(1);
    await connect("svc.project.v2.ProjectService/AddProjectRole", { projectId, roleKey: "reader", displayName: "Reader" }, "x").then((r) =>
      expect(r.status).toBe(400),
    );
    const app = await once("svc.app.v2.ApplicationService/CreateApplication", { projectId, name: "idem api", api: {} });
    expect(app.clientSecret).toBeTruthy();
    expect(await t.server.db.prisma.application.count({ where: { projectId } })).toBe(1);
    const user = (await (await rest("/v2/users/new", { organizationId: orgId, username: "idem-granted", machine: { name: "g" } }, undefined)).json()) as {
      id: string;
    };
    await once("svc.authorization.v2.AuthorizationService/AddUserGrant", { userId: user.id, projectId, roleKeys: [] });
    expect(await t.server.db.prisma.userGrant.count({ where: { userId: user.id } })).toBe(1);
    const secret = await once("svc.user.v2.UserService/AddSecret", { userId: user.id });
    expect(secret.clientSecret).toBeTruthy();
    await once("svc.user.v2.UserService/AddKey", { userId: user.id });
    expect(await t.server.db.prisma.machineKey.count({ where: { userId: user.id } })).toBe(1);
  });
});

describe("Idempotency-Key over gRPC (h2c)", () => {
  it("CreateUser: a retry gets the same user", async () => {
    const client = grpcClient(t);
    const headers = { authorization: `Bearer ${t.pat}`, "idempotency-key": "grpc-9a8b7c6d" };
    const req = { organizationId: orgId, username: "idem-grpc", userType: { case: "machine" as const, value: { name: "grpc" } } };
    const first = await client.createUser(req, { headers });
    const again = await client.createUser(req, { headers });
    expect(again.id).toBe(first.id);
    expect(await machines("idem-grpc")).toBe(1);
  });
});

describe("Idempotency-Key on SCIM POST /Users", () => {
  const post = (doc: unknown, key: string) =>
    fetch(`${t.url}/scim/v2/${orgId}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${manager}`, "content-type": "application/scim+json", "idempotency-key": key },
      body: JSON.stringify(doc),
    });

  it("a retry gets the first 201, Location and body; another user with the key is 422", async () => {
    const doc = { schemas: [USER_URN], userName: "idem-scim", name: { givenName: "I", familyName: "S" }, emails: [{ value: "idem-scim@example.com" }] };
    const first = await post(doc, "scim-5e6f7a8b");
    expect(first.status).toBe(201);
    const body = await first.json();
    const again = await post(doc, "scim-5e6f7a8b");
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(again.headers.get("content-type")).toContain("application/scim+json");
    expect(await again.json()).toEqual(body);
    expect(await t.server.db.prisma.user.count({ where: { orgId, username: "idem-scim" } })).toBe(1);
    const other = await post({ ...doc, userName: "idem-scim-2" }, "scim-5e6f7a8b");
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ status: "422" });
  });
});
