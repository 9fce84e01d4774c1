// Deactivating and reactivating user grants through connect-node (and REST):
// the roles leave the role claims of introspection and userinfo at once and
// come back on reactivation, the same permission rules as UpdateUserGrant,
// FailedPrecondition on a repeated move, the state filter of ListUserGrants
// and the audit events.
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { UserGrantState } from "../../gen/svc/authorization/v2/authorization_pb.js";
import { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import { machine } from "../support/orgs.js";
import { ok, type ProjectWorld, project, projectWorld } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { auth, rpcError } from "../support/users.js";

let t: TestServer;
let w: ProjectWorld;

const authz = () => createClient(AuthorizationService, createGrpcTransport({ baseUrl: t.url }));

beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "ugs");
}, 60_000);
afterAll(() => t.stop());

async function form(path: string, body: Record<string, string>, user: string, secret: string): Promise<Response> {
  return fetch(t.url + path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}` },
    body: new URLSearchParams(body),
  });
}

/** A machine user of `orgId` with a client secret, and an opaque access token for `projectId`'s audience. */
async function tokenHolder(orgId: string, username: string, projectId: string) {
  const m = await machine(t, orgId, username);
  const s = await rest(t.url, t.pat, "POST", `/v2/users/${m.userId}/secret`, {});
  expect(s.status).toBe(200);
  const { clientSecret } = (await s.json()) as { clientSecret: string };
  const res = await form(
    "/oauth/v2/token",
    { grant_type: "client_credentials", scope: `openid urn:svc:iam:org:project:id:${projectId}:aud` },
    username,
    clientSecret,
  );
  expect(res.status).toBe(200);
  const { access_token: token } = (await res.json()) as { access_token: string };
  const claim = `urn:svc:iam:org:project:${projectId}:roles`;
  return {
    userId: m.userId,
    /** The role claim as userinfo and introspection show it now (they must agree). */
    async roles(): Promise<unknown> {
      const info = (await (await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${token}` } })).json()) as Record<string, unknown>;
      const intro = (await (await form("/oauth/v2/introspect", { token }, username, clientSecret)).json()) as Record<string, unknown>;
      expect(intro.active).toBe(true);
      expect(intro[claim] ?? {}).toEqual(info[claim] ?? {});
      return info[claim] ?? {};
    },
  };
}

async function orgName(id: string): Promise<string> {
  return (await t.server.db.prisma.organization.findUniqueOrThrow({ where: { id } })).name;
}

