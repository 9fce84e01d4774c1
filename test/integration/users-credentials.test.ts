// Machine keys (AddKey / ListKeys / RemoveKey) and client secrets
// (AddSecret / RemoveSecret) through the real server: the key file signs a
// JWT that verifies against the stored public key, caller-supplied public
// keys, no key material or secret in lists, user views or events, cascades on
// user deletion, and allowed and denied callers.
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { jwtVerify, SignJWT } from "jose";
import { sha256 } from "../../src/crypto/tokens.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { auth, b64, type Caller, connectClient, createHuman, createMachine, grpcClient, json, restError, rpcError, userCallers } from "../support/users.js";

let t: TestServer;
let orgId: string;
let otherOrgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

interface KeyFile {
  type: string;
  keyId: string;
  key: string;
  userId: string;
  expirationDate?: string;
}

interface KeyList {
  details: { totalResult: string };
  result?: { id: string; userId: string; expirationDate?: string; details: { resourceOwner: string } }[];
}

async function addKey(userId: string, body: Record<string, unknown> = {}, token = t.pat): Promise<Response> {
  return rest(t.url, token, "POST", `/v2/users/${userId}/keys`, body);
}

async function listKeys(body: Record<string, unknown>, token = t.pat): Promise<KeyList> {
  const res = await rest(t.url, token, "POST", "/v2/users/keys/search", body);
  expect(res.status).toBe(200);
  return json<KeyList>(res);
}

