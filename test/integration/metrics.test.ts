// Prometheus metrics at /metrics: the process's metrics, requests counted and timed by protocol, route and status
// (bounded labels: ids in paths never become labels), tokens issued by grant type, the PostgreSQL pool, and the
// optional bearer token (SVC_METRICS_TOKEN) compared in constant time.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { defaultOrgId, machine } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
const TOKEN = "metrics-scrape-token-0123456789";

beforeAll(async () => {
  t = await startTestServer({ SVC_METRICS_TOKEN: TOKEN });
}, 60_000);
afterAll(() => t?.stop());

const scrape = async () => {
  const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
};

/** The value of one sample line (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf("}"));
    if (wanted.every((w) => inside.split(",").includes(w))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

describe("/metrics", () => {
  it("answers only the configured bearer token", async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(405);
    expect(await scrape()).toContain("svc_process_cpu_seconds_total");
  });

  it("counts and times requests by protocol, route and status, with ids kept out of the labels", async () => {
    const before = await scrape();
    const orgId = await defaultOrgId(t);
    await admin(t, "GetOrganizationByID", { organizationId: orgId });
    await fetch(`${t.url}/svc.org.v2.OrganizationService/GetOrganizationByID`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${t.pat}` },
      body: JSON.stringify({ organizationId: orgId }),
    });
    await fetch(`${t.url}/v2/users/${orgId}-nobody`, { headers: { authorization: `Bearer ${t.pat}` } });
    await fetch(`${t.url}/svc.nothing.v1.Nope/Call`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    const after = await scrape();
    const rpc = { protocol: "connect", route: "/svc.org.v2.OrganizationService/GetOrganizationByID", code: "200" };
    expect(sample(after, "svc_requests_total", rpc) - sample(before, "svc_requests_total", rpc)).toBe(1);
    expect(sample(after, "svc_requests_total", { protocol: "rest", route: "/v2/users", code: "404" })).toBeGreaterThanOrEqual(1);
    expect(sample(after, "svc_requests_total", { protocol: "connect", route: "unknown" })).toBeGreaterThanOrEqual(1);
    expect(after).not.toContain(`${orgId}-nobody`);
    expect(sample(after, "svc_request_duration_seconds_count", { protocol: "connect", route: rpc.route })).toBeGreaterThanOrEqual(1);
  });

  it("counts the tokens issued by grant type", async () => {
    const orgId = await defaultOrgId(t);
    const username = `metrics-bot-${Date.now()}`;
    const m = await machine(t, orgId, username);
    const secret = (await admin(t, "AddSecret", { userId: m.userId })).clientSecret as string;
    const before = sample(await scrape(), "svc_oauth_tokens_issued_total", { grant_type: "client_credentials" });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${t.url}/oauth/v2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: username, client_secret: secret, scope: "openid" }),
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    // A refused request is not an issued token.
    await (
      await fetch(`${t.url}/oauth/v2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: username, client_secret: "wrong" }),
      })
    ).text();
    const after = sample(await scrape(), "svc_oauth_tokens_issued_total", { grant_type: "client_credentials" });
    expect(after - before).toBe(2);
  });

  it("shows the database pool on PostgreSQL", async () => {
    const text = await scrape();
    if (process.env.SVC_TEST_DATABASE_URL) expect(sample(text, "svc_db_pool_connections", { state: "total" })).toBeGreaterThan(0);
    else expect(text).not.toContain("svc_db_pool_connections{");
  });
});
