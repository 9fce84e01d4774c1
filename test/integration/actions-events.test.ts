// Events out (issue 27): event executions send svc's events to webhook targets from the outbox. Real HTTP receivers on
// loopback: the signature is checked here with node:crypto alone; a receiver down for a while gets every event
// afterwards, in order per user; a receiver answering 500 takes a delivery to dead after the retry limit, and
// RetryDelivery delivers it; organization owners bind their own targets to their own organization's events only.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { DELIVERY_COLUMNS, deliveryValues, type NewDelivery } from "../../src/store/outbox.js";
import { createHuman, defaultOrgId, type World, world } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { admin, fails, type Json, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

interface Arrival {
  headers: IncomingHttpHeaders;
  raw: string;
  body: Json;
}

/** A receiver on loopback: records each request, answers `status` (changeable), can be stopped and started on its port. */
class Receiver {
  arrivals: Arrival[] = [];
  status = 200;
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => {
        raw += c.toString("utf8");
      });
      req.on("end", () => {
        this.arrivals.push({ headers: req.headers, raw, body: JSON.parse(raw) as Json });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(port, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/events`;
  }
}

/** The Svc-Signature check a receiver makes, independently of svc's code: HMAC-SHA256 of "<t>.<body>". */
function signedBy(key: string, raw: string, header: string | string[] | undefined): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header ?? ""));
  if (!m) return false;
  if (Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return false;
  const expected = createHmac("sha256", Buffer.from(key, "base64url")).update(`${m[1]}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2] as string, "hex"));
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let t: TestServer;
let orgId: string;
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const r = new Receiver();
  await r.start();
  receivers.push(r);
  return r;
}

beforeAll(async () => {
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true", SVC_ACTIONS_DELIVERY_ATTEMPTS: "5", SVC_ACTIONS_DELIVERY_BACKOFF_MS: "250" });
  orgId = await defaultOrgId(t);
}, 120_000);
afterAll(async () => {
  await t?.stop();
  for (const r of receivers) await r.stop();
});

/** A webhook target at `url` bound to `condition` (instance-wide); returns its id and signing key. */
async function hook(name: string, url: string, condition: Json, extra: Json = {}): Promise<{ id: string; key: string }> {
  const { id, signingKey } = await admin(t, "CreateTarget", { name, endpoint: url, kind: "TARGET_KIND_WEBHOOK", timeout: "5s", ...extra });
  await admin(t, "SetExecution", { event: condition, targetIds: [id] });
  return { id, key: signingKey };
}

async function unhook(condition: Json, id: string): Promise<void> {
  await admin(t, "SetExecution", { event: condition, targetIds: [] });
  await admin(t, "DeleteTarget", { id });
}

