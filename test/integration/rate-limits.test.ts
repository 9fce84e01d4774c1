// Issue 11, finding 8: brute force. Failed client authentications (token,
// introspection, revocation), bearer tokens (v2 API, SCIM) and password
// checks are counted per client id or user and per source address; past the
// limit the answer is 429 with Retry-After, the same whether the credential
// would have been right, until the window ends. Failed client authentications
// are audited. On PostgreSQL replicas share the counts.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { PG_URL } from "../support/db.js";
import { createHuman, PASSWORD } from "../support/fixtures.js";
import { type Replicas, rest, startReplicas, startTestServer, type TestServer } from "../support/server.js";
import { addMachineSecret, createMachine, defaultOrgId, humanToken, json } from "../support/users.js";

const LIMITS = { SVC_RATE_LIMIT_CLIENT_FAILURES: "5", SVC_RATE_LIMIT_ADDRESS_FAILURES: "12", SVC_RATE_LIMIT_WINDOW_SECONDS: "3" };

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
const token = (url: string, id: string, secret: string) =>
  fetch(`${url}/oauth/v2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...basic(id, secret) },
    body: "grant_type=client_credentials",
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("client authentication at the token endpoint", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(LIMITS);
  });
  afterAll(() => t.stop());

  it("past 5 wrong secrets: 429 with Retry-After, also for the right secret, until the window ends; audited", async () => {
    const orgId = await defaultOrgId(t);
    const id = await createMachine(t, orgId, "rl-victim");
    const secret = await addMachineSecret(t, id);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await token(t.url, id, `wrong-${i}`)).status);
    // Five failures are allowed, the sixth passes the limit (still answered as the failure it is), then 429.
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429, 429]);
    const limited = await token(t.url, id, secret);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await json(limited)).toMatchObject({ error: "slow_down" });
    // Introspection with the same client id is refused too.
    const intro = await fetch(`${t.url}/oauth/v2/introspect`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...basic(id, secret) },
      body: "token=x",
    });
    expect(intro.status).toBe(429);
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateType: "oauth.client", aggregateId: id }, orderBy: { createdAt: "asc" } });
    expect(events.map((e) => e.type)).toEqual([...Array(5).fill("oauth.client.authentication_failed"), "oauth.client.blocked"]);
    expect(JSON.stringify(events)).not.toContain("wrong-");
    // svc's own action on an anonymous request: the system principal is the editor, never nobody.
    expect(new Set(events.map((e) => e.editorUserId))).toEqual(new Set(["svc-system"]));
    await sleep(3_200);
    expect((await token(t.url, id, secret)).status).toBe(200);
  });

  it("a good client keeps working while another client id is attacked", async () => {
    const orgId = await defaultOrgId(t);
    const good = await createMachine(t, orgId, "rl-good");
    const goodSecret = await addMachineSecret(t, good);
    for (let i = 0; i < 7; i++) await token(t.url, "rl-someone-else", "x");
    expect((await token(t.url, "rl-someone-else", "x")).status).toBe(429);
    expect((await token(t.url, good, goodSecret)).status).toBe(200);
    await sleep(3_200);
  });

  it("many client ids from one address: the per-address limit stops them all", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await token(t.url, `rl-spray-${i}`, "x")).status);
    expect(statuses.slice(0, 12).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
    await sleep(3_200);
  });
});

describe("bearer tokens and passwords", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(LIMITS);
  });
  afterAll(() => t.stop());

  it("SCIM and the v2 API: invalid bearer tokens from one address end in 429 (SCIM error body), a valid one too", async () => {
    const orgId = await defaultOrgId(t);
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) {
      const res = await fetch(`${t.url}/scim/v2/${orgId}/Users`, { headers: { authorization: `Bearer guess-${i}` } });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, 12).every((s) => s === 401)).toBe(true);
    const scim = await fetch(`${t.url}/scim/v2/${orgId}/Users`, { headers: { authorization: `Bearer ${t.pat}` } });
    expect(scim.status).toBe(429);
    expect(scim.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await json(scim)).toMatchObject({ status: "429" });
    const api = await rest(t.url, t.pat, "POST", "/v2/users", {});
    expect(api.status).toBe(429);
    await sleep(3_200);
    expect((await rest(t.url, t.pat, "POST", "/v2/users", {})).status).toBe(200);
  });

  it("SetPassword with wrong current passwords: 429 past the limit, before the lockout policy", async () => {
    const orgId = await defaultOrgId(t);
    const id = await createHuman(t, orgId, "rl-human");
    const own = await humanToken(t, id);
    const attempt = (current: string) =>
      rest(t.url, own, "POST", `/v2/users/${id}/password`, { newPassword: { password: "Another-Passw0rd!" }, currentPassword: current });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await attempt(`Wrong-${i}-Passw0rd!`)).status);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 400, 429]);
    // The right password is not even checked while limited.
    expect((await attempt(PASSWORD)).status).toBe(429);
    await sleep(3_200);
    expect((await attempt(PASSWORD)).status).toBe(200);
  });
});

(PG_URL ? describe : describe.skip)("replicas share the counts (PostgreSQL)", () => {
  let r: Replicas;
  beforeAll(async () => {
    r = await startReplicas(2, LIMITS);
  }, 90_000);
  afterAll(() => r?.stop());

  it("failures on two replicas add up to one limit", async () => {
    const [a, b] = r.servers as [(typeof r.servers)[0], (typeof r.servers)[0]];
    for (let i = 0; i < 3; i++) expect((await token(a.url, "rl-shared", "x")).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await token(b.url, "rl-shared", "x")).status).toBe(401);
    // Six failures in all: replica b counted the sixth and refuses the seventh; replica a learns at its next failure.
    expect((await token(b.url, "rl-shared", "x")).status).toBe(429);
    expect((await token(a.url, "rl-shared", "x")).status).toBe(401);
    expect((await token(a.url, "rl-shared", "x")).status).toBe(429);
  });
});