beforeAll(async () => {
  t = await startTestServer();
  ({ orgId, otherOrgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

describe("AddKey", () => {
  it("returns a key file whose private key signs a JWT that the stored public key verifies (REST)", async () => {
    const userId = await createMachine(t, orgId, "robot-jwt");
    const expirationDate = new Date(Date.now() + 86_400_000).toISOString();
    const res = await addKey(userId, { expirationDate });
    expect(res.status).toBe(200);
    const body = await json<{ keyId: string; keyContent: string; creationDate: string }>(res);
    const keyFile = JSON.parse(Buffer.from(body.keyContent, "base64").toString("utf8")) as KeyFile;
    expect(Object.keys(keyFile)).toEqual(["type", "keyId", "key", "userId", "expirationDate"]);
    expect(keyFile).toMatchObject({ type: "serviceaccount", keyId: body.keyId, userId, expirationDate });
    expect(keyFile.key).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n/);
    const privateKey = createPrivateKey(keyFile.key);
    expect(privateKey.asymmetricKeyDetails?.modulusLength).toBe(2048);

    // The JWT profile assertion of the spec.
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid: keyFile.keyId })
      .setIssuer(keyFile.userId)
      .setSubject(keyFile.userId)
      .setAudience(t.url)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(privateKey);

    const row = await t.server.db.prisma.machineKey.findUniqueOrThrow({ where: { id: body.keyId } });
    expect(row.publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(row.publicKey).not.toContain("PRIVATE");
    expect(row.expiresAt?.toISOString()).toBe(expirationDate);
    const { payload, protectedHeader } = await jwtVerify(assertion, createPublicKey(row.publicKey), { issuer: userId, audience: t.url });
    expect(payload.sub).toBe(userId);
    expect(protectedHeader.kid).toBe(body.keyId);
    // The private key is nowhere in the database.
    expect(JSON.stringify(await t.server.db.prisma.machineKey.findMany())).not.toContain(keyFile.key.split("\n")[1]);
  });

  it("has no expiration date unless one is given, and refuses one in the past", async () => {
    const userId = await createMachine(t, orgId, "robot-forever");
    const res = await addKey(userId);
    const keyFile = JSON.parse(Buffer.from((await json<{ keyContent: string }>(res)).keyContent, "base64").toString()) as KeyFile;
    expect(keyFile.expirationDate).toBeUndefined();
    expect(await restError(await addKey(userId, { expirationDate: "2001-01-01T00:00:00Z" }))).toEqual({
      status: 400,
      reason: "Errors.User.Key.ExpirationInPast",
    });
    const listed = await listKeys({ userId });
    expect(listed.result?.map((k) => k.expirationDate)).toEqual([undefined]);
  });

  it("stores a caller's public key, SPKI or PKCS#1, normalised, and returns no key file (Connect, gRPC)", async () => {
    const userId = await createMachine(t, orgId, "robot-own-key");
    const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 3072 });
    const spki = publicKey.export({ type: "spki", format: "pem" }) as string;
    const pkcs1 = publicKey.export({ type: "pkcs1", format: "pem" }) as string;

    const viaConnect = await connectClient(t).addKey({ userId, publicKey: new TextEncoder().encode(spki) }, auth(t.pat));
    expect(viaConnect.keyContent).toHaveLength(0);
    const viaGrpc = await grpcClient(t).addKey(
      { userId, publicKey: new TextEncoder().encode(pkcs1), expirationDate: timestampFromDate(new Date(Date.now() + 60_000)) },
      auth(t.pat),
    );
    for (const keyId of [viaConnect.keyId, viaGrpc.keyId]) {
      const row = await t.server.db.prisma.machineKey.findUniqueOrThrow({ where: { id: keyId } });
      expect(row.publicKey).toBe(spki);
    }
    const jwt = await new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: viaGrpc.keyId }).setSubject(userId).sign(privateKey);
    const row = await t.server.db.prisma.machineKey.findUniqueOrThrow({ where: { id: viaGrpc.keyId } });
    expect((await jwtVerify(jwt, createPublicKey(row.publicKey))).payload.sub).toBe(userId);
  });

  it("refuses keys that are not RSA public keys of at least 2048 bits", async () => {
    const userId = await createMachine(t, orgId, "robot-bad-keys");
    const pem = (key: ReturnType<typeof generateKeyPairSync>["publicKey"]) => key.export({ type: "spki", format: "pem" }) as string;
    const small = generateKeyPairSync("rsa", { modulusLength: 1024 });
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const bad = [
      pem(small.publicKey),
      pem(ec.publicKey),
      rsa.privateKey.export({ type: "pkcs8", format: "pem" }) as string,
      rsa.privateKey.export({ type: "pkcs1", format: "pem" }) as string,
      "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
      "not a key",
      "",
    ];
    for (const key of bad) {
      expect(await restError(await addKey(userId, { publicKey: b64(key) }))).toEqual({ status: 400, reason: "Errors.User.Key.Invalid" });
    }
    expect(await t.server.db.prisma.machineKey.count({ where: { userId } })).toBe(0);
  });

  it("belongs to machine users only", async () => {
    const human = await createHuman(t, orgId, "no-keys-for-humans");
    expect(await restError(await addKey(human))).toEqual({ status: 400, reason: "Errors.User.Key.NotMachine" });
    expect(await restError(await addKey("no-such-user"))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
  });
});