describe("event executions", () => {
  it("delivers user.human.added, signed, with the event as ListEvents shows it and the delivery id as idempotency key", async () => {
    const r = await receiver();
    const { id, key } = await hook("created-hook", r.url, { event: "user.human.added" });
    expect((await admin(t, "ListExecutions", {})).result).toEqual(
      expect.arrayContaining([expect.objectContaining({ event: { event: "user.human.added" }, targetIds: [id] })]),
    );
    const userId = await createHuman(t, orgId, "events-created");
    const arrival = await until("the delivery", () => r.arrivals.find((a) => a.body.aggregateId === userId));
    expect(signedBy(key, arrival.raw, arrival.headers["svc-signature"])).toBe(true);
    expect(signedBy(key, `${arrival.raw} `, arrival.headers["svc-signature"])).toBe(false);
    const listed = (await admin(t, "ListEvents", { aggregateId: userId, eventTypes: ["user.human.added"] })).result[0];
    expect(arrival.body).toEqual({ ...listed, instanceId: t.server.instanceId, deliveryId: arrival.headers["idempotency-key"] });
    // Only the type asked for: the user's other events (none here besides the creation) and other aggregates' are not sent.
    expect(r.arrivals.every((a) => a.body.type === "user.human.added")).toBe(true);
    const delivered = await until("the delivery's state", async () => {
      const d = (await admin(t, "ListDeliveries", { targetId: id, state: "delivered" })).result ?? [];
      return d.length === 1 ? d : undefined;
    });
    expect(delivered[0]).toMatchObject({ id: arrival.headers["idempotency-key"], eventType: "user.human.added", eventId: listed.id, attempts: 1 });
    await unhook({ event: "user.human.added" }, id);
  }, 60_000);

  it("a receiver down for a while gets every event afterwards, in order per user", async () => {
    const r = new Receiver();
    await r.start();
    const port = r.port;
    await r.stop();
    const { id } = await hook("down-hook", `http://127.0.0.1:${port}/events`, { group: "user.*" });
    const users: string[] = [];
    for (let i = 0; i < 3; i++) users.push(await createHuman(t, orgId, `events-down-${i}`));
    for (const u of users) {
      await admin(t, "LockUser", { userId: u });
      await admin(t, "UnlockUser", { userId: u });
    }
    // The first attempts failed (nothing listens): each user's first event waits for a retry, the rest behind it.
    await until("failed attempts", async () => ((await admin(t, "ListDeliveries", { targetId: id, state: "failed" })).result ?? []).length >= 1);
    await r.start(port);
    receivers.push(r);
    const expected = async (u: string) =>
      ((await admin(t, "ListEvents", { aggregateId: u, query: { asc: true } })).result as Json[]).filter((e) => e.type.startsWith("user.")).map((e) => e.id);
    for (const u of users) {
      const ids = await expected(u);
      expect(ids.length).toBeGreaterThanOrEqual(3);
      const got = await until(`${u}'s events`, () => {
        const mine = r.arrivals.filter((a) => a.body.aggregateId === u).map((a) => a.body.id as string);
        return mine.length >= ids.length ? mine : undefined;
      });
      // In order, each once (a retry of an attempt that reached nobody is no duplicate).
      expect(got).toEqual(ids);
    }
    await unhook({ group: "user.*" }, id);
  }, 90_000);

  it("a receiver answering 500 takes a delivery to dead after the retry limit; RetryDelivery delivers it", async () => {
    const r = await receiver();
    r.status = 500;
    const { id } = await hook("failing-hook", r.url, { event: "user.human.added" });
    const userId = await createHuman(t, orgId, "events-dead");
    const [dead] = await until("the dead delivery", async () => {
      const d = (await admin(t, "ListDeliveries", { targetId: id, state: "dead" })).result ?? [];
      return d.length ? d : undefined;
    });
    expect(dead).toMatchObject({ attempts: 5, maxAttempts: 5, lastError: "answered 500" });
    expect(r.arrivals.filter((a) => a.body.aggregateId === userId)).toHaveLength(5);
    expect((await admin(t, "GetTarget", { id })).recentFailures).toBe(1);
    // Metrics: the outcomes are counted.
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/svc_action_deliveries_total\{outcome="dead"\} [1-9]/);
    expect(metrics).toMatch(/svc_action_deliveries_total\{outcome="failed"\} [1-9]/);
    expect(metrics).toMatch(/svc_action_outbox_depth \d+/);
    expect(metrics).toMatch(/svc_action_outbox_oldest_seconds [\d.e+-]+/);

    r.status = 200;
    await admin(t, "RetryDelivery", { id: dead.id });
    await until("the retried delivery", async () => ((await admin(t, "ListDeliveries", { targetId: id, state: "delivered" })).result ?? []).length === 1);
    expect(r.arrivals.filter((a) => a.body.aggregateId === userId)).toHaveLength(6);
    await fails(t, "rest", t.pat, "RetryDelivery", { id: dead.id }, "failed_precondition", "Errors.Action.Delivery.NotRetryable");
    await fails(t, "rest", t.pat, "RetryDelivery", { id: "nope" }, "not_found", "Errors.Action.Delivery.NotFound");
    await fails(t, "rest", t.pat, "ListDeliveries", { state: "lost" }, "invalid_argument", "Errors.Action.Delivery.State.Invalid");

    // Bounded storage: the purge (run every minute with the retention's cut-off) deletes what ended, never what waits.
    r.status = 500;
    await createHuman(t, orgId, "events-dead-2");
    const [open] = await until("the waiting delivery", async () => {
      const d = ((await admin(t, "ListDeliveries", { targetId: id })).result ?? []).filter((x: Json) => x.eventId !== dead.eventId);
      return d.length ? d : undefined;
    });
    expect(await t.server.tokens.store.outbox.purge(new Date(Date.now() + 3600_000), 10_000)).toBeGreaterThanOrEqual(1);
    expect(((await admin(t, "ListDeliveries", { targetId: id })).result ?? []).map((x: Json) => x.id)).toEqual([open.id]);
    await unhook({ event: "user.human.added" }, id);
  }, 90_000);

  it("delivers the events written inside the sign-in statements too (session.added)", async () => {
    const r = await receiver();
    const { id } = await hook("session-hook", r.url, { group: "session" });
    const login = await loginClient(t, orgId, "events-login-client");
    const userId = await createHuman(t, orgId, "events-session-user");
    const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
    const { sessionId } = await signIn(t, login, `events-session-user@${domain}`);
    const arrival = await until("the session's event", () => r.arrivals.find((a) => a.body.aggregateId === sessionId));
    expect(arrival.body).toMatchObject({ type: "session.added", aggregateType: "session", instanceId: t.server.instanceId });
    // Only the group asked for: the user's creation is not sent to this target.
    expect(r.arrivals.find((a) => a.body.aggregateId === userId)).toBeUndefined();
    await unhook({ group: "session" }, id);
  }, 60_000);

  it("refuses malformed conditions", async () => {
    const { id } = await admin(t, "CreateTarget", { name: "bad-conditions", endpoint: "https://hooks.example.com/x", kind: "TARGET_KIND_WEBHOOK" });
    for (const event of [{ event: "User Created" }, { group: "user.**" }, { event: "" }, { all: false }]) {
      await fails(t, "rest", t.pat, "SetExecution", { event, targetIds: [id] }, "invalid_argument", "Errors.Action.Execution.Event.Invalid");
    }
    await fails(t, "rest", t.pat, "SetExecution", { event: { all: true }, targetIds: ["nope"] }, "not_found", "Errors.Action.Target.NotFound");
    await admin(t, "DeleteTarget", { id });
  });
});

