// Signing keys on demand: ListSigningKeys and RotateSigningKey through
// connect-node (and REST), IAM_OWNER-only rotation, the overlap (a JWT issued
// before the rotation still verifies against the JWKS and is still accepted
// as bearer; new tokens carry the new kid), the audit event, and on
// PostgreSQL a second replica that signs with the new key at once.
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { SigningKeyState } from "../../gen/svc/instance/v2/instance_pb.js";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { PG_URL } from "../support/db.js";
import { addMember, defaultOrgId, type Machine, machine } from "../support/orgs.js";
import { type ChildServer, type Replicas, rest, startReplicas, startTestServer, type TestServer } from "../support/server.js";
import { auth, rpcError } from "../support/users.js";

const MGMT = "urn:svc:iam:org:project:id:svc:aud";

let t: TestServer;
let orgId: string;
let orgOwner: Machine;
let viewer: Machine;

const client = (url: string) => createClient(InstanceService, createGrpcTransport({ baseUrl: url }));

/** A machine user issuing RS256 JWT access tokens by client credentials. */
async function jwtRobot(url: string, pat: string, org: string, username: string): Promise<{ id: string; token(at?: string): Promise<string> }> {
  const created = await rest(url, pat, "POST", "/v2/users/new", {
    organizationId: org,
    username,
    machine: { name: username, accessTokenType: "ACCESS_TOKEN_TYPE_JWT" },
  });
  expect(created.status).toBe(200);
  const { id } = (await created.json()) as { id: string };
  const s = await rest(url, pat, "POST", `/v2/users/${id}/secret`, {});
  const { clientSecret } = (await s.json()) as { clientSecret: string };
  return {
    id,
    async token(at = url) {
      const res = await fetch(`${at}/oauth/v2/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${username}:${clientSecret}`).toString("base64")}`,
        },
        body: new URLSearchParams({ grant_type: "client_credentials", scope: MGMT }),
      });
      expect(res.status).toBe(200);
      const tok = ((await res.json()) as { access_token: string }).access_token;
      expect(tok.split(".")).toHaveLength(3);
      return tok;
    },
  };
}

const kidOf = (jwt: string) => decodeProtectedHeader(jwt).kid;
const jwksKids = async (url: string) => ((await (await fetch(`${url}/oauth/v2/keys`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  [orgOwner, viewer] = await Promise.all([machine(t, orgId, "sk-org-owner"), machine(t, orgId, "sk-viewer")]);
  await addMember(t, orgId, orgOwner.userId, ["ORG_OWNER"]);
  expect((await rest(t.url, t.pat, "POST", "/v2/instance/members", { userId: viewer.userId, roles: ["IAM_OWNER_VIEWER"] })).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

describe("ListSigningKeys and RotateSigningKey", () => {
  it("are for instance administrators: the default organization's ORG_OWNER is denied, IAM_OWNER_VIEWER may only list", async () => {
    const c = client(t.url);
    for (const call of [c.rotateSigningKey({}, auth(orgOwner.pat)), c.listSigningKeys({}, auth(orgOwner.pat)), c.rotateSigningKey({}, auth(viewer.pat))]) {
      expect(await rpcError(call)).toEqual({ code: Code.PermissionDenied, reason: "Errors.Permission.Denied" });
    }
    expect((await rest(t.url, orgOwner.pat, "POST", "/v2/instance/signing-keys/rotate", {})).status).toBe(403);
    expect(await rpcError(c.listSigningKeys({}))).toMatchObject({ code: Code.Unauthenticated });
    const listed = await c.listSigningKeys({}, auth(viewer.pat));
    expect(listed.result.map((k) => k.state)).toContain(SigningKeyState.ACTIVE);
    // Nothing was rotated by the denied calls.
    const events = await (await rest(t.url, t.pat, "POST", "/v2/events", { eventTypes: ["instance.signingkey.rotated"] })).json();
    expect((events as { result?: unknown[] }).result ?? []).toEqual([]);
  });

  it("rotates on demand: old tokens keep verifying through the overlap, new ones carry the new kid", async () => {
    const c = client(t.url);
    const robot = await jwtRobot(t.url, t.pat, orgId, "sk-jwt-robot");
    const before = await robot.token();
    const oldKid = kidOf(before);
    const start = (await c.listSigningKeys({}, auth(t.pat))).result;
    // One active key per algorithm; the RS256 one signs this robot's tokens.
    const startActive = start.filter((k) => k.state === SigningKeyState.ACTIVE);
    expect(startActive.map((k) => k.algorithm).sort()).toEqual(["ES256", "EdDSA", "RS256"]);
    expect(startActive.find((k) => k.algorithm === "RS256")?.id).toBe(oldKid);

    const rotated = await c.rotateSigningKey({}, auth(t.pat));
    expect(rotated.keyId).toEqual(expect.any(String));
    expect(rotated.keyId).not.toBe(oldKid);
    expect(rotated.previousVerifyUntil).toBeDefined();

    const after = await robot.token();
    expect(kidOf(after)).toBe(rotated.keyId);
    expect(await jwksKids(t.url)).toEqual(expect.arrayContaining([oldKid, rotated.keyId]));

    // An independent verifier (jose against the published JWKS) accepts both.
    const { issuer } = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as { issuer: string };
    const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
    for (const tok of [before, after]) {
      const { payload, protectedHeader } = await jwtVerify(tok, jwks, { issuer, algorithms: ["RS256"] });
      expect(payload.sub).toBe(robot.id);
      expect(protectedHeader.kid).toBe(kidOf(tok));
    }
    // ... and so does svc itself as bearer.
    for (const tok of [before, after]) expect((await rest(t.url, tok, "GET", `/v2/users/${robot.id}`)).status).toBe(200);

    const listed = await c.listSigningKeys({}, auth(t.pat));
    const byId = new Map(listed.result.map((k) => [k.id, k]));
    expect(listed.result[0]?.id).toBe(rotated.keyId);
    expect(byId.get(rotated.keyId)).toMatchObject({ algorithm: "RS256", state: SigningKeyState.ACTIVE });
    expect(byId.get(rotated.keyId)?.verifyUntil).toBeUndefined();
    expect(byId.get(oldKid as string)).toMatchObject({ algorithm: "RS256", state: SigningKeyState.RETIRED, verifyUntil: rotated.previousVerifyUntil });
    expect(Number(listed.details?.totalResult)).toBe(listed.result.length);
    const retiredOnly = await c.listSigningKeys({ queries: [{ query: { case: "stateQuery", value: { state: SigningKeyState.RETIRED } } }] }, auth(t.pat));
    // Every algorithm rotated together: its three previous keys are retired.
    expect(retiredOnly.result.map((k) => k.id)).toEqual(expect.arrayContaining(startActive.map((k) => k.id)));
    expect(retiredOnly.result).toHaveLength(3);
    expect(listed.result.filter((k) => k.state === SigningKeyState.ACTIVE).map((k) => k.algorithm)).toEqual(["RS256", "ES256", "EdDSA"]);

    // The audit event names the keys, nothing secret.
    const events = (await (await rest(t.url, t.pat, "POST", "/v2/events", { eventTypes: ["instance.signingkey.rotated"] })).json()) as {
      result: { aggregateType: string; editorUserId: string; payload: Record<string, unknown> }[];
    };
    expect(events.result).toHaveLength(1);
    expect(events.result[0]).toMatchObject({ aggregateType: "instance", payload: { keyId: rotated.keyId, alg: "RS256" } });
    const payload = events.result[0]?.payload as { retiredKeyIds: string[]; keys: { id: string; alg: string }[] };
    expect(payload.retiredKeyIds.sort()).toEqual(startActive.map((k) => k.id).sort());
    expect(payload.keys.map((k) => k.alg)).toEqual(["RS256", "ES256", "EdDSA"]);
    expect(payload.keys[0]?.id).toBe(rotated.keyId);
    expect(Object.keys(events.result[0]?.payload ?? {}).sort()).toEqual(["alg", "keyId", "keys", "retiredKeyIds", "verifyUntil"]);
  });

  it("answers over REST with metadata only, and rotates there too", async () => {
    const res = await rest(t.url, t.pat, "POST", "/v2/instance/signing-keys", { query: { limit: 1 } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { details: { totalResult: string }; result: Record<string, unknown>[] };
    expect(body.result).toHaveLength(1);
    expect(Number(body.details.totalResult)).toBeGreaterThan(1);
    expect(Object.keys(body.result[0] ?? {}).sort()).toEqual(["activeFrom", "algorithm", "creationDate", "id", "state"]);
    expect(body.result[0]?.state).toBe("SIGNING_KEY_STATE_ACTIVE");

    const rot = await rest(t.url, t.pat, "POST", "/v2/instance/signing-keys/rotate", {});
    expect(rot.status).toBe(200);
    const { keyId } = (await rot.json()) as { keyId: string };
    expect(await jwksKids(t.url)).toContain(keyId);
    const asc = (await (await rest(t.url, t.pat, "POST", "/v2/instance/signing-keys", { query: { asc: true } })).json()) as {
      result: { id: string; state: string }[];
    };
    // Ascending: the three active keys (RS256, ES256, EdDSA, rotated together) last, reversed.
    expect(asc.result.at(-1)).toEqual(expect.objectContaining({ id: keyId, state: "SIGNING_KEY_STATE_ACTIVE" }));
    expect(asc.result.slice(-3).every((k) => k.state === "SIGNING_KEY_STATE_ACTIVE")).toBe(true);
    expect(asc.result.slice(0, -3).every((k) => k.state === "SIGNING_KEY_STATE_RETIRED")).toBe(true);
    const bad = await rest(t.url, t.pat, "POST", "/v2/instance/signing-keys", { queries: [{ stateQuery: {} }] });
    expect(bad.status).toBe(400);
  });

  it("refuses a rotation that would leave more than 10 keys of one algorithm verifying, and changes nothing then", async () => {
    const c = client(t.url);
    const verifying = async () => {
      const all = (await c.listSigningKeys({}, auth(t.pat))).result;
      return all.filter((k) => k.state === SigningKeyState.ACTIVE || k.state === SigningKeyState.RETIRED);
    };
    const rs256 = async () => (await verifying()).filter((k) => k.algorithm === "RS256");
    let count = (await rs256()).length;
    expect(count).toBeLessThan(10);
    while (count < 10) {
      await c.rotateSigningKey({}, auth(t.pat));
      count++;
    }
    const before = await verifying();
    expect(await rs256()).toHaveLength(10);
    expect(before).toHaveLength(30);
    const events = async () =>
      ((await (await rest(t.url, t.pat, "POST", "/v2/events", { eventTypes: ["instance.signingkey.rotated"] })).json()) as { result: unknown[] }).result.length;
    const eventsBefore = await events();

    expect(await rpcError(c.rotateSigningKey({}, auth(t.pat)))).toEqual({ code: Code.ResourceExhausted, reason: "Errors.SigningKey.TooManyRotations" });
    const rest429 = await rest(t.url, t.pat, "POST", "/v2/instance/signing-keys/rotate", {});
    expect(rest429.status).toBe(429);
    // Nothing changed: the same keys, the same active one, no new key in the JWKS, no audit event.
    expect(await verifying()).toEqual(before);
    expect((await jwksKids(t.url)).sort()).toEqual(before.map((k) => k.id).sort());
    expect(await events()).toBe(eventsBefore);
  });

  it("shows keys past their overlap as expired (last: moves the clock)", async () => {
    const overlapMs = 2 * 86_400_000;
    t.advanceClock(overlapMs);
    const c = client(t.url);
    const listed = await c.listSigningKeys({}, auth(t.pat));
    expect(listed.result.slice(0, 3).map((k) => k.state)).toEqual([SigningKeyState.ACTIVE, SigningKeyState.ACTIVE, SigningKeyState.ACTIVE]);
    expect(listed.result.slice(3).every((k) => k.state === SigningKeyState.EXPIRED)).toBe(true);
    // With the old keys out of their overlap, rotating on demand works again.
    expect((await c.rotateSigningKey({}, auth(t.pat))).keyId).toEqual(expect.any(String));
  });
});

const describePg = PG_URL ? describe : describe.skip;

describePg("rotation across replicas on one PostgreSQL", () => {
  let replicas: ChildServer[] = [];
  let pat: string;
  let started: Replicas | undefined;

  beforeAll(async () => {
    started = await startReplicas(2, { SVC_EXTERNAL_URL: "https://svc.keys.test" });
    ({ servers: replicas, pat } = started);
  }, 120_000);
  afterAll(() => started?.stop());

  it("a rotation through one replica is used by the other for its next token", async () => {
    const [a, b] = replicas.map((r) => r.url) as [string, string];
    const instance = (await (await rest(a, pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const robot = await jwtRobot(a, pat, instance.instance.defaultOrganizationId, "sk-replica-robot");
    const fromB = await robot.token(b);
    expect((await rest(b, fromB, "GET", `/v2/users/${robot.id}`)).status).toBe(200);

    const rotated = await client(a).rotateSigningKey({}, auth(pat));
    expect(rotated.keyId).not.toBe(kidOf(fromB));
    // Replica B learns of it by LISTEN/NOTIFY (sent at commit); its next signatures use the new key.
    let kid: string | undefined;
    for (let i = 0; i < 50 && kid !== rotated.keyId; i++) {
      if (i) await new Promise((r) => setTimeout(r, 20));
      kid = kidOf(await robot.token(b));
    }
    expect(kid).toBe(rotated.keyId);
    for (const url of [a, b]) {
      expect(await jwksKids(url)).toEqual(expect.arrayContaining([kidOf(fromB), rotated.keyId]));
      expect((await rest(url, fromB, "GET", `/v2/users/${robot.id}`)).status).toBe(200);
    }
    const listed = await client(b).listSigningKeys({}, auth(pat));
    expect(listed.result.map((k) => [k.id, k.state])).toEqual(
      expect.arrayContaining([
        [rotated.keyId, SigningKeyState.ACTIVE],
        [kidOf(fromB), SigningKeyState.RETIRED],
      ]),
    );
  }, 60_000);
});
