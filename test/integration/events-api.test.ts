// EventService.ListEvents through the real server: each filter, ordering,
// paging, who sees which events, and that no event carries a secret.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgA: string;
let orgB: string;

const DAY = 24 * 60 * 60_000;

interface EventJson {
  id: string;
  type: string;
  aggregateType: string;
  aggregateId: string;
  organizationId?: string;
  editorUserId?: string;
  creationDate: string;
  payload?: Record<string, unknown>;
}
interface ListJson {
  details: { totalResult?: string };
  result?: EventJson[];
}

async function list(
  pat: string,
  body: Record<string, unknown>,
  transport: "rest" | "connect" = "rest",
): Promise<{ status: number; body: ListJson; reason?: string }> {
  const res =
    transport === "rest"
      ? await rest(t.url, pat, "POST", "/v2/events", body)
      : await fetch(`${t.url}/svc.event.v2.EventService/ListEvents`, {
          method: "POST",
          headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
  const json = (await res.json()) as ListJson & { details?: { reason?: string }[] };
  const reason = res.status === 200 ? undefined : (json.details as unknown as { reason?: string; debug?: { reason?: string } }[] | undefined)?.[0];
  return { status: res.status, body: json, reason: reason?.reason ?? reason?.debug?.reason };
}

async function all(pat: string, body: Record<string, unknown> = {}): Promise<EventJson[]> {
  const res = await list(pat, { ...body, query: { limit: 1000, ...((body.query as object) ?? {}) } });
  expect(res.status).toBe(200);
  return res.body.result ?? [];
}

async function machine(pat: string, orgId: string, username: string): Promise<{ id: string; pat: string }> {
  const created = await rest(t.url, pat, "POST", "/v2/users/new", { organizationId: orgId, username, machine: { name: username } });
  expect(created.status).toBe(200);
  const { id } = (await created.json()) as { id: string };
  const token = await rest(t.url, t.pat, "POST", `/v2/users/${id}/pats`, {});
  expect(token.status).toBe(200);
  return { id, pat: ((await token.json()) as { token: string }).token };
}

const callers: Record<string, { id: string; pat: string }> = {};
let base: number;
let aRobot: string;
const boundary = (days: number) => new Date(base + days * DAY).toISOString();

beforeAll(async () => {
  t = await startTestServer();
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  orgA = ((await res.json()) as { instance: { defaultOrganizationId: string } }).instance.defaultOrganizationId;
  const db = t.server.db.prisma;
  orgB = (await db.organization.create({ data: { id: "org-b", instanceId: t.server.instanceId, name: "Org B", primaryDomain: "org-b.localhost" } })).id;
  const admin = await db.user.findFirstOrThrow({ where: { username: "svc-admin" } });
  callers.iamOwner = { id: admin.id, pat: t.pat };
  callers.iamViewer = await machine(t.pat, orgA, "iam-viewer");
  await db.instanceMember.create({ data: { instanceId: t.server.instanceId, userId: callers.iamViewer.id, roles: ["IAM_OWNER_VIEWER"] } });
  callers.noRoles = await machine(t.pat, orgA, "no-roles");
  for (const [name, org, role] of [
    ["ownerA", orgA, "ORG_OWNER"],
    ["auditorA", orgA, "ORG_AUDITOR"],
    ["userManagerA", orgA, "ORG_USER_MANAGER"],
    ["ownerB", orgB, "ORG_OWNER"],
    ["auditorB", orgB, "ORG_AUDITOR"],
  ] as const) {
    callers[name] = await machine(t.pat, org, name.toLowerCase());
    await db.orgMember.create({ data: { orgId: org, userId: callers[name].id, roles: [role] } });
  }

  // Three later days of activity by different editors, so that time ranges and editors select known events.
  base = Date.now();
  t.advanceClock(DAY);
  aRobot = (await machine(callers.ownerA.pat, orgA, "a-robot")).id; // user.machine.added by ownerA, user.pat.added by the admin
  t.advanceClock(DAY);
  expect((await rest(t.url, callers.ownerB.pat, "POST", "/v2/users/new", { organizationId: orgB, username: "b-robot", machine: { name: "b" } })).status).toBe(
    200,
  );
  expect((await rest(t.url, callers.ownerB.pat, "PUT", "/v2/settings/lockout", { organizationId: orgB, settings: { maxPasswordAttempts: 5 } })).status).toBe(
    200,
  );
  t.advanceClock(DAY);
  expect((await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { settings: { maxOtpAttempts: 3 } })).status).toBe(200);
});
afterAll(() => t.stop());

describe("ordering and paging", () => {
  it("lists newest first, oldest first with asc, every event once", async () => {
    const desc = await all(t.pat);
    expect(desc.length).toBe(await t.server.db.prisma.event.count());
    const times = desc.map((e) => Date.parse(e.creationDate));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(desc[0]?.type).toBe("settings.lockout.set");
    expect(desc[0]?.organizationId).toBeUndefined();
    // The first start writes its events in one transaction, at one instant.
    const first = desc.filter((e) => e.creationDate === desc.at(-1)?.creationDate).map((e) => e.type);
    expect(first).toContain("instance.added");
    const asc = await all(t.pat, { query: { asc: true } });
    expect(asc.map((e) => e.id)).toEqual(desc.map((e) => e.id).reverse());
  });

  it("pages with offset and limit and reports the total", async () => {
    const everything = await all(t.pat);
    const total = String(everything.length);
    const pages: EventJson[] = [];
    for (let offset = 0; offset < everything.length; offset += 4) {
      const page = await list(t.pat, { query: { offset, limit: 4 } });
      expect(page.body.details.totalResult).toBe(total);
      expect(page.body.result?.length).toBe(Math.min(4, everything.length - offset));
      pages.push(...(page.body.result ?? []));
    }
    expect(pages.map((e) => e.id)).toEqual(everything.map((e) => e.id));
    const beyond = await list(t.pat, { query: { offset: 10_000 } });
    expect([beyond.body.result, beyond.body.details.totalResult]).toEqual([undefined, total]);
    // limit 0 is the default of 100 (fewer exist here).
    expect((await list(t.pat, {})).body.result?.length).toBe(everything.length);
  });

  it("refuses a limit above 1000", async () => {
    const res = await list(t.pat, { query: { limit: 1001 } });
    expect([res.status, res.reason]).toEqual([400, "Errors.List.LimitTooHigh"]);
  });
});

describe("filters", () => {
  it("by organization", async () => {
    const inB = await all(t.pat, { organizationId: orgB });
    expect(inB.length).toBe(await t.server.db.prisma.event.count({ where: { orgId: orgB } }));
    expect(inB.map((e) => e.type)).toEqual([
      "settings.lockout.set",
      "user.machine.added",
      "user.pat.added",
      "user.machine.added",
      "user.pat.added",
      "user.machine.added",
    ]);
    expect(inB.every((e) => e.organizationId === orgB)).toBe(true);
  });

  it("by resource type and id", async () => {
    const settings = await all(t.pat, { aggregateType: "settings" });
    expect(settings.map((e) => [e.type, e.aggregateId])).toEqual([
      ["settings.lockout.set", t.server.instanceId],
      ["settings.lockout.set", orgB],
    ]);
    const robot = await all(t.pat, { aggregateType: "user", aggregateId: aRobot });
    expect(robot.map((e) => e.type)).toEqual(["user.pat.added", "user.machine.added"]);
    expect(await all(t.pat, { aggregateType: "org", aggregateId: aRobot })).toEqual([]);
  });

  it("by event types", async () => {
    const got = await all(t.pat, { eventTypes: ["settings.lockout.set", "instance.added"] });
    expect(got.map((e) => e.type)).toEqual(["settings.lockout.set", "settings.lockout.set", "instance.added"]);
    expect(await all(t.pat, { eventTypes: ["no.such.type"] })).toEqual([]);
  });

  it("names the system principal as the editor of svc's own actions, and every event has an editor", async () => {
    const bySystem = await all(t.pat, { editorUserId: "svc-system" });
    // The first start (the instance, its organization, the admins, the console's project and client).
    expect(bySystem.map((e) => e.type)).toEqual(expect.arrayContaining(["instance.added", "org.added", "project.added"]));
    expect(bySystem.every((e) => e.editorUserId === "svc-system")).toBe(true);
    expect((await all(t.pat)).filter((e) => !e.editorUserId)).toEqual([]);
  });

  it("by editor", async () => {
    const byOwnerB = await all(t.pat, { editorUserId: callers.ownerB?.id });
    expect(byOwnerB.map((e) => e.type)).toEqual(["settings.lockout.set", "user.machine.added"]);
    expect(byOwnerB.every((e) => e.editorUserId === callers.ownerB?.id)).toBe(true);
  });

  it("by creation date: from inclusive, to exclusive", async () => {
    const day1 = await all(t.pat, { from: boundary(0.5), to: boundary(1.5) });
    expect(day1.map((e) => [e.type, e.aggregateId])).toEqual([
      ["user.pat.added", aRobot],
      ["user.machine.added", aRobot],
    ]);
    expect((await all(t.pat, { from: boundary(0.5) })).length).toBe(5);
    expect((await all(t.pat, { to: boundary(0.5) })).length).toBe((await all(t.pat)).length - 5);
    // The exact creation time of an event is inside [from, ...) and outside [..., to).
    const newest = (await all(t.pat))[0] as EventJson;
    expect((await all(t.pat, { from: newest.creationDate })).map((e) => e.id)).toContain(newest.id);
    expect((await all(t.pat, { to: newest.creationDate })).map((e) => e.id)).not.toContain(newest.id);
  });

  it("combines filters with AND", async () => {
    const got = await all(t.pat, {
      organizationId: orgB,
      eventTypes: ["settings.lockout.set"],
      editorUserId: callers.ownerB?.id,
      from: boundary(1.5),
      to: boundary(2.5),
    });
    expect(got).toHaveLength(1);
    // A partial update: the fields not named keep the value in force (the built-in default here).
    expect(got[0]?.payload).toEqual({
      maxPasswordAttempts: 5,
      maxOtpAttempts: 5,
      permanentLockout: false,
      lockoutDurationSeconds: 300,
      maxLockoutDurationSeconds: 3600,
    });
    expect(await all(t.pat, { organizationId: orgA, editorUserId: callers.ownerB?.id })).toEqual([]);
  });

  it("refuses an empty or inverted date range and too many types", async () => {
    for (const range of [
      { from: boundary(2), to: boundary(1) },
      { from: boundary(1), to: boundary(1) },
    ]) {
      const res = await list(t.pat, range);
      expect([res.status, res.reason]).toEqual([400, "Errors.Events.Filter.DateRange"]);
    }
    const many = await list(t.pat, { eventTypes: Array.from({ length: 101 }, (_, i) => `t${i}`) });
    expect([many.status, many.reason]).toEqual([400, "Errors.Events.Filter.TooManyTypes"]);
    const long = await list(t.pat, { aggregateId: "x".repeat(201) });
    expect([long.status, long.reason]).toEqual([400, "Errors.Events.Filter.TooLong"]);
  });
});

describe("who sees which events", () => {
  for (const transport of ["rest", "connect"] as const) {
    it(`instance readers see everything, org owners and auditors their org only, others nothing (${transport})`, async () => {
      const db = t.server.db.prisma;
      const everything = await db.event.count();
      const count = async (caller: string, body: Record<string, unknown> = {}) => {
        const res = await list(callers[caller]?.pat as string, { ...body, query: { limit: 1000 } }, transport);
        return { status: res.status, total: res.body.details?.totalResult, orgs: [...new Set((res.body.result ?? []).map((e) => e.organizationId ?? ""))] };
      };
      expect(await count("iamOwner")).toEqual({ status: 200, total: String(everything), orgs: expect.arrayContaining(["", orgA, orgB]) });
      expect((await count("iamViewer")).total).toBe(String(everything));
      for (const [caller, org] of [
        ["ownerA", orgA],
        ["auditorA", orgA],
        ["ownerB", orgB],
        ["auditorB", orgB],
      ] as const) {
        expect([caller, await count(caller)]).toEqual([caller, { status: 200, total: String(await db.event.count({ where: { orgId: org } })), orgs: [org] }]);
      }
      for (const caller of ["userManagerA", "noRoles"]) {
        const res = await list(callers[caller]?.pat as string, {}, transport);
        expect([caller, res.status, res.reason]).toEqual([caller, 403, "Errors.Permission.Denied"]);
      }
    });
  }

  it("filtering on an organization: allowed in one's own, NotFound elsewhere, PermissionDenied without events.read", async () => {
    expect((await list(callers.auditorA?.pat as string, { organizationId: orgA })).status).toBe(200);
    expect((await list(callers.iamViewer?.pat as string, { organizationId: orgB })).status).toBe(200);
    for (const [caller, org] of [
      ["auditorA", orgB],
      ["ownerB", orgA],
    ] as const) {
      const res = await list(callers[caller]?.pat as string, { organizationId: org });
      expect([caller, res.status, res.reason]).toEqual([caller, 404, "Errors.Org.NotFound"]);
    }
    // Without events.read anywhere the answer is the same for every organization.
    for (const [caller, org] of [
      ["userManagerA", orgA],
      ["noRoles", orgA],
      ["noRoles", orgB],
    ] as const) {
      const res = await list(callers[caller]?.pat as string, { organizationId: org });
      expect([caller, res.status, res.reason]).toEqual([caller, 403, "Errors.Permission.Denied"]);
    }
    // An org-level reader cannot reach instance-level events through other filters.
    expect(await all(callers.ownerA?.pat as string, { aggregateType: "settings", aggregateId: t.server.instanceId })).toEqual([]);
    expect(await all(callers.ownerA?.pat as string, { eventTypes: ["instance.added"] })).toEqual([]);
  });

  it("refuses a caller without a valid token", async () => {
    const res = await rest(t.url, undefined, "POST", "/v2/events", {});
    expect(res.status).toBe(401);
  });
});

describe("over gRPC", () => {
  it("lists with filters and returns the payload as a Struct", async () => {
    const client = createClient(EventService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${t.pat}` };
    const res = await client.listEvents({ organizationId: orgB, eventTypes: ["user.machine.added"], query: { limit: 1, asc: true } }, { headers });
    expect(res.details?.totalResult).toBe(3n);
    expect(res.result).toHaveLength(1);
    expect(res.result[0]?.payload).toMatchObject({ username: "ownerb" });
    expect(res.result[0]?.creationDate?.seconds).toBeGreaterThan(0n);
    const denied = await client.listEvents({}, { headers: { authorization: `Bearer ${callers.noRoles?.pat}` } }).catch((e: unknown) => ConnectError.from(e));
    expect((denied as ConnectError).code).toBe(Code.PermissionDenied);
    expect((denied as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason).toBe("Errors.Permission.Denied");
  });
});

describe("no secrets in events", () => {
  it("keeps passwords, hashes, tokens, client secrets and private keys out of every payload", async () => {
    const password = "Correct-Horse-Battery-9";
    const created = await rest(t.url, t.pat, "POST", "/v2/users/new", {
      organizationId: orgA,
      username: "secret-keeper",
      human: { profile: { givenName: "Sec", familyName: "Ret" }, email: { email: "sec@example.com" }, password: { password } },
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    const db = t.server.db.prisma;
    const firstHash = (await db.user.findUniqueOrThrow({ where: { id } })).passwordHash as string;
    const robot = await machine(t.pat, orgA, "token-holder");
    // The other credential writes of the user service.
    const newPassword = "Another-Secret-Passw0rd!";
    expect((await rest(t.url, t.pat, "POST", `/v2/users/${id}/password`, { newPassword: { password: newPassword } })).status).toBe(200);
    const secret = await rest(t.url, t.pat, "POST", `/v2/users/${robot.id}/secret`, {});
    expect(secret.status).toBe(200);
    const { clientSecret } = (await secret.json()) as { clientSecret: string };
    const key = await rest(t.url, t.pat, "POST", `/v2/users/${robot.id}/keys`, {});
    expect(key.status).toBe(200);
    const keyFile = JSON.parse(Buffer.from(((await key.json()) as { keyContent: string }).keyContent, "base64").toString("utf8")) as { key: string };
    const privateKey = keyFile.key.replace(/-----[A-Z ]+-----/g, "").replace(/\s/g, "");

    const secondHash = (await db.user.findUniqueOrThrow({ where: { id } })).passwordHash as string;
    const machineRow = await db.user.findUniqueOrThrow({ where: { id: robot.id } });
    const pats = await db.personalAccessToken.findMany({ where: { userId: robot.id } });
    const encodings = (b: Uint8Array) => [Buffer.from(b).toString("hex"), Buffer.from(b).toString("base64"), Buffer.from(b).toString("base64url")];
    const secrets = [
      password,
      newPassword,
      firstHash,
      secondHash,
      robot.pat,
      clientSecret,
      privateKey.slice(0, 64),
      privateKey.slice(-64),
      ...pats.flatMap((p) => encodings(p.tokenHash)),
      ...(machineRow.secretHash ? encodings(machineRow.secretHash) : []),
    ];
    expect(secrets.every((s) => s.length >= 20)).toBe(true);

    // Both what the API shows and what the database holds.
    const shown = JSON.stringify(await all(t.pat));
    const stored = JSON.stringify((await db.event.findMany()).map((e) => e.payload));
    expect(shown).toContain("secret-keeper");
    expect(shown).toContain(robot.id);
    for (const s of secrets) {
      expect(shown).not.toContain(s);
      expect(stored).not.toContain(s);
    }
    // The argon2 hash's salt and digest must not appear either, even in part.
    const hashParts = [firstHash, secondHash].flatMap((h) => h.split("$").filter((p) => p.length >= 16));
    for (const part of hashParts) expect(stored).not.toContain(part);
  });
});