describe("the outbox's lease", () => {
  // The store's claim, driven with its own clock, on rows of an instance no running worker claims for.
  it("a claimed delivery is left alone until its lease ends, then claimed again (its replica died); an end or a failure releases it", async () => {
    const outbox = t.server.tokens.store.outbox;
    const instanceId = `lease-${Date.now().toString(36)}`;
    const t0 = new Date();
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    const row = (id: string, orderKey: string): NewDelivery => ({
      id,
      instanceId,
      kind: "action.event",
      targetId: `${instanceId}-target`,
      orgId: null,
      eventType: "user.machine.added",
      orderKey,
      payload: { id },
      maxAttempts: 5,
      createdAt: t0,
    });
    await t.server.db.prisma
      .$executeRaw`INSERT INTO "Delivery" (${DELIVERY_COLUMNS}) VALUES ${deliveryValues([row(`${instanceId}-a`, "u1"), row(`${instanceId}-b`, "u2")])}`;

    const first = await outbox.claim(instanceId, at(0), at(45), [], 1);
    expect(first.map((d) => [d.id, d.attempts])).toEqual([[`${instanceId}-a`, 1]]);
    // Another replica, within the lease: only the row nobody holds.
    expect((await outbox.claim(instanceId, at(1), at(46), [], 10)).map((d) => d.id)).toEqual([`${instanceId}-b`]);
    expect(await outbox.claim(instanceId, at(44), at(89), [], 10)).toEqual([]);
    // The lease of "a" ended (its replica died mid-delivery): claimed again, the attempt counted; "b"'s too.
    const again = await outbox.claim(instanceId, at(47), at(92), [], 10);
    expect(again.map((d) => [d.id, d.attempts]).sort()).toEqual([
      [`${instanceId}-a`, 2],
      [`${instanceId}-b`, 2],
    ]);
    // "a" failed: due again at its retry time, before the lease it had would have ended; "b" was delivered.
    await outbox.failed(`${instanceId}-a`, "answered 500", at(48), at(50));
    await outbox.delivered([`${instanceId}-b`], at(48));
    expect(await outbox.claim(instanceId, at(49), at(94), [], 10)).toEqual([]);
    expect((await outbox.claim(instanceId, at(50), at(95), [], 10)).map((d) => [d.id, d.attempts, d.state])).toEqual([[`${instanceId}-a`, 3, "failed"]]);
    await outbox.delivered([`${instanceId}-a`], at(51));
    expect(await outbox.claim(instanceId, at(3600), at(3645), [], 10)).toEqual([]);
    // Ended rows go with the purge, by when they ended.
    expect(await outbox.purge(at(49), 100, instanceId)).toBe(1);
    expect(await outbox.purge(at(52), 100, instanceId)).toBe(1);
  });
});