describe("DeactivateUserGrant and ReactivateUserGrant", () => {
  it("take the roles out of introspection and userinfo at once, and bring them back", async () => {
    const { projectId } = await ok(t, "rest", t.pat, "CreateProject", { organizationId: w.orgA, name: "State claims", projectRoleAssertion: true });
    for (const roleKey of ["reader", "writer"]) await ok(t, "rest", t.pat, "AddProjectRole", { projectId, roleKey, displayName: roleKey });
    const holder = await tokenHolder(w.orgA, "ugs-holder", projectId);
    const headers = auth(w.ppmA.pat);
    const { grantId } = await authz().addUserGrant({ userId: holder.userId, projectId, roleKeys: ["reader", "writer"] }, headers);
    const nameA = await orgName(w.orgA);
    const full = { reader: { [w.orgA]: nameA }, writer: { [w.orgA]: nameA } };
    // Read twice so the resolved token (and its role claims) sits in the cache.
    expect(await holder.roles()).toEqual(full);
    expect(await holder.roles()).toEqual(full);

    const off = await authz().deactivateUserGrant({ grantId, userId: holder.userId }, headers);
    expect(off.changeDate).toBeDefined();
    expect(await holder.roles()).toEqual({});
    const listed = await authz().listUserGrants({ queries: [{ query: { case: "userIdFilter", value: { userId: holder.userId } } }] }, headers);
    expect(listed.result.map((g) => [g.grantId, g.state, g.roleKeys])).toEqual([[grantId, UserGrantState.INACTIVE, ["reader", "writer"]]]);

    await authz().reactivateUserGrant({ grantId }, headers);
    expect(await holder.roles()).toEqual(full);

    // Both moves are audited.
    const events = (await (
      await rest(t.url, t.pat, "POST", "/v2/events", {
        aggregateId: grantId,
        eventTypes: ["user.grant.deactivated", "user.grant.reactivated"],
        query: { asc: true },
      })
    ).json()) as { result: { type: string; organizationId: string; editorUserId: string }[] };
    expect(events.result.map((e) => [e.type, e.organizationId, e.editorUserId])).toEqual([
      ["user.grant.deactivated", w.orgA, w.ppmA.userId],
      ["user.grant.reactivated", w.orgA, w.ppmA.userId],
    ]);
  });

  it("refuse a repeated move with FailedPrecondition, and unknown or mismatched grants with NotFound", async () => {
    const projectId = await project(t, w.orgA, "State twice", ["r"]);
    const user = await machine(t, w.orgA, "ugs-twice");
    const headers = auth(w.ppmA.pat);
    const { grantId } = await authz().addUserGrant({ userId: user.userId, projectId, roleKeys: ["r"] }, headers);
    expect(await rpcError(authz().reactivateUserGrant({ grantId }, headers))).toEqual({
      code: Code.FailedPrecondition,
      reason: "Errors.UserGrant.NotInactive",
    });
    await authz().deactivateUserGrant({ grantId }, headers);
    expect(await rpcError(authz().deactivateUserGrant({ grantId }, headers))).toEqual({
      code: Code.FailedPrecondition,
      reason: "Errors.UserGrant.AlreadyInactive",
    });
    expect(await rpcError(authz().deactivateUserGrant({ grantId: "nope" }, headers))).toEqual({ code: Code.NotFound, reason: "Errors.UserGrant.NotFound" });
    expect(await rpcError(authz().reactivateUserGrant({ grantId, userId: w.plainA.userId }, headers))).toEqual({
      code: Code.NotFound,
      reason: "Errors.UserGrant.NotFound",
    });
    expect(await rpcError(authz().deactivateUserGrant({ grantId: "" }, headers))).toEqual({
      code: Code.InvalidArgument,
      reason: "Errors.UserGrant.Id.Missing",
    });
    // Removing an inactive grant works as usual.
    await authz().removeUserGrant({ grantId }, headers);
  });

  it("follow UpdateUserGrant's permissions: the granting org's project permission manager may, a user manager may not, another org sees nothing", async () => {
    const projectId = await project(t, w.orgA, "State perms", ["r"]);
    const user = await machine(t, w.orgA, "ugs-perms");
    const { grantId } = await authz().addUserGrant({ userId: user.userId, projectId, roleKeys: ["r"] }, auth(w.ppmA.pat));
    for (const rpc of ["deactivateUserGrant", "reactivateUserGrant"] as const) {
      expect(await rpcError(authz()[rpc]({ grantId }, auth(w.userManagerA.pat)))).toEqual({ code: Code.PermissionDenied, reason: "Errors.Permission.Denied" });
      expect(await rpcError(authz()[rpc]({ grantId }, auth(w.auditorA.pat)))).toEqual({ code: Code.PermissionDenied, reason: "Errors.Permission.Denied" });
      expect(await rpcError(authz()[rpc]({ grantId }, auth(w.ownerB.pat)))).toEqual({ code: Code.NotFound, reason: "Errors.UserGrant.NotFound" });
      expect(await rpcError(authz()[rpc]({ grantId }, auth(w.plainA.pat)))).toEqual({ code: Code.NotFound, reason: "Errors.UserGrant.NotFound" });
      expect(await rpcError(authz()[rpc]({ grantId }))).toMatchObject({ code: Code.Unauthenticated });
      // The allowed callers, in the order that makes each move valid.
      await authz()[rpc]({ grantId }, auth(rpc === "deactivateUserGrant" ? w.ppmA.pat : w.ownerA.pat));
    }
  });

  it("through a project grant: the receiving organization manages the state, the owning one does not", async () => {
    const projectId = await project(t, w.orgA, "State granted", ["read", "write"]);
    await ok(t, "rest", t.pat, "CreateProjectGrant", { projectId, grantedOrganizationId: w.orgB, roleKeys: ["read"] });
    const userB = await machine(t, w.orgB, "ugs-granted-b");
    const { grantId } = await authz().addUserGrant({ userId: userB.userId, projectId, organizationId: w.orgB, roleKeys: ["read"] }, auth(w.ownerB.pat));
    expect(await rpcError(authz().deactivateUserGrant({ grantId }, auth(w.ownerA.pat)))).toEqual({ code: Code.NotFound, reason: "Errors.UserGrant.NotFound" });
    await authz().deactivateUserGrant({ grantId }, auth(w.ownerB.pat));
    await authz().reactivateUserGrant({ grantId }, auth(w.ownerB.pat));
  });

  it("over REST: POST /v2/authorizations/{grant_id}/deactivate and /reactivate, and the state filter of the list", async () => {
    const projectId = await project(t, w.orgA, "State REST", ["r"]);
    const [u1, u2] = await Promise.all([machine(t, w.orgA, "ugs-rest-1"), machine(t, w.orgA, "ugs-rest-2")]);
    const g1 = (await ok(t, "rest", w.ppmA.pat, "AddUserGrant", { userId: u1.userId, projectId, roleKeys: ["r"] })).grantId as string;
    const g2 = (await ok(t, "rest", w.ppmA.pat, "AddUserGrant", { userId: u2.userId, projectId, roleKeys: ["r"] })).grantId as string;
    const off = await rest(t.url, w.ppmA.pat, "POST", `/v2/authorizations/${g1}/deactivate`, {});
    expect(off.status).toBe(200);
    expect(await off.json()).toEqual({ changeDate: expect.any(String) });
    const again = await rest(t.url, w.ppmA.pat, "POST", `/v2/authorizations/${g1}/deactivate`, {});
    expect(again.status).toBe(400);
    expect(((await again.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.UserGrant.AlreadyInactive");
    expect((await rest(t.url, w.userManagerA.pat, "POST", `/v2/authorizations/${g2}/deactivate`, {})).status).toBe(403);

    const byState = async (state: string) => {
      const res = await rest(t.url, w.auditorA.pat, "POST", "/v2/authorizations", {
        queries: [{ projectIdFilter: { projectId } }, { stateFilter: { state } }],
      });
      expect(res.status).toBe(200);
      return (((await res.json()) as { result?: { grantId: string; state: string }[] }).result ?? []).map((g) => [g.grantId, g.state]);
    };
    expect(await byState("USER_GRANT_STATE_INACTIVE")).toEqual([[g1, "USER_GRANT_STATE_INACTIVE"]]);
    expect(await byState("USER_GRANT_STATE_ACTIVE")).toEqual([[g2, "USER_GRANT_STATE_ACTIVE"]]);
    const unspecified = await rest(t.url, w.auditorA.pat, "POST", "/v2/authorizations", { queries: [{ stateFilter: {} }] });
    expect(unspecified.status).toBe(400);

    expect((await rest(t.url, w.ppmA.pat, "POST", `/v2/authorizations/${g1}/reactivate`, {})).status).toBe(200);
    expect(await byState("USER_GRANT_STATE_INACTIVE")).toEqual([]);
  });
});
