// Bearer authentication shared by every protocol: 401 for a missing, wrong,
// expired or revoked token (with WWW-Authenticate), 403 for a valid token
// without the permission, and isolation of what a caller may see.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { bufCurl } from "../support/buf.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;

async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

async function machineWithPat(username: string, expirationDate?: string): Promise<{ userId: string; pat: string; tokenId: string }> {
  const created = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username, machine: { name: username } });
  expect(created.status).toBe(200);
  const { id } = await json<{ id: string }>(created);
  const pat = await rest(t.url, t.pat, "POST", `/v2/users/${id}/pats`, expirationDate ? { expirationDate } : {});
  expect(pat.status).toBe(200);
  const body = await json<{ id: string; token: string }>(pat);
  return { userId: id, pat: body.token, tokenId: body.id };
}

beforeAll(async () => {
  t = await startTestServer();
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  orgId = (await json<{ instance: { defaultOrganizationId: string } }>(res)).instance.defaultOrganizationId;
});
afterAll(() => t.stop());

async function expect401(token: string | undefined, bearerError: boolean) {
  const res = await rest(t.url, token, "POST", "/v2/users", {});
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe(bearerError ? 'Bearer realm="svc", error="invalid_token"' : 'Bearer realm="svc"');
  const body = await json<{ code: number; details: { reason: string }[] }>(res);
  expect(body.code).toBe(16);
  expect(body.details[0]?.reason).toBe(bearerError ? "Errors.Token.Invalid" : "Errors.Token.Missing");

  const connect = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: "{}",
  });
  expect(connect.status).toBe(401);
  expect(connect.headers.get("www-authenticate")).toContain("Bearer");
  expect(((await connect.json()) as { code: string }).code).toBe("unauthenticated");

  const grpc = createClient(UserService, createGrpcTransport({ baseUrl: t.url }));
  const err = await grpc.listUsers({}, { headers: token ? { authorization: `Bearer ${token}` } : {} }).catch((e: unknown) => ConnectError.from(e));
  expect((err as ConnectError).code).toBe(Code.Unauthenticated);
  // gRPC carries the reason as google.rpc.ErrorInfo in grpc-status-details-bin.
  const info = (err as ConnectError).findDetails(ErrorInfoSchema);
  expect(info[0]?.reason).toBe(bearerError ? "Errors.Token.Invalid" : "Errors.Token.Missing");
  expect(info[0]?.domain).toBe("svc");
}

describe("authentication", () => {
  it("refuses a request without a token", () => expect401(undefined, false));
  it("refuses a wrong token", () => expect401("c2VjcmV0LWJ1dC13cm9uZy10b2tlbi12YWx1ZS0xMjM0NTY3ODk", true));
  it("refuses a token of the right shape with one character changed", () => expect401(`${t.pat.slice(0, -1)}${t.pat.endsWith("A") ? "B" : "A"}`, true));

  it("refuses a malformed Authorization header", async () => {
    const res = await fetch(`${t.url}/v2/users`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa("a:b")}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
  });

  it("refuses a token after its expiration date", async () => {
    const soon = new Date(Date.now() + 60 * 60_000).toISOString();
    const m = await machineWithPat("expiring-robot", soon);
    const ok = await rest(t.url, m.pat, "GET", `/v2/users/${m.userId}`);
    expect(ok.status).toBe(200);
    t.advanceClock(2 * 60 * 60_000);
    try {
      await expect401(m.pat, true);
    } finally {
      t.advanceClock(-2 * 60 * 60_000);
    }
  });

  it("refuses an expiration date in the past", async () => {
    const created = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username: "past-robot", machine: { name: "p" } });
    const { id } = await json<{ id: string }>(created);
    const res = await rest(t.url, t.pat, "POST", `/v2/users/${id}/pats`, { expirationDate: "2001-01-01T00:00:00Z" });
    expect(res.status).toBe(400);
    expect((await json<{ details: { reason: string }[] }>(res)).details[0]?.reason).toBe("Errors.User.PAT.ExpirationInPast");
  });

  it("refuses a token once it is removed", async () => {
    const m = await machineWithPat("revoked-robot");
    expect((await rest(t.url, m.pat, "GET", `/v2/users/${m.userId}`)).status).toBe(200);
    const removed = await rest(t.url, t.pat, "DELETE", `/v2/users/${m.userId}/pats/${m.tokenId}`);
    expect(removed.status).toBe(200);
    await expect401(m.pat, true);
    // Removing it twice is NotFound.
    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${m.userId}/pats/${m.tokenId}`)).status).toBe(404);
  });

  it("refuses the token of a deleted user, and frees the username", async () => {
    const m = await machineWithPat("deleted-robot");
    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${m.userId}`)).status).toBe(200);
    await expect401(m.pat, true);
    expect((await rest(t.url, t.pat, "GET", `/v2/users/${m.userId}`)).status).toBe(404);
    const again = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username: "Deleted-Robot", machine: { name: "again" } });
    expect(again.status).toBe(200);
  });

  it("never stores a token in clear and shows it only once", async () => {
    const m = await machineWithPat("listed-robot");
    const list = await rest(t.url, t.pat, "POST", "/v2/users/pats/search", { userId: m.userId });
    expect(list.status).toBe(200);
    const text = await list.text();
    expect(text).toContain(m.tokenId);
    expect(text).not.toContain(m.pat);
    const rows = await t.server.db.prisma.personalAccessToken.findMany({ where: { userId: m.userId } });
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]?.tokenHash ?? []).toString("utf8")).not.toContain(m.pat);
    expect(rows[0]?.tokenHash.byteLength).toBe(32);
  });
});