describe("organization owners", () => {
  let w: World;
  beforeAll(async () => {
    w = await world(t, "events-orgs");
  });

  it("bind their own organization's targets to its events, and nothing of another organization's", async () => {
    const r = await receiver();
    const own = await ok(t, "rest", w.ownerA.pat, "CreateTarget", { name: "org-a-hook", endpoint: r.url, kind: "TARGET_KIND_WEBHOOK", organizationId: w.orgA });
    const other = await ok(t, "rest", w.ownerB.pat, "CreateTarget", {
      name: "org-b-hook",
      endpoint: r.url,
      kind: "TARGET_KIND_WEBHOOK",
      organizationId: w.orgB,
    });
    // Another organization's events, the instance's, another organization's target: refused.
    await fails(
      t,
      "rest",
      w.ownerA.pat,
      "SetExecution",
      { event: { all: true }, organizationId: w.orgB, targetIds: [own.id] },
      "not_found",
      "Errors.Org.NotFound",
    );
    await fails(t, "rest", w.ownerA.pat, "SetExecution", { event: { all: true }, targetIds: [own.id] }, "permission_denied");
    await fails(t, "rest", w.ownerA.pat, "SetExecution", { event: { all: true }, organizationId: w.orgA, targetIds: [other.id] }, "not_found");
    await fails(t, "rest", w.ownerA.pat, "SetExecution", { function: "preuserinfo", targetIds: [own.id] }, "permission_denied");
    await fails(t, "rest", w.ownerA.pat, "CreateTarget", { name: "org-a-in-b", endpoint: r.url, organizationId: w.orgB }, "not_found");
    await fails(t, "rest", w.ownerA.pat, "GetTarget", { id: other.id }, "not_found");
    await fails(t, "rest", w.userManagerA.pat, "SetExecution", { event: { all: true }, organizationId: w.orgA, targetIds: [own.id] }, "permission_denied");
    // Their own: allowed, listed to them (and not to B's owner).
    await ok(t, "rest", w.ownerA.pat, "SetExecution", { event: { group: "user" }, organizationId: w.orgA, targetIds: [own.id] });
    const listed = (await ok(t, "rest", w.ownerA.pat, "ListExecutions", {})).result;
    expect(listed).toEqual([expect.objectContaining({ event: { group: "user.*" }, organizationId: w.orgA, targetIds: [own.id] })]);
    expect((await ok(t, "rest", w.ownerA.pat, "ListTargets", {})).result.map((x: Json) => x.id)).toEqual([own.id]);
    expect((await ok(t, "rest", w.ownerB.pat, "ListExecutions", {})).result ?? []).toEqual([]);

    // A's events reach A's target; B's do not.
    const inA = await createHuman(t, w.orgA, "events-orgs-user-a");
    const inB = await createHuman(t, w.orgB, "events-orgs-user-b");
    await until("A's event", () => r.arrivals.find((a) => a.body.aggregateId === inA));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(r.arrivals.filter((a) => a.body.aggregateId === inB)).toEqual([]);
    const mine = (await ok(t, "rest", w.ownerA.pat, "ListDeliveries", {})).result as Json[];
    expect(mine.length).toBeGreaterThanOrEqual(1);
    expect(mine.every((d) => d.targetId === own.id)).toBe(true);
    // The lists filtered by organization on the server (the console's organization page): an instance administrator
    // sees one organization's; an owner asking for another organization's gets none of them.
    const ids = (r: Json) => ((r.result ?? []) as Json[]).map((x) => x.id);
    expect(ids(await admin(t, "ListTargets", { organizationId: w.orgA }))).toEqual([own.id]);
    expect(ids(await admin(t, "ListTargets", { organizationId: w.orgB }))).toEqual([other.id]);
    expect((await admin(t, "ListExecutions", { organizationId: w.orgA })).result).toEqual([
      expect.objectContaining({ event: { group: "user.*" }, organizationId: w.orgA, targetIds: [own.id] }),
    ]);
    const ofA = (await admin(t, "ListDeliveries", { organizationId: w.orgA })).result as Json[];
    expect(ofA.length).toBe(mine.length);
    expect(ofA.every((d) => d.targetId === own.id)).toBe(true);
    expect((await admin(t, "ListDeliveries", { organizationId: w.orgB })).result ?? []).toEqual([]);
    expect((await ok(t, "rest", w.ownerA.pat, "ListTargets", { organizationId: w.orgB })).result ?? []).toEqual([]);
    expect((await ok(t, "rest", w.ownerA.pat, "ListExecutions", { organizationId: w.orgB })).result ?? []).toEqual([]);
    expect((await ok(t, "rest", w.ownerA.pat, "ListDeliveries", { organizationId: w.orgB })).result ?? []).toEqual([]);
    await fails(t, "rest", t.pat, "ListDeliveries", { organizationId: "x".repeat(300) }, "invalid_argument", "Errors.Action.Delivery.Filter.TooLong");
    // Another organization's owner neither sees nor retries them; a user manager has no actions at all.
    expect((await ok(t, "rest", w.ownerB.pat, "ListDeliveries", {})).result ?? []).toEqual([]);
    await fails(t, "rest", w.ownerB.pat, "RetryDelivery", { id: mine[0]?.id }, "not_found", "Errors.Action.Delivery.NotFound");
    await fails(t, "rest", w.userManagerA.pat, "ListDeliveries", {}, "permission_denied");
    await fails(t, "rest", w.userManagerA.pat, "ListTargets", {}, "permission_denied");
    await ok(t, "rest", w.ownerA.pat, "SetExecution", { event: { group: "user" }, organizationId: w.orgA, targetIds: [] });
    await ok(t, "rest", w.ownerA.pat, "DeleteTarget", { id: own.id });
    await ok(t, "rest", w.ownerB.pat, "DeleteTarget", { id: other.id });
  }, 60_000);
});