describe("ListKeys and RemoveKey", () => {
  it("lists ids and dates, never key material, pages, and removes", async () => {
    const userId = await createMachine(t, orgId, "robot-listed");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json<{ keyId: string }>(await addKey(userId))).keyId);
    const res = await rest(t.url, t.pat, "POST", "/v2/users/keys/search", { userId, query: { asc: true } });
    const text = await res.text();
    expect(text).not.toMatch(/BEGIN|PUBLIC|PRIVATE|MII/);
    const all = JSON.parse(text) as KeyList;
    expect(all.details.totalResult).toBe("3");
    expect(all.result?.map((k) => k.id)).toEqual(ids);
    expect(all.result?.[0]).toMatchObject({ userId, details: { resourceOwner: orgId } });
    expect((await listKeys({ userId, query: { asc: true, limit: 1, offset: 1 } })).result?.map((k) => k.id)).toEqual([ids[1]]);

    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${userId}/keys/${ids[1]}`)).status).toBe(200);
    expect(await restError(await rest(t.url, t.pat, "DELETE", `/v2/users/${userId}/keys/${ids[1]}`))).toEqual({
      status: 404,
      reason: "Errors.User.Key.NotFound",
    });
    // A key id of another user is not found under this one.
    const other = await createMachine(t, orgId, "robot-other-keys");
    expect(await restError(await rest(t.url, t.pat, "DELETE", `/v2/users/${other}/keys/${ids[0]}`))).toEqual({
      status: 404,
      reason: "Errors.User.Key.NotFound",
    });
    await connectClient(t).removeKey({ userId, keyId: ids[2] as string }, auth(t.pat));
    expect((await grpcClient(t).listKeys({ userId }, auth(t.pat))).result.map((k) => k.id)).toEqual([ids[0]]);
    const viaConnect = await connectClient(t).listKeys({ userId }, auth(t.pat));
    expect(viaConnect.details?.totalResult).toBe(1n);
    expect(viaConnect.result[0]?.details?.resourceOwner).toBe(orgId);

    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: userId, type: { startsWith: "user.key" } } });
    expect(events.map((e) => e.type).sort()).toEqual(["user.key.added", "user.key.added", "user.key.added", "user.key.removed", "user.key.removed"]);
    expect(JSON.stringify(events)).not.toMatch(/BEGIN|MII/);
  });

  it("go with their user", async () => {
    const userId = await createMachine(t, orgId, "robot-deleted");
    await addKey(userId);
    await addKey(userId);
    expect(await t.server.db.prisma.machineKey.count({ where: { userId } })).toBe(2);
    expect((await rest(t.url, t.pat, "DELETE", `/v2/users/${userId}`)).status).toBe(200);
    expect(await t.server.db.prisma.machineKey.count({ where: { userId } })).toBe(0);
  });

  it("are listed per organization the caller may read", async () => {
    const here = await createMachine(t, orgId, "robot-key-here");
    const there = await createMachine(t, otherOrgId, "robot-key-there");
    const hereKey = (await json<{ keyId: string }>(await addKey(here))).keyId;
    const thereKey = (await json<{ keyId: string }>(await addKey(there))).keyId;
    const ids = async (token: string) => ((await listKeys({ query: { limit: 1000 } }, token)).result ?? []).map((k) => k.id);
    expect(await ids(t.pat)).toEqual(expect.arrayContaining([hereKey, thereKey]));
    expect(await ids(auditor.pat)).toContain(hereKey);
    expect(await ids(auditor.pat)).not.toContain(thereKey);
    expect(await ids(foreignManager.pat)).toEqual([thereKey]);
    expect(await restError(await rest(t.url, nobody.pat, "POST", "/v2/users/keys/search", {}))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
    expect(await restError(await rest(t.url, nobody.pat, "POST", "/v2/users/keys/search", { userId: here }))).toEqual({
      status: 404,
      reason: "Errors.User.NotFound",
    });
    expect(await restError(await rest(t.url, foreignManager.pat, "POST", "/v2/users/keys/search", { userId: here }))).toEqual({
      status: 404,
      reason: "Errors.User.NotFound",
    });
    // Users may list their own keys.
    await addKey(nobody.userId);
    expect((await listKeys({ userId: nobody.userId }, nobody.pat)).details.totalResult).toBe("1");
  });

  it("allow a user manager to add and remove keys and deny others", async () => {
    const userId = await createMachine(t, orgId, "robot-key-perms");
    const keyId = (await json<{ keyId: string }>(await addKey(userId))).keyId;
    for (const call of [(token: string) => addKey(userId, {}, token), (token: string) => rest(t.url, token, "DELETE", `/v2/users/${userId}/keys/${keyId}`)]) {
      expect(await restError(await call(nobody.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect(await restError(await call(auditor.pat))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
      expect(await restError(await call(foreignManager.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect((await call(manager.pat)).status).toBe(200);
    }
    expect(await rpcError(connectClient(t).addKey({ userId }, auth(foreignManager.pat)))).toEqual({ code: Code.NotFound, reason: "Errors.User.NotFound" });
    // A user cannot mint keys for itself without the permission.
    expect(await restError(await addKey(nobody.userId, {}, nobody.pat))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
  });
});

describe("AddSecret and RemoveSecret", () => {
  it("return a 256-bit secret once, store only its SHA-256, and show hasSecret (REST)", async () => {
    const userId = await createMachine(t, orgId, "robot-secret");
    const res = await rest(t.url, t.pat, "POST", `/v2/users/${userId}/secret`, {});
    expect(res.status).toBe(200);
    const { clientSecret, creationDate } = await json<{ clientSecret: string; creationDate: string }>(res);
    expect(Buffer.from(clientSecret, "base64url")).toHaveLength(32);
    expect(creationDate).toBeTruthy();
    const row = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: userId } });
    expect(Buffer.from(row.secretHash ?? []).equals(Buffer.from(sha256(clientSecret)))).toBe(true);

    const got = await rest(t.url, t.pat, "GET", `/v2/users/${userId}`);
    const gotText = await got.text();
    expect((JSON.parse(gotText) as { user: { machine: { hasSecret: boolean } } }).user.machine.hasSecret).toBe(true);
    const listed = await (await rest(t.url, t.pat, "POST", "/v2/users", { queries: [{ inUserIdsQuery: { userIds: [userId] } }] })).text();
    expect(listed).toContain('"hasSecret":true');
    for (const text of [gotText, listed, JSON.stringify(await t.server.db.prisma.event.findMany())]) {
      expect(text).not.toContain(clientSecret);
      expect(text).not.toContain(Buffer.from(sha256(clientSecret)).toString("base64"));
    }
  });

  it("replaces the previous secret, and removes it once (Connect, gRPC)", async () => {
    const userId = await createMachine(t, orgId, "robot-secret-rotate");
    const first = await connectClient(t).addSecret({ userId }, auth(t.pat));
    const second = await grpcClient(t).addSecret({ userId }, auth(t.pat));
    expect(second.clientSecret).not.toBe(first.clientSecret);
    const row = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: userId } });
    expect(Buffer.from(row.secretHash ?? []).equals(Buffer.from(sha256(second.clientSecret)))).toBe(true);
    const added = await t.server.db.prisma.event.findMany({ where: { aggregateId: userId, type: "user.secret.added" }, orderBy: { createdAt: "asc" } });
    expect(added.map((e) => e.payload)).toEqual([
      { replaced: false, revokedTokens: 0 },
      { replaced: true, revokedTokens: 0 },
    ]);

    await connectClient(t).removeSecret({ userId }, auth(t.pat));
    const user = await connectClient(t).getUserByID({ userId }, auth(t.pat));
    expect(user.user?.type.case === "machine" && user.user.type.value.hasSecret).toBe(false);
    expect(await rpcError(grpcClient(t).removeSecret({ userId }, auth(t.pat)))).toEqual({ code: Code.NotFound, reason: "Errors.User.Secret.NotFound" });
    expect(await restError(await rest(t.url, t.pat, "DELETE", `/v2/users/${userId}/secret`))).toEqual({ status: 404, reason: "Errors.User.Secret.NotFound" });
  });

  it("belong to machine users only", async () => {
    const human = await createHuman(t, orgId, "no-secret-for-humans");
    expect(await restError(await rest(t.url, t.pat, "POST", `/v2/users/${human}/secret`, {}))).toEqual({
      status: 400,
      reason: "Errors.User.Secret.NotMachine",
    });
  });

  it("allow a user manager and deny others", async () => {
    const userId = await createMachine(t, orgId, "robot-secret-perms");
    for (const call of [
      (token: string) => rest(t.url, token, "POST", `/v2/users/${userId}/secret`, {}),
      (token: string) => rest(t.url, token, "DELETE", `/v2/users/${userId}/secret`),
    ]) {
      expect(await restError(await call(nobody.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect(await restError(await call(auditor.pat))).toEqual({ status: 403, reason: "Errors.Permission.Denied" });
      expect(await restError(await call(foreignManager.pat))).toEqual({ status: 404, reason: "Errors.User.NotFound" });
      expect((await call(manager.pat)).status).toBe(200);
    }
  });
});
