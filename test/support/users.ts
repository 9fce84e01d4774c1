// Fixtures of the UserService tests: users and callers made through the real
// API (REST), plus the few things no RPC can make yet, written with Prisma.
import { type Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { newOpaqueToken, sha256 } from "../../src/crypto/tokens.js";
import { newId } from "../../src/domain/ids.js";
import { machine } from "./fixtures.js";
import { admin } from "./rpc.js";
import type { TestServer } from "./server.js";

export {
  addPat,
  type Caller,
  createHuman,
  createMachine,
  createOrg,
  defaultOrgId,
  newPat,
  PASSWORD,
  type UserCallers,
  userCallers,
} from "./fixtures.js";

export async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

/**
 * A bearer token for a human, written directly. By default a token row that authenticates exactly like a PAT (no
 * session behind it). `signedIn`: an access token of a sign-in instead, as a code flow issues it: a session of the
 * user with its password proven at `at` (default: now by the server's clock) and an opaque token for the management API issued from it; the
 * sign-in policy accepts that session as the proof of the user's own sensitive changes.
 */
export async function humanToken(
  t: TestServer,
  userId: string,
  o: { signedIn?: boolean; at?: Date; factors?: ("password" | "totp" | "webauthn" | "otpEmail")[] } = {},
): Promise<string> {
  const token = newOpaqueToken();
  if (!o.signedIn) {
    await t.server.db.prisma.personalAccessToken.create({
      data: { id: newId(), instanceId: t.server.instanceId, userId, tokenHash: sha256(token), createdAt: new Date() },
    });
    return token;
  }
  // The server's clock (a test may have moved it).
  const at = o.at ?? t.server.tokens.clock();
  const user = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: userId }, select: { orgId: true } });
  const sessionId = newId();
  await t.server.db.prisma.session.create({
    data: {
      id: sessionId,
      instanceId: t.server.instanceId,
      userId,
      orgId: user.orgId,
      tokenHash: sha256(newOpaqueToken()),
      creatorId: "svc-hosted-login",
      userCheckedAt: at,
      passwordCheckedAt: (o.factors ?? ["password"]).includes("password") ? at : null,
      totpCheckedAt: o.factors?.includes("totp") ? at : null,
      webauthnCheckedAt: o.factors?.includes("webauthn") ? at : null,
      otpEmailCheckedAt: o.factors?.includes("otpEmail") ? at : null,
      createdAt: at,
    },
  });
  await t.server.db.prisma.oAuthToken.create({
    data: {
      id: newId(),
      instanceId: t.server.instanceId,
      format: "opaque",
      tokenHash: sha256(token),
      userId,
      clientId: "test-client",
      scopes: ["openid", "urn:svc:iam:org:project:id:svc:aud"],
      audience: ["svc"],
      sessionId,
      expiresAt: new Date(at.getTime() + 12 * 3600_000),
      createdAt: at,
    },
  });
  return token;
}

/**
 * A session of the user whose factors were proven at `at` (default now), made directly, with its token: the
 * SessionProof a login client presents for the user's sensitive changes.
 */
export async function sessionProof(
  t: TestServer,
  userId: string,
  o: { at?: Date; factors?: ("password" | "totp" | "webauthn")[]; userVerified?: boolean } = {},
): Promise<{ sessionId: string; sessionToken: string }> {
  const at = o.at ?? t.server.tokens.clock();
  const factors = o.factors ?? ["password"];
  const when = (f: string) => (factors.includes(f as never) ? at : null);
  const user = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: userId }, select: { orgId: true } });
  const sessionToken = newOpaqueToken();
  const sessionId = newId();
  await t.server.db.prisma.session.create({
    data: {
      id: sessionId,
      instanceId: t.server.instanceId,
      userId,
      orgId: user.orgId,
      tokenHash: sha256(sessionToken),
      creatorId: "svc-hosted-login",
      userCheckedAt: at,
      passwordCheckedAt: when("password"),
      totpCheckedAt: when("totp"),
      webauthnCheckedAt: when("webauthn"),
      webauthnUserVerified: o.userVerified ?? false,
      createdAt: at,
    },
  });
  return { sessionId, sessionToken };
}

/** A machine user with a PAT and the given roles in `roleOrg` (none when roles is empty). */
export const caller = machine;

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
  return (await admin(t, "AddSecret", { userId })).clientSecret;
}

/** A new machine key, generated by svc, as its decoded key file. */
export async function addMachineKeyFile(t: TestServer, userId: string): Promise<KeyFile> {
  const { keyContent } = await admin(t, "AddKey", { userId });
  return JSON.parse(Buffer.from(keyContent, "base64").toString("utf8")) as KeyFile;
}