describe("target kinds in functions", () => {
  const username = "events-kinds-machine";
  let secret: string;
  beforeAll(async () => {
    const { id } = await admin(t, "CreateUser", { organizationId: orgId, username, machine: { name: username, accessTokenType: "ACCESS_TOKEN_TYPE_JWT" } });
    ({ clientSecret: secret } = await admin(t, "AddSecret", { userId: id }));
  });
  const token = () =>
    fetch(`${t.url}/oauth/v2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${username}:${secret}`).toString("base64")}` },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "urn:svc:iam:org:project:id:svc:aud" }),
    });

  it("a webhook's answer is not read (a 2xx is success, anything else a failure); an async target is not waited for", async () => {
    const r = await receiver();
    r.status = 204;
    const hookTarget = await admin(t, "CreateTarget", { name: "kind-webhook", endpoint: r.url, kind: "TARGET_KIND_WEBHOOK", interruptOnError: true });
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [hookTarget.id] });
    expect((await token()).status).toBe(200);
    expect(r.arrivals.filter((a) => a.body.function === "preaccesstoken")).toHaveLength(1);
    r.status = 500;
    expect((await token()).status).toBe(503);

    // An async target that never answers: the token does not wait for it (its timeout is 30 s).
    const hang = createServer(() => {});
    await new Promise<void>((resolve) => hang.listen(0, "127.0.0.1", resolve));
    const hangUrl = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/`;
    const asyncTarget = await admin(t, "CreateTarget", {
      name: "kind-async",
      endpoint: hangUrl,
      kind: "TARGET_KIND_ASYNC",
      timeout: "30s",
      interruptOnError: true,
    });
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [asyncTarget.id] });
    const started = Date.now();
    expect((await token()).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect((await admin(t, "GetTarget", { id: asyncTarget.id })).target.kind).toBe("TARGET_KIND_ASYNC");
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [] });
    await admin(t, "DeleteTarget", { id: asyncTarget.id });
    await admin(t, "DeleteTarget", { id: hookTarget.id });
    hang.closeAllConnections();
    hang.close();
  }, 60_000);
});