describe("authorization", () => {
  let plain: { userId: string; pat: string };

  beforeAll(async () => {
    plain = await machineWithPat("no-roles-robot");
  });

  it("denies ListUsers to a valid token without user.read (403 / PermissionDenied)", async () => {
    const res = await rest(t.url, plain.pat, "POST", "/v2/users", {});
    expect(res.status).toBe(403);
    const body = await json<{ code: number; details: { reason: string }[] }>(res);
    expect(body.code).toBe(7);
    expect(body.details[0]?.reason).toBe("Errors.Permission.Denied");
    const err = await createClient(UserService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }))
      .listUsers({}, { headers: { authorization: `Bearer ${plain.pat}` } })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.PermissionDenied);
  });

  it("denies the instance, other users and organizations to that token", async () => {
    expect((await rest(t.url, plain.pat, "GET", "/v2/instance")).status).toBe(403);
    expect((await rest(t.url, plain.pat, "POST", "/v2/organizations", {})).status).toBe(403);
    // A caller without any membership learns nothing: the org and its users are NotFound.
    expect((await rest(t.url, plain.pat, "GET", `/v2/organizations/${orgId}`)).status).toBe(404);
    const admins = await json<{ result: { userId: string; username: string }[] }>(await rest(t.url, t.pat, "POST", "/v2/users", {}));
    const admin = admins.result.find((u) => u.username === "admin");
    expect((await rest(t.url, plain.pat, "GET", `/v2/users/${admin?.userId}`)).status).toBe(404);
    expect((await rest(t.url, plain.pat, "POST", "/v2/users/new", { organizationId: orgId, username: "x", machine: { name: "x" } })).status).toBe(404);
    expect((await rest(t.url, plain.pat, "DELETE", `/v2/users/${admin?.userId}`)).status).toBe(404);
    expect((await rest(t.url, plain.pat, "POST", `/v2/users/${admin?.userId}/pats`, {})).status).toBe(404);
  });

  it("lets a user read itself without a role", async () => {
    const res = await rest(t.url, plain.pat, "GET", `/v2/users/${plain.userId}`);
    expect(res.status).toBe(200);
    expect((await json<{ user: { username: string } }>(res)).user.username).toBe("no-roles-robot");
  });

  it("is enforced for buf curl over gRPC too", async () => {
    const out = await bufCurl([
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${plain.pat}`,
      "-d",
      "{}",
      `${t.url}/svc.user.v2.UserService/ListUsers`,
    ]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("permission_denied");
  });

  it("keeps the last IAM_OWNER", async () => {
    const list = await json<{ result: { userId: string; username: string }[] }>(await rest(t.url, t.pat, "POST", "/v2/users", {}));
    const admin = list.result.find((u) => u.username === "admin");
    const sa = list.result.find((u) => u.username === "svc-admin");
    // admin is also the default organization's only ORG_OWNER: it stays until another owner can act.
    const refused = await rest(t.url, t.pat, "DELETE", `/v2/users/${admin?.userId}`);
    expect(refused.status).toBe(400);
    expect((await json<{ details: { reason: string }[] }>(refused)).details[0]?.reason).toBe("Errors.User.LastOrgOwner");
    const orgId = (await json<{ instance: { defaultOrganizationId: string } }>(await rest(t.url, t.pat, "GET", "/v2/instance"))).instance.defaultOrganizationId;
    expect((await rest(t.url, t.pat, "POST", `/v2/organizations/${orgId}/members`, { userId: sa?.userId, roles: ["ORG_OWNER"] })).status).toBe(200);
    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${admin?.userId}`)).status).toBe(200);
    const res = await rest(t.url, t.pat, "DELETE", `/v2/users/${sa?.userId}`);
    expect(res.status).toBe(400);
    expect((await json<{ code: number; details: { reason: string }[] }>(res)).details[0]?.reason).toBe("Errors.User.LastInstanceOwner");
  });
});
