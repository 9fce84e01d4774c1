// Prometheus metrics at /metrics: the process's metrics, requests counted and timed by protocol, route and status
// (bounded labels: ids in paths never become labels), tokens issued by grant type, SCIM operations (bulk ones each),
// sign-in outcomes (session checks by factor, finished OIDC requests), the PostgreSQL pool and statement latency, the
// authentication caches' hits and misses, and the optional bearer token (SVC_METRICS_TOKEN) compared in constant time.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, machine, PASSWORD, project } from "../support/fixtures.js";
import { authRequestOf, codeFlow, discover, finish, loginClient, oidc, oidcApp, signIn, visit } from "../support/oidc.js";
import { admin, ok } from "../support/rpc.js";
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

  it("times the database statements on PostgreSQL", async () => {
    const text = await scrape();
    if (process.env.SVC_TEST_DATABASE_URL) {
      expect(sample(text, "svc_db_query_duration_seconds_count", { outcome: "ok" })).toBeGreaterThan(0);
      expect(sample(text, "svc_db_query_duration_seconds_bucket", { outcome: "ok", le: "+Inf" })).toBe(
        sample(text, "svc_db_query_duration_seconds_count", { outcome: "ok" }),
      );
    } else expect(text).not.toContain("svc_db_query_duration_seconds_count{");
  });

  it("counts SCIM operations, each operation of a bulk request too", async () => {
    const orgId = await defaultOrgId(t);
    const scim = (path: string, method: string, body?: unknown) =>
      fetch(`${t.url}/scim/v2/${orgId}${path}`, {
        method,
        headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/scim+json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const before = await scrape();
    const user = (name: string) => ({ schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"], userName: name, name: { givenName: "M", familyName: "S" } });
    const created = await scim("/Users", "POST", user(`metrics-scim-${Date.now()}`));
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { id: string }).id;
    expect((await scim(`/Users/${id}`, "GET")).status).toBe(200);
    expect((await scim("/Users/no-such-user", "GET")).status).toBe(404);
    const bulk = await scim("/Bulk", "POST", {
      schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
      Operations: [
        { method: "POST", path: "/Users", bulkId: "a", data: user(`metrics-bulk-${Date.now()}`) },
        { method: "DELETE", path: `/Users/${id}` },
        { method: "DELETE", path: "/Users/no-such-user" },
      ],
    });
    expect(bulk.status).toBe(200);
    await bulk.text();
    const after = await scrape();
    const grew = (labels: Record<string, string>) => sample(after, "svc_scim_operations_total", labels) - sample(before, "svc_scim_operations_total", labels);
    // One create directly and one in the bulk request.
    expect(grew({ resource: "Users", operation: "create", code: "201" })).toBe(2);
    expect(grew({ resource: "Users", operation: "get", code: "200" })).toBe(1);
    expect(grew({ resource: "Users", operation: "get", code: "404" })).toBe(1);
    expect(grew({ resource: "Users", operation: "delete", code: "204" })).toBe(1);
    expect(grew({ resource: "Users", operation: "delete", code: "404" })).toBe(1);
    expect(grew({ resource: "Bulk", operation: "bulk", code: "200" })).toBe(1);
    expect(after).not.toContain(id);
  });

  it("counts session checks by factor and outcome and the finished sign-ins, and the caches' hits and misses", async () => {
    const orgId = await defaultOrgId(t);
    const login = await loginClient(t, orgId, `metrics-login-${Date.now()}`);
    const name = `metrics-alice-${Date.now()}`;
    await createHuman(t, orgId, name);
    const app = await oidcApp(t, await project(t, orgId, `Metrics ${Date.now()}`), "metrics web");
    const config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
    const before = await scrape();

    // Two good sign-ins through the code flow, then a wrong password and an unknown user.
    await codeFlow(t, config, login, name);
    await codeFlow(t, config, login, name);
    await expect(signIn(t, login, name, `${PASSWORD}-wrong`)).rejects.toThrow();
    await expect(signIn(t, login, `nobody-${Date.now()}`)).rejects.toThrow();
    // An auth request the login UI answers with an error for the client.
    const refused = authRequestOf(await visit(t, oidc.buildAuthorizationUrl(config, { redirect_uri: "https://rp.example.com/cb", scope: "openid" })));
    await ok(t, "rest", login.pat, "CreateCallback", { authRequestId: refused, error: { error: "ACCESS_DENIED" } });
    // Another finish of a finished request is refused: not a second sign-in.
    const s = await signIn(t, login, name);
    const again = authRequestOf(await visit(t, oidc.buildAuthorizationUrl(config, { redirect_uri: "https://rp.example.com/cb", scope: "openid" })));
    await finish(t, login, again, s);
    await expect(finish(t, login, again, s)).rejects.toThrow();

    const after = await scrape();
    const grew = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(grew("svc_session_checks_total", { factor: "password", outcome: "success" })).toBe(3);
    expect(grew("svc_session_checks_total", { factor: "password", outcome: "invalid" })).toBe(1);
    expect(grew("svc_session_checks_total", { factor: "user", outcome: "invalid" })).toBe(1);
    expect(grew("svc_session_checks_total", { factor: "user", outcome: "success" })).toBe(4);
    expect(grew("svc_sign_ins_total", { protocol: "oidc", outcome: "success" })).toBe(3);
    expect(grew("svc_sign_ins_total", { protocol: "oidc", outcome: "error" })).toBe(1);
    expect(after).not.toContain(name);
    // The login client's token was looked up again and again: the token cache answered some of those lookups.
    expect(grew("svc_cache_requests_total", { cache: "tokens", result: "hit" })).toBeGreaterThan(0);
    expect(sample(after, "svc_cache_requests_total", { cache: "clients", result: "miss" })).toBeGreaterThan(0);
  });
});
