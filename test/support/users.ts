// Fixtures of the UserService tests: users and callers made through the real
// API (REST), plus the few things no RPC can make yet, written with Prisma.
import { type Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { expect } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { newOpaqueToken, sha256 } from "../../src/crypto/tokens.js";
import { newId } from "../../src/domain/ids.js";
import { rest, type TestServer } from "./server.js";

export const PASSWORD = "Initial-Passw0rd!";

export async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

export async function defaultOrgId(t: TestServer): Promise<string> {
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  return (await json<{ instance: { defaultOrganizationId: string } }>(res)).instance.defaultOrganizationId;
}

export async function createMachine(t: TestServer, orgId: string, username: string): Promise<string> {
  const res = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username, machine: { name: username } });
  expect(res.status).toBe(200);
  return (await json<{ id: string }>(res)).id;
}

export async function createHuman(
  t: TestServer,
  orgId: string,
  username: string,
  password: { password?: string; hashedPassword?: string } = { password: PASSWORD },
): Promise<string> {
  const res = await rest(t.url, t.pat, "POST", "/v2/users/new", {
    organizationId: orgId,
    username,
    human: {
      profile: { givenName: "Given", familyName: "Family" },
      email: { email: `${username}@example.com` },
      ...(password.password ? { password: { password: password.password } } : {}),
      ...(password.hashedPassword ? { hashedPassword: { hash: password.hashedPassword } } : {}),
    },
  });
  expect(res.status).toBe(200);
  return (await json<{ id: string }>(res)).id;
}

export async function addPat(t: TestServer, userId: string): Promise<string> {
  const res = await rest(t.url, t.pat, "POST", `/v2/users/${userId}/pats`, {});
  expect(res.status).toBe(200);
  return (await json<{ token: string }>(res)).token;
}

/**
 * A bearer token for a human. Humans will sign in through sessions and
 * OIDC (later issues); until then the tests give them a token row directly,
 * which authenticates exactly like a PAT.
 */
export async function humanToken(t: TestServer, userId: string): Promise<string> {
  const token = newOpaqueToken();
  await t.server.db.prisma.personalAccessToken.create({
    data: { id: newId(), instanceId: t.server.instanceId, userId, tokenHash: sha256(token), createdAt: new Date() },
  });
  return token;
}

export async function createOrg(t: TestServer, name: string): Promise<string> {
  const res = await rest(t.url, t.pat, "POST", "/v2/organizations/new", { name });
  expect(res.status).toBe(200);
  return (await json<{ organizationId: string }>(res)).organizationId;
}

export async function grantOrgRoles(t: TestServer, orgId: string, userId: string, roles: string[]): Promise<void> {
  await t.server.db.prisma.orgMember.create({ data: { orgId, userId, roles } });
}

/** A machine user with a PAT and the given roles in `roleOrg` (none when roles is empty). */
export async function caller(t: TestServer, orgId: string, username: string, roles: string[] = [], roleOrg = orgId) {
  const userId = await createMachine(t, orgId, username);
  if (roles.length) await grantOrgRoles(t, roleOrg, userId, roles);
  return { userId, pat: await addPat(t, userId) };
}

export interface RestError {
  status: number;
  reason: string | undefined;
}

export async function restError(res: Response): Promise<RestError> {
  const body = await json<{ details?: { reason: string }[] }>(res);
  return { status: res.status, reason: body.details?.[0]?.reason };
}

export function connectClient(t: TestServer) {
  return createClient(UserService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }));
}

export function grpcClient(t: TestServer) {
  return createClient(UserService, createGrpcTransport({ baseUrl: t.url }));
}

export const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/** Runs a client call expected to fail; returns its code and ErrorInfo reason. */
export async function rpcError(call: Promise<unknown>): Promise<{ code: Code; reason: string | undefined }> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
  if (!err) throw new Error("expected the call to fail");
  return { code: err.code, reason: err.findDetails(ErrorInfoSchema)[0]?.reason };
}

export function b64(text: string): string {
  return Buffer.from(text).toString("base64");
}

/** A machine key file as AddKey returns it (base64 JSON). */
export interface KeyFile {
  keyId: string;
  key: string;
  userId: string;
}

/** A new client secret for a machine user (shown once). */
export async function addMachineSecret(t: TestServer, userId: string): Promise<string> {
  const res = await rest(t.url, t.pat, "POST", `/v2/users/${userId}/secret`, {});
  if (res.status !== 200) throw new Error(`secret of ${userId}: ${res.status} ${await res.text()}`);
  return (await json<{ clientSecret: string }>(res)).clientSecret;
}

/** A new machine key, generated by svc, as its decoded key file. */
export async function addMachineKeyFile(t: TestServer, userId: string): Promise<KeyFile> {
  const res = await rest(t.url, t.pat, "POST", `/v2/users/${userId}/keys`, {});
  if (res.status !== 200) throw new Error(`key of ${userId}: ${res.status} ${await res.text()}`);
  const body = await json<{ keyContent: string }>(res);
  return JSON.parse(Buffer.from(body.keyContent, "base64").toString("utf8")) as KeyFile;
}
